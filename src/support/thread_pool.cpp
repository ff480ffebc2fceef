// ThreadPool: one job at a time, published by bumping a generation counter.
#include "support/thread_pool.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace tessel {
namespace {

thread_local bool insideTask = false;

void cpuRelax() {
#if defined(__x86_64__)
  _mm_pause();
#endif
}

// How long a worker spins on the generation counter before it sleeps (pause instructions).
constexpr int kSpinIterations = 20000;

}  // namespace

int ThreadPool::hardwareThreads() {
  unsigned n = std::thread::hardware_concurrency();
  return n == 0 ? 1 : static_cast<int>(n);
}

ThreadPool::ThreadPool(int threads) {
  if (threads <= 0) threads = hardwareThreads();
  for (int i = 1; i < threads; ++i) workers_.emplace_back([this, i] { workerLoop(i); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
    generation_.fetch_add(1, std::memory_order_release);
  }
  wake_.notify_all();
  for (auto &worker : workers_) worker.join();
}

void ThreadPool::runTasks() {
  insideTask = true;
  for (;;) {
    int64_t task = nextTask_.fetch_add(1, std::memory_order_relaxed);
    if (task >= tasks_) break;
    (*fn_)(task);
  }
  insideTask = false;
}

void ThreadPool::workerLoop(int) {
  uint64_t seen = 0;
  for (;;) {
    int spins = 0;
    while (generation_.load(std::memory_order_acquire) == seen && spins < kSpinIterations) {
      cpuRelax();
      ++spins;
    }
    if (generation_.load(std::memory_order_acquire) == seen) {
      std::unique_lock lock(mutex_);
      wake_.wait(lock, [&] { return generation_.load(std::memory_order_acquire) != seen; });
    }
    seen = generation_.load(std::memory_order_acquire);
    {
      std::lock_guard lock(mutex_);
      if (stopping_) return;
    }
    runTasks();
    busyWorkers_.fetch_sub(1, std::memory_order_acq_rel);
  }
}

void ThreadPool::parallelFor(int64_t tasks, TaskFn fn) {
  if (tasks <= 0) return;
  if (workers_.empty() || tasks == 1 || insideTask) {
    for (int64_t t = 0; t < tasks; ++t) fn(t);
    return;
  }
  {
    std::lock_guard lock(mutex_);
    fn_ = &fn;
    tasks_ = tasks;
    nextTask_.store(0, std::memory_order_relaxed);
    busyWorkers_.store(static_cast<int>(workers_.size()), std::memory_order_relaxed);
    generation_.fetch_add(1, std::memory_order_release);
  }
  wake_.notify_all();
  runTasks();
  // Every worker checks in once per generation, even one that found no task left.
  while (busyWorkers_.load(std::memory_order_acquire) != 0) cpuRelax();
}

}  // namespace tessel
