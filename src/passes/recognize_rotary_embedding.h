// Recognition of the rotary position embedding (RoPE) of Llama and GPT-NeoX.
#pragma once

#include "ir/graph.h"
#include "support/diagnostic.h"

namespace tessel {

/// Replaces x * cos + rotate_half(x) * sin with tessel RotaryEmbedding(x, cos, sin), where
/// rotate_half(x) = Concat(Neg(Slice(x, D/2..D)), Slice(x, 0..D/2)) along the last axis, as PyTorch
/// exports the half-split form (D = x's last dim, static and even; the Slices take constant bounds on
/// the last axis with step 1). Either operand order of the Muls and the Add; cos and sin must
/// broadcast to x, and the result has x's shape. Intermediate values must be read only inside the
/// pattern and not be graph outputs. Requires: shapes inferred. Returns whether anything was
/// replaced.
Expected<bool> recognizeRotaryEmbedding(Model &model);

}  // namespace tessel
