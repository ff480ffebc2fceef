// The thread pool: every task runs exactly once, loops back to back reuse the workers, and a loop
// started inside a task runs inline instead of deadlocking.
#include <gtest/gtest.h>

#include <atomic>
#include <vector>

#include "support/thread_pool.h"

namespace tessel {
namespace {

TEST(ThreadPool, RunsEveryTaskOnce) {
  for (int threads : {1, 2, 4}) {
    ThreadPool pool(threads);
    EXPECT_EQ(pool.size(), threads);
    std::vector<std::atomic<int>> hits(1000);
    pool.parallelFor(static_cast<int64_t>(hits.size()), [&](int64_t task) { hits[task].fetch_add(1); });
    for (size_t i = 0; i < hits.size(); ++i) ASSERT_EQ(hits[i].load(), 1) << "task " << i << " threads " << threads;
  }
}

TEST(ThreadPool, ManyShortLoopsBackToBack) {
  ThreadPool pool(3);
  std::atomic<int64_t> sum{0};
  for (int loop = 0; loop < 2000; ++loop) pool.parallelFor(loop % 5, [&](int64_t task) { sum += task + 1; });
  // Loops of 0..4 tasks: each block of five loops adds 0 + 1 + 3 + 6 + 10.
  EXPECT_EQ(sum.load(), 400 * 20);
}

TEST(ThreadPool, NestedLoopsRunInline) {
  ThreadPool pool(2);
  std::atomic<int> inner{0};
  pool.parallelFor(4, [&](int64_t) { pool.parallelFor(3, [&](int64_t) { inner++; }); });
  EXPECT_EQ(inner.load(), 12);
}

TEST(ThreadPool, ZeroMeansEveryHardwareThread) {
  ThreadPool pool(0);
  EXPECT_EQ(pool.size(), ThreadPool::hardwareThreads());
}

}  // namespace
}  // namespace tessel
