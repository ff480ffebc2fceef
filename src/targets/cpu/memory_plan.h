// The static memory plan of the cpu target: every activation buffer gets an offset in one arena so
// that buffers alive at the same time never overlap. Greedy by size: the largest buffers are placed
// first, each at the lowest offset that fits between the buffers already placed whose lifetimes
// overlap its own — close to optimal on inference graphs, and deterministic.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace tessel::cpu {

/// One buffer: its size and the first and last step (inclusive) at which it holds live data.
struct BufferLifetime {
  size_t bytes = 0;
  int first = 0;
  int last = 0;
};

struct MemoryPlan {
  std::vector<size_t> offsets;  // Per buffer, a multiple of kArenaAlignment.
  size_t arenaBytes = 0;
};

inline constexpr size_t kArenaAlignment = 64;

/// Places `buffers`; two buffers whose [first, last] ranges intersect never share a byte.
MemoryPlan planMemory(const std::vector<BufferLifetime> &buffers);

}  // namespace tessel::cpu
