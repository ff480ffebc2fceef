// Running a loop of tasks over a ThreadPool without allocating, for the convolution and pooling
// drivers. ThreadPool::parallelFor takes a std::function, which stores a callable of more than two
// pointers on the heap; wrapping the caller's lambda in one that holds a single reference keeps
// every run() allocation-free however much the caller's lambda captures.
#pragma once

#include <cstdint>

#include "support/thread_pool.h"

namespace tessel::cpu {

/// Calls fn(task) for every task in [0, tasks): over `pool` when there is one and more than one
/// task, else in order on the calling thread.
template <class Fn>
void runTasks(ThreadPool *pool, int64_t tasks, const Fn &fn) {
  if (pool == nullptr || pool->size() <= 1 || tasks <= 1) {
    for (int64_t task = 0; task < tasks; ++task) fn(task);
    return;
  }
  pool->parallelFor(tasks, [&fn](int64_t task) { fn(task); });
}

}  // namespace tessel::cpu
