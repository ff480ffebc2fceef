// Recognition of softmax spelled out in elementary ops.
#pragma once

#include "ir/graph.h"
#include "support/diagnostic.h"

namespace tessel {

/// Replaces e = Exp(x - ReduceMax(x)), y = e / ReduceSum(e), both reductions over the last axis
/// only with keepdims, by ONNX Softmax(x) over the last axis: axis = -1 from opset 11 (negative
/// axes), axis = rank - 1 before (where Softmax's coercion to 2-D over [axis, rank) is then the
/// last axis alone, so the two agree). The intermediates must be read only inside the pattern.
/// Requires: shapes inferred (the rank of x). Returns whether anything was replaced.
Expected<bool> recognizeSoftmax(Model &model);

}  // namespace tessel
