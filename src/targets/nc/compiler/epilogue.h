// The epilogue of a fused matmul or convolution, applied while PSUM is evicted to SBUF:
// dst = act(src + bias + residual), with the bias per output partition (the output channel or
// feature is on partitions in the standard form, so ACT's per-partition bias operand takes it).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "targets/nc/compiler/lowering.h"

namespace tessel::nc::compiler {

/// A fused op's `activation` and `activation_params` (docs/cpu.md).
struct Epilogue {
  std::string activation;  // "", Relu, Clip, Sigmoid, Tanh, Silu, Gelu, GeluTanh, LeakyRelu, HardSigmoid, HardSwish.
  std::vector<float> params;
};

Epilogue epilogueOf(const Node &node);
/// Why the accelerator cannot apply `node`'s activation; empty when it can.
std::string epilogueUnsupportedReason(const Node &node);

/// Records dst = act(src + bias + residual). `src` is usually a PSUM view; `bias` a [P, 1] f32 tile of
/// dst's partitions; `residual` a view shaped like dst. Uses ACT for the activation and DVE for adds
/// and clamps.
void emitEpilogue(LoweringContext &ctx, const tile::TileView &dst, const tile::TileView &src,
                  const std::optional<tile::TileView> &bias, const std::optional<tile::TileView> &residual,
                  const Epilogue &epilogue);

/// Records dst = clamp(alpha * src + beta, 0, 1) (ONNX HardSigmoid; HardSwish's gate with 1/6, 1/2).
void emitHardSigmoid(tile::KernelBuilder &b, const tile::TileView &dst, const tile::TileView &src, float alpha,
                     float beta);

}  // namespace tessel::nc::compiler
