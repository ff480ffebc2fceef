// Recognition of scaled dot-product attention.
#pragma once

#include "ir/graph.h"
#include "support/diagnostic.h"

namespace tessel {

/// Replaces Softmax(scale * MatMul(Q, Kt) [Where(causal, ., -big)] [+ Mask]) then MatMul(., V),
/// with the softmax over the last axis, by tessel Attention(Q, K, V, Mask?) {scale, causal}:
///  - Q, K, V are rank-4 [B,H,Sq,D], [B,H,Sk,D], [B,H,Sk,Dv] with equal B and H, or rank-3
///    [B*H,S,D] (as ViT exports them: K transposed by [0,2,1], or the fused [1,2,0] of a [S,B*H,D]
///    source), which are reshaped to [1,B*H,S,D] around Attention and back;
///  - Kt is Transpose(K, [0,1,3,2]) (K is read directly), or Transpose(Kr, [0,2,3,1]) of a
///    [B,Sk,H,D] Kr as PyTorch export fuses its two transposes (that Transpose is rewritten to
///    the [0,2,1,3] that yields K: the same one copy, no new one), or a constant (transposed);
///  - the scale is the product of Mul/Div by scalar constants on Q, on Kt (before or after its
///    Transpose) and on the scores;
///  - Where(cond, scores, c) with a constant cond that is the lower-triangular causal mask
///    (j <= i + Sk - Sq, leading dims 1) and c a scalar constant <= -1e4 or -inf becomes causal = 1;
///  - an Add of a mask that broadcasts to the scores' shape without changing it becomes Mask.
/// Every intermediate value must be read only inside the pattern. Attention takes the name of the
/// second MatMul's output. Requires: shapes inferred. Returns whether anything was replaced.
Expected<bool> recognizeAttention(Model &model);

}  // namespace tessel
