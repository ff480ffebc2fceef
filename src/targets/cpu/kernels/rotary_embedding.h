// The rotary position embedding (tessel RotaryEmbedding, docs/cpu.md) over an f32 tensor viewed as
// rows of `depth` elements: y = x * cos + rotate_half(x) * sin, rotate_half(x) = [-x2, x1] for the
// halves x1, x2 of the row. Each row reads its own cos and sin rows (the tables broadcast over the
// leading dims: heads, usually). A few multiply-adds per element: the loop is bound by memory and
// compiled once, for the baseline ISA.
#pragma once

#include <cstdint>
#include <vector>

namespace tessel::cpu {

/// Where the cos and sin rows of each row of x are: x's leading dims (all but the last) and, per
/// dim, the row stride of each table (0 where it broadcasts).
struct RotaryTables {
  std::vector<int64_t> leadingSizes;
  std::vector<int64_t> cosRowStrides;
  std::vector<int64_t> sinRowStrides;
};

/// Embeds every row of x (depth even) into y, which may equal x.
void rotaryEmbedding(const RotaryTables &tables, int64_t depth, const float *x, const float *cos, const float *sin,
                     float *y);

}  // namespace tessel::cpu
