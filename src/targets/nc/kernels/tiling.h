// Tiling helpers shared by the kernel families: splitting a dimension into tiles with a ragged last
// one, and the column-tile width that gives DMA transfers large contiguous chunks per partition.
// Machine numbers come from the MachineProfile; the only constant here is the per-partition chunk
// a DMA should move to run near its sustained rate (accelerator-model.md section 5.5).
#pragma once

#include <algorithm>
#include <cstdint>
#include <optional>
#include <vector>

#include "targets/nc/isa/instruction.h"
#include "targets/nc/machine/profile.h"
#include "targets/nc/tile/dsl.h"

namespace tessel::nc::kernels {

/// Contiguous bytes per partition at which a DMA chunk runs near peak (section 5.5: ">= 2 KiB near
/// peak, >= 4 KiB saturates"); kernels aim for twice that so that fixed costs amortise.
inline constexpr int64_t kDmaChunkTargetBytes = 8192;

/// One tile of a tiled dimension: elements [start, start + count).
struct Span {
  int64_t start = 0;
  int64_t count = 0;
};

/// Splits [0, total) into tiles of `step` elements; the last one holds the remainder.
inline std::vector<Span> splitRange(int64_t total, int64_t step) {
  std::vector<Span> spans;
  for (int64_t start = 0; start < total; start += step) spans.push_back({start, std::min(step, total - start)});
  return spans;
}

/// Tile `index` of splitRange(total, step), without making the others.
inline Span tileOf(int64_t index, int64_t step, int64_t total) {
  const int64_t start = index * step;
  return {start, std::min(step, total - start)};
}

/// ceil(a / b) for positive b.
inline int64_t ceilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

/// Columns per tile for a streaming kernel over `dtype` elements: one DMA moves about
/// kDmaChunkTargetBytes per partition, capped by the tensor's width.
inline int64_t streamingColumnTile(DType dtype, int64_t columns) {
  return std::max<int64_t>(1, std::min(columns, kDmaChunkTargetBytes / dtypeSizeBytes(dtype)));
}

/// Rows per row tile: the machine's partitions, or fewer for a short tensor.
inline int64_t rowTile(const MachineProfile &profile, int64_t rows) { return std::min(profile.partitions, rows); }

/// ActivationArgs from its parts (aggregate initialisation with designated fields would leave the
/// others unnamed, which -Wextra reports).
inline tile::ActivationArgs activationArgs(tile::ScalarOperand scale, std::optional<tile::ScalarOperand> bias = {},
                                           std::optional<tile::TileView> accum = {}) {
  tile::ActivationArgs args;
  args.scale = std::move(scale);
  args.bias = std::move(bias);
  args.accum = std::move(accum);
  return args;
}

}  // namespace tessel::nc::kernels
