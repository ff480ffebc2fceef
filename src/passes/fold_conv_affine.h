// Folding of per-channel affine ops after a convolution into its weights and bias: the scalar or
// per-channel Mul/Add that exporters emit for learned scales (paddle2onnx's `w * conv + b`), and a
// BatchNormalization after a ConvTranspose (fold-batch-norm takes those after a Conv).
#pragma once

#include "ir/graph.h"
#include "support/diagnostic.h"

namespace tessel {

/// For each Conv and ConvTranspose of floating-point type with a constant W and a constant (or
/// no) bias, while the only reader of its output is one of
///  - Mul or Add by a constant, or Sub or Div of a constant from / by it (the conv's output as
///    the first operand), where the constant has one element or one per output channel along
///    axis 1 (every other dim 1, rank at most Y's);
///  - an inference-mode BatchNormalization with constant statistics,
/// rewrites the conv to compute that op's result: W scaled per output channel, the bias scaled
/// and shifted (a missing bias becomes a constant). The new conv takes the name of the absorbed
/// op's output. Intermediates must not be graph outputs or returned by subgraphs. Requires:
/// shapes inferred. Returns whether anything was folded.
Expected<bool> foldConvAffine(Model &model);

}  // namespace tessel
