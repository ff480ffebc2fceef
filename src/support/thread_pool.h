// A fixed pool of worker threads for the cpu target. The calling thread takes part in every
// parallel loop, so a pool of N threads starts N-1 workers. Workers spin briefly before sleeping:
// a model runs hundreds of short parallel loops back to back, and a sleep/wake per loop would cost
// more than many of the loops themselves. A loop waits only for the tasks that were claimed, never
// for a worker to show up: on a busy machine a descheduled worker would otherwise stall every loop
// for a time slice, while the caller can run all the tasks itself.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <type_traits>
#include <mutex>
#include <thread>
#include <vector>

namespace tessel {

/// A non-owning reference to a callable taking a task index. Unlike std::function it never
/// allocates, which keeps a planned run allocation-free; it must not outlive the callable (a
/// lambda passed straight to parallelFor lives until the loop returns).
class TaskFn {
 public:
  template <class F>
    requires(!std::is_same_v<std::decay_t<F>, TaskFn>)
  TaskFn(F &&fn)  // NOLINT: implicit, so any lambda converts.
      : object_(const_cast<void *>(static_cast<const void *>(std::addressof(fn)))),
        call_([](void *object, int64_t task) { (*static_cast<std::remove_reference_t<F> *>(object))(task); }) {}
  void operator()(int64_t task) const { call_(object_, task); }

 private:
  void *object_;
  void (*call_)(void *, int64_t);
};

class ThreadPool {
 public:
  /// A pool of `threads` threads in all (the caller plus threads-1 workers); threads <= 0 means
  /// one per hardware thread.
  explicit ThreadPool(int threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool &) = delete;
  ThreadPool &operator=(const ThreadPool &) = delete;

  /// Threads in the pool, counting the caller.
  int size() const { return static_cast<int>(workers_.size()) + 1; }

  /// Runs fn(task) for every task in [0, tasks), spread over the pool; tasks are claimed one at a
  /// time, so uneven tasks balance. Returns when all are done. Called from inside a task, it runs
  /// the loop on the calling thread alone (no nested parallelism).
  void parallelFor(int64_t tasks, TaskFn fn);

  /// Hardware threads of this machine (at least 1).
  static int hardwareThreads();

 private:
  void workerLoop();
  /// Claims and runs tasks of the loop `generation` until none is left or a newer loop started.
  void runTasks(uint64_t generation);

  std::vector<std::thread> workers_;
  std::mutex mutex_;
  std::condition_variable wake_;
  // The current loop as one word (ThreadPool.cpp: generation, task count, next task), so a claim
  // made for a finished loop fails instead of taking a task of the next one.
  std::atomic<uint64_t> claim_{0};
  std::atomic<int64_t> done_{0};  // Tasks of the current loop finished.
  std::atomic<int> sleepers_{0};  // Workers waiting on wake_.
  std::atomic<bool> stopping_{false};
  const TaskFn *fn_ = nullptr;   // The current loop's body; valid while any of its tasks runs.
};

}  // namespace tessel
