// The epilogue of the PE kernel families (matmul, and the model compiler's convolutions), applied while PSUM is evicted
// to SBUF: dst = act(src + bias + addend). The bias is per output partition (ACT's bias operand, free in the same
// pass); the addend is a tile shaped like dst (a residual, or a per-column bias broadcast over the partitions), added
// by DVE before the activation.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "targets/nc/tile/dsl.h"

namespace tessel::nc::kernels {

/// An activation by its ONNX-style name and parameters (the fused ops' `activation` and `activation_params`,
/// docs/cpu.md).
struct Epilogue {
  std::string activation;  // "", Relu, Clip, Sigmoid, Tanh, Silu, Gelu,
                           // GeluTanh, LeakyRelu, HardSigmoid, HardSwish.
  std::vector<float> params;
};

/// Why `epilogue` has no accelerator form; empty when it has one.
std::string epilogueUnsupportedReason(const Epilogue &epilogue);

/// The tiles an eviction reads besides PSUM.
struct EpilogueOperands {
  std::optional<tile::TileView> partitionBias;  // [dst partitions, 1] f32.
  std::optional<tile::TileView> addend;         // Shaped like dst.
  std::optional<tile::TileView> sumScratch;     // f32 like dst, for addend + act; a new tile when absent.
  std::optional<Engine> copyEngine;             // Engine of a plain eviction; the scheduler's when absent.
};

/// Records dst = act(src + bias + addend). `src` is usually a PSUM view. ACT applies the activation (with the bias in
/// the same pass); DVE adds the addend and applies the clamps ACT has no function for (Clip, LeakyRelu, HardSigmoid,
/// HardSwish).
void emitEpilogue(tile::KernelBuilder &b, const tile::TileView &dst, const tile::TileView &src,
                  const EpilogueOperands &operands, const Epilogue &epilogue);

/// Records dst = clamp(alpha * src + beta, 0, 1) (ONNX HardSigmoid; HardSwish's gate with 1/6, 1/2).
void emitHardSigmoid(tile::KernelBuilder &b, const tile::TileView &dst, const tile::TileView &src, float alpha,
                     float beta);

}  // namespace tessel::nc::kernels
