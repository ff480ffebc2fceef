// A decoder's logits at the last position only: the form generation uses, which reads nothing
// else (runtime/generation.h).
#pragma once

#include "ir/graph.h"
#include "support/diagnostic.h"

namespace tessel {

/// Where graph output `logits` [batch, sequence, vocabulary] is a MatMul of a [batch, sequence,
/// hidden] activation by a constant (the LM head), the MatMul takes only the last position of its
/// activation: the output becomes [batch, 1, vocabulary]. A prefill of S tokens then multiplies one
/// row per sequence by the LM head instead of S, and returns 1/S of the logits. Returns whether
/// anything was rewritten.
Expected<bool> keepLastPositionLogits(Model &model);

}  // namespace tessel
