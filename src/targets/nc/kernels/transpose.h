// The transpose family: dst = src^T on the tensor engine, one PE transpose per [128, 128] block, the
// blocks of a group side by side in one PSUM bank so that one copy per bank moves them to SBUF.
// emitTransposeGroup is what the model compiler runs wherever a layout turns (rows on partitions to
// features on partitions when a segment input loads, and back when an output stores) and what the
// library's "transpose" kernel ([R, C] -> [C, R] over HBM, in groups of one bank of rows) runs.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "targets/nc/kernels/kernel_def.h"
#include "targets/nc/kernels/tiling.h"
#include "targets/nc/tile/dsl.h"

namespace tessel::nc::kernels {

/// The rows of src one emitTransposeGroup call takes at most: one PSUM bank of `dtype` per partition
/// (bf16: 1024, f32: 512 on both profiles), a whole number of PE blocks.
int64_t transposeGroupRows(const MachineProfile &profile, DType dtype);

/// dst = src^T for one group of src's rows. `rowTiles` hold consecutive rows of src (up to one PE
/// block each, on partitions; `cols` columns on the free dim), transposeGroupRows of them at most in
/// all. `dstBlock(columns)` is the dst view of src columns `columns` (on partitions, at most one PE
/// block) by the group's rows (free dim). Per column block: one transpose per row tile into one PSUM
/// tile, one copy to dst (the engine the scheduler finds free).
void emitTransposeGroup(tile::KernelBuilder &b, const std::string &name, std::span<const tile::TileView> rowTiles,
                        int64_t cols, const std::function<tile::TileView(const Span &columns)> &dstBlock);

/// "transpose" (bf16 or f32).
std::vector<KernelDef> transposeKernels();

}  // namespace tessel::nc::kernels
