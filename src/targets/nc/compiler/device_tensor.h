// How an activation lives on the accelerator between the ops of a model: in SBUF, split over
// partition blocks of at most 128 partitions, never in HBM unless the memory plan spills it.
//
// A DeviceTensor maps every element of its logical shape to a (global partition, free offset) pair:
// each logical axis has a partition stride and a free stride (one of them 0). Global partition g
// lives in block g / 128 at partition g % 128; every block holds `freeSize` elements per partition.
// The standard form of a tensor puts one axis on partitions (stride 1) and the others row-major over
// the free dim: [N, C, H, W] with C on partitions for convolutions, [..., T, C] with the features C on
// partitions for matmuls. Reshape and Transpose change only the strides (a view), so the head split
// of attention costs nothing; an op that needs another layout asks for a relayout (layout.h).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "targets/nc/tile/dsl.h"

namespace tessel::nc::compiler {

/// Where one logical axis lives: consecutive indices are `partitionStride` partitions apart, or
/// `freeStride` elements apart in the free dim.
struct AxisPlacement {
  int64_t partitionStride = 0;
  int64_t freeStride = 0;
};

/// Rows of a [1, C, H, W] tensor split into `count` bands stacked on the partitions (band b from
/// partition b * stride), so that ops over few channels at a large image fill the array:
/// MobileNetV2's 32-channel 112x112 layers use 4 x 32 partitions instead of 32 and take a quarter of
/// the instructions' free size. Band b owns rows [b * rows, (b + 1) * rows); its tile row j holds row
/// b * rows + j - top, for j in [0, tileRows), so a band may also hold halo rows of its neighbours (a
/// padded convolution's input; tile rows outside the image are zero).
struct RowBands {
  int64_t count = 0, stride = 0, rows = 0, top = 0, tileRows = 0;
  bool operator==(const RowBands &) const = default;
};

struct DeviceTensor {
  std::vector<int64_t> shape;          // Logical shape.
  DType dtype = DType::F32;            // Storage dtype in SBUF.
  std::vector<AxisPlacement> axes;     // Parallel to shape.
  int64_t partitionBase = 0;           // Global partition of element 0.
  int64_t freeBase = 0;                // Free offset of element 0.
  int64_t freeSize = 0;                // Elements per partition of every block.
  std::vector<tile::TileView> blocks;  // Block b: global partitions [128 b, 128 b + blocks[b].partitions()).
  /// With --cores N, a tensor split over the cores (a column-parallel matmul's output that only a
  /// row-parallel matmul reads): when > 1, core c holds the blocks b with b % shardedCores == c.
  int shardedCores = 1;
  /// When bands.count > 0 the rows are banded (RowBands): `axes`, `partitionBase` and `freeBase` then
  /// place band 0's own rows, and band b is the same at partition + b * stride, row + b * rows
  /// (bandPart). Such a tensor is neither standard nor any other affine layout.
  RowBands bands;

  int64_t rank() const { return static_cast<int64_t>(shape.size()); }
  int64_t numel() const;
  /// Global partitions the storage spans (sum of the blocks' partitions).
  int64_t partitionExtent() const;

  /// True when axis `axis` is on partitions with stride 1 from partition 0 and the other axes are
  /// row-major over the free dim from offset 0 (the standard form).
  bool isStandard(int64_t axis) const;
  /// The axis on partitions with stride 1, or -1.
  int64_t partitionAxis() const;

  /// The [count, freeSize] view of global partitions [start, start + count); they must lie in one
  /// block.
  tile::TileView partitions(int64_t start, int64_t count) const;
};

/// Band b's own rows of a banded tensor as an affine tensor of shape [1, C, rows, W].
DeviceTensor bandPart(const DeviceTensor &tensor, int64_t band);

/// Normalises a possibly negative axis.
inline int64_t normalizeAxis(int64_t axis, int64_t rank) { return axis < 0 ? axis + rank : axis; }

/// Allocates a tensor in standard form with `partitionAxis` on partitions: ceil(shape[axis] / P)
/// SBUF tiles of [min(P, rest), product of the other dims]; a tensor of one element per partition
/// and whole blocks, in one tile of [P, blocks] (allocateStandardInOneTile).
DeviceTensor allocateStandard(tile::KernelBuilder &builder, const std::string &name, const std::vector<int64_t> &shape,
                              DType dtype, int64_t partitionAxis);
/// The same, with all blocks side by side in one [P, blocks * freeSize] tile (`storage`), so that one
/// instruction (a collective) can cover the whole tensor.
DeviceTensor allocateStandardInOneTile(tile::KernelBuilder &builder, const std::string &name,
                                       const std::vector<int64_t> &shape, DType dtype, int64_t partitionAxis,
                                       tile::TileView *storage);

/// `columns` ([P, 1] each) as one [P, columns] view, when they lie side by side in one tile with all
/// P partitions (the blocks of a one-row tensor from allocateStandardInOneTile, a run of channel
/// vectors): one instruction then covers them all.
std::optional<tile::TileView> sideBySide(const std::vector<tile::TileView> &columns, int64_t P);

/// The same storage seen with a new shape (Reshape, Flatten, Squeeze, Unsqueeze): possible when every
/// group of old axes merged into one new axis, or one old axis split into new ones, keeps a uniform
/// stride. nullopt when it does not (the caller relayouts first).
std::optional<DeviceTensor> reshapeView(const DeviceTensor &tensor, const std::vector<int64_t> &shape);
/// The same storage with its axes permuted (ONNX Transpose `perm`).
DeviceTensor transposeView(const DeviceTensor &tensor, const std::vector<int64_t> &perm);

/// Describes the placement for messages and `--emit=lowering`: "f32[1,128,768] p(2) f(1:768)".
std::string describe(const DeviceTensor &tensor);

}  // namespace tessel::nc::compiler
