// The model compiler's side of the PE families' epilogue (kernels/matmul/epilogue.h, one type for the kernels and the
// lowering): reading a fused node's activation, and applying it on the PSUM eviction with the bias per output partition
// (the output channel or feature is on partitions in the standard form, so ACT's per-partition bias operand takes it).
#pragma once

#include <optional>
#include <string>

#include "ir/graph.h"
#include "targets/nc/compiler/lowering.h"
#include "targets/nc/kernels/matmul/epilogue.h"

namespace tessel::nc::compiler {

using kernels::Epilogue;

/// A fused node's `activation` and `activation_params`.
Epilogue epilogueOf(const Node &node);
/// Why the accelerator cannot apply `node`'s activation; empty when it can.
std::string epilogueUnsupportedReason(const Node &node);

/// Records dst = act(src + bias + residual). `src` is usually a PSUM view; `bias` a [P, 1] f32 tile of dst's
/// partitions; `residual` a view shaped like dst.
void emitEpilogue(LoweringContext &ctx, const tile::TileView &dst, const tile::TileView &src,
                  const std::optional<tile::TileView> &bias, const std::optional<tile::TileView> &residual,
                  const Epilogue &epilogue);

}  // namespace tessel::nc::compiler
