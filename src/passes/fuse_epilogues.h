// Fusion of what follows a convolution or matrix product into one FusedConv / FusedMatMul.
#pragma once

#include "ir/graph.h"
#include "support/diagnostic.h"

namespace tessel {

/// From each Conv, MatMul or Gemm (alpha = beta = 1, transA = 0; transB = 1 only on a constant B,
/// which is transposed; C, when present, 1-D of N), absorbs in this order, each optional:
///  - an Add of a constant bias broadcast along the channel axis (Conv: [M,1..1] or [1,M,1..1];
///    MatMul: [N] or [1..,N]), added to the Conv's constant bias or becoming FusedMatMul's Bias;
///  - an Add of a residual Z with Y's shape;
///  - an activation: Relu, Clip (constant min/max), Sigmoid, Tanh, x*Sigmoid(x) (Silu), LeakyRelu,
///    HardSigmoid, HardSwish (the op, or x*Clip(x+3,0,6)/6 with the division before or after the
///    product or as a Mul by 1/6, or x*HardSigmoid(x) with alpha 1/6 and beta 1/2), tessel Gelu
///    (erf or tanh form).
/// into tessel FusedConv / FusedMatMul, which takes the name of the last absorbed value. A tessel
/// QLinearMatMulToFloat (fuse-qdq's) absorbs the same chain after its floats, as its inputs 9 (the
/// bias) and 10 (the residual) and the activation attributes. Every
/// value inside the chain must have a single reader and not be a graph output. Fires only when
/// something is absorbed (or a Gemm has a bias). Requires: shapes inferred. Returns whether any
/// node was fused.
Expected<bool> fuseEpilogues(Model &model);

}  // namespace tessel
