// Folding of the per-channel affine ops that produce a convolution's input into its weights and
// bias: the learned scale and shift paddle2onnx emits after an activation, before a 1x1 conv.
#pragma once

#include "ir/graph.h"
#include "support/diagnostic.h"

namespace tessel {

/// For each Conv and channels-first tessel FusedConv with a constant W and a constant (or no)
/// bias that reads no padding (pads 0, auto_pad NOTSET or VALID), while its input X is read only
/// by it and produced by a per-input-channel affine op of a value V of X's shape
/// (passes::channelAffineOf: Mul/Add/Sub/Div by a constant, BatchNormalization), rewrites the
/// conv to read V: W[m, c, k] scaled by the scale of c, the bias shifted by the sum of W[m, c, k]
/// times the shift of c (a missing bias becomes a constant). Runs after fuse-epilogues so that the
/// ops of an activation pattern (HardSwish's division by 6) stay for it. Requires: shapes
/// inferred. Returns whether anything was folded.
Expected<bool> foldConvInputAffine(Model &model);

}  // namespace tessel
