// Folding of inference-mode BatchNormalization into the convolution before it.
#pragma once

#include "ir/graph.h"
#include "support/diagnostic.h"

namespace tessel {

/// Rewrites Conv(X, W, B?) -> BatchNormalization(scale, bias, mean, var) as one Conv with
/// W' = W * s (per output channel) and B' = (B - mean) * s + bias, s = scale / sqrt(var + eps),
/// when W, B and the four statistics are constants, the Conv's output is read only by the
/// BatchNormalization, the BatchNormalization is in inference mode (no statistics outputs read,
/// training_mode 0, spatial 1) and the dtypes are floating-point. The folded Conv keeps the
/// BatchNormalization's output name. Unused weights are left to eliminate-dead-code.
/// Requires: a verified model. Returns whether any node was folded.
Expected<bool> foldBatchNorm(Model &model);

}  // namespace tessel
