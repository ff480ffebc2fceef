// A fixed pool of worker threads for the cpu target. The calling thread takes part in every
// parallel loop, so a pool of N threads starts N-1 workers. Workers spin briefly before sleeping:
// a model runs hundreds of short parallel loops back to back, and a sleep/wake per loop would cost
// more than many of the loops themselves.
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
  void workerLoop(int index);
  void runTasks();

  std::vector<std::thread> workers_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::atomic<uint64_t> generation_{0};
  std::atomic<int64_t> nextTask_{0};
  std::atomic<int> busyWorkers_{0};
  int64_t tasks_ = 0;
  const TaskFn *fn_ = nullptr;
  bool stopping_ = false;
};

}  // namespace tessel
