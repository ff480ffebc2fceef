// Recognition of layer normalization and RMS normalization over the last axis.
#pragma once

#include "ir/graph.h"
#include "support/diagnostic.h"

namespace tessel {

/// Replaces with tessel LayerNormalization(x, scale, bias) {axis = -1, epsilon}:
///  - the decomposed form d = x - ReduceMean(x), var = ReduceMean(d^2) (Pow(d, 2) or d * d),
///    y = d / Sqrt(var + eps) (or d times Reciprocal(Sqrt(...)) or 1 / Sqrt(...)), then Mul by a
///    scale and Add of a bias (each optional; a missing scale becomes a constant of ones), both
///    reductions over the last axis only with keepdims, scale and bias 1-D of the last dim;
///  - ONNX LayerNormalization whose Mean and InvStdDev outputs are unused;
/// and with tessel RMSNormalization(x, scale) {axis = -1, epsilon} the RMS form (Llama's RMSNorm):
///    ReduceMean(x^2) (Pow(x, 2) or x * x) over the last axis, y = x / Sqrt(ms + eps) (or x times
///    Reciprocal(Sqrt(...)) or 1 / Sqrt(...)), then an optional Mul by a scale.
/// Intermediate values must be read only inside the pattern and not be graph outputs. The new
/// node takes the name of the pattern's last value. Requires: shapes inferred (the rank of x).
/// Returns whether anything was replaced.
Expected<bool> recognizeLayerNorm(Model &model);

}  // namespace tessel
