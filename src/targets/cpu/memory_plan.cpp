// Greedy-by-size offset assignment.
#include "targets/cpu/memory_plan.h"

#include <algorithm>
#include <numeric>

namespace tessel::cpu {

MemoryPlan planMemory(const std::vector<BufferLifetime> &buffers) {
  MemoryPlan plan;
  plan.offsets.assign(buffers.size(), 0);
  std::vector<size_t> order(buffers.size());
  std::iota(order.begin(), order.end(), 0);
  // Largest first; ties by earlier start, then index, so the plan does not depend on sort internals.
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    if (buffers[a].bytes != buffers[b].bytes) return buffers[a].bytes > buffers[b].bytes;
    if (buffers[a].first != buffers[b].first) return buffers[a].first < buffers[b].first;
    return a < b;
  });
  struct Placed {
    size_t offset;
    size_t end;
    size_t index;
  };
  std::vector<Placed> placed;  // Kept sorted by offset.
  for (size_t index : order) {
    const BufferLifetime &buffer = buffers[index];
    size_t bytes = (buffer.bytes + kArenaAlignment - 1) / kArenaAlignment * kArenaAlignment;
    if (bytes == 0) bytes = kArenaAlignment;
    size_t candidate = 0;
    for (const Placed &other : placed) {
      const BufferLifetime &o = buffers[other.index];
      bool overlapsInTime = buffer.first <= o.last && o.first <= buffer.last;
      if (!overlapsInTime) continue;
      if (candidate + bytes <= other.offset) break;  // Fits in the gap before this one.
      candidate = std::max(candidate, other.end);
    }
    plan.offsets[index] = candidate;
    Placed entry{candidate, candidate + bytes, index};
    placed.insert(std::upper_bound(placed.begin(), placed.end(), entry,
                                   [](const Placed &a, const Placed &b) { return a.offset < b.offset; }),
                  entry);
    plan.arenaBytes = std::max(plan.arenaBytes, candidate + bytes);
  }
  return plan;
}

}  // namespace tessel::cpu
