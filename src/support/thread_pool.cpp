// ThreadPool: one loop at a time, published as a claim word that workers advance with
// compare-and-swap: bits 44-63 are the loop's generation, 22-43 its task count, 0-21 the next task.
#include "support/thread_pool.h"

#include "support/diagnostic.h"

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

// How long a worker spins on the claim word before it sleeps (pause instructions).
constexpr int kSpinIterations = 20000;

constexpr int kIndexBits = 22;
constexpr uint64_t kIndexMask = (uint64_t{1} << kIndexBits) - 1;
constexpr int64_t kMaxTasksPerClaim = int64_t(kIndexMask);

uint64_t generationOf(uint64_t claim) { return claim >> (2 * kIndexBits); }
int64_t taskCountOf(uint64_t claim) { return int64_t((claim >> kIndexBits) & kIndexMask); }
int64_t nextTaskOf(uint64_t claim) { return int64_t(claim & kIndexMask); }

uint64_t makeClaim(uint64_t generation, int64_t tasks) {
  return (generation << (2 * kIndexBits)) | (uint64_t(tasks) << kIndexBits);
}

}  // namespace

int ThreadPool::hardwareThreads() {
  unsigned n = std::thread::hardware_concurrency();
  return n == 0 ? 1 : static_cast<int>(n);
}

ThreadPool::ThreadPool(int threads) {
  if (threads <= 0) threads = hardwareThreads();
  for (int i = 1; i < threads; ++i) workers_.emplace_back([this] { workerLoop(); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard lock(mutex_);
    stopping_.store(true, std::memory_order_seq_cst);
    claim_.store(makeClaim(generationOf(claim_.load()) + 1, 0), std::memory_order_seq_cst);
  }
  wake_.notify_all();
  for (auto &worker : workers_) worker.join();
}

void ThreadPool::runTasks(uint64_t generation) {
  insideTask = true;
  uint64_t claim = claim_.load(std::memory_order_acquire);
  while (generationOf(claim) == generation && nextTaskOf(claim) < taskCountOf(claim)) {
    if (!claim_.compare_exchange_weak(claim, claim + 1, std::memory_order_acq_rel, std::memory_order_acquire)) {
      continue;  // `claim` now holds the current word.
    }
    // The loop cannot finish (and fn_ change) before this task is counted done.
    (*fn_)(nextTaskOf(claim));
    done_.fetch_add(1, std::memory_order_acq_rel);
    claim = claim_.load(std::memory_order_acquire);
  }
  insideTask = false;
}

void ThreadPool::workerLoop() {
  // Generation 0 is the pool's start: a worker that starts late still sees every later loop (and
  // the destructor's) as new.
  uint64_t seen = 0;
  for (;;) {
    int spins = 0;
    while (generationOf(claim_.load(std::memory_order_acquire)) == seen && spins < kSpinIterations) {
      cpuRelax();
      ++spins;
    }
    if (generationOf(claim_.load(std::memory_order_seq_cst)) == seen) {
      std::unique_lock lock(mutex_);
      sleepers_.fetch_add(1, std::memory_order_seq_cst);
      wake_.wait(lock, [&] { return generationOf(claim_.load(std::memory_order_seq_cst)) != seen; });
      sleepers_.fetch_sub(1, std::memory_order_relaxed);
    }
    if (stopping_.load(std::memory_order_acquire)) return;
    seen = generationOf(claim_.load(std::memory_order_acquire));
    runTasks(seen);
  }
}

void ThreadPool::parallelFor(int64_t tasks, TaskFn fn) {
  if (tasks <= 0) return;
  if (workers_.empty() || tasks == 1 || insideTask) {
    for (int64_t t = 0; t < tasks; ++t) fn(t);
    return;
  }
  TESSEL_CHECK(tasks <= kMaxTasksPerClaim, "parallelFor of {} tasks; at most {}", tasks, kMaxTasksPerClaim);
  // Only the caller starts loops, and the previous one is finished: no task of it is running.
  fn_ = &fn;
  done_.store(0, std::memory_order_relaxed);
  const uint64_t generation = generationOf(claim_.load(std::memory_order_relaxed)) + 1;
  claim_.store(makeClaim(generation, tasks), std::memory_order_seq_cst);
  if (sleepers_.load(std::memory_order_seq_cst) > 0) {
    // Taking the mutex orders this wake-up after a sleeper's check of the claim word.
    { std::lock_guard lock(mutex_); }
    wake_.notify_all();
  }
  runTasks(generation);
  while (done_.load(std::memory_order_acquire) != tasks) cpuRelax();
}

}  // namespace tessel
