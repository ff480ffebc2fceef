// The heads form of attention: o = softmax(scale * q k^T [+ mask] [causal]) v over SBUF-resident
// operands whose heads lie on partitions, the form the projections around attention produce: head h
// of Q is a D-partition slice, tokens on the free dim, i.e. Q_h^T [D, S], which is what the tensor
// engine contracts over. Per (batch, query tile of <= P rows, head):
//   s     = (scale Q_h)^T @ K_h^T [+ I^T @ bias]     PE into PSUM, key blocks of one bank; the caller
//                                                    folds the scale into Q's copy in the matmul dtype,
//                                                    the mask (and causal kMaskedScore entries) PE adds
//                                                    as identity^T @ bias
//  (s     -> -s in SBUF                              ACT, where DVE and ACT share the PSUM port)
//   m     = -rowmax(s)                               DVE reduce
//   p     = exp(s + m)                               ACT, in the matmul dtype
//   p^T   = PE transposes of p (P keys each), evicted to SBUF
//   O^T   = sum over key tiles V_h[keys, Dv]^T @ p^T   PE, into the head's partitions of a PSUM tile
//   L     = sum over key tiles ones[keys, Dv]^T @ p^T  PE: the row sums of p broadcast over Dv partitions
// and, once per group of heads sharing an output block (plan.groups), Y^T = O^T * (1 / L) (ACT
// reciprocal, DVE multiply) straight into the output. V_h [keys, Dv] is made once per K/V head by PE
// transposes of V_h^T (with grouped-query attention, query head h reads K/V head h / (H / Hkv)).
//
// Callers: the model compiler's Attention lowering (compiler/emit_attention.cpp, on its activations)
// and variant "heads" of the library kernel `attention` (kernel.cpp, between loads and stores).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "targets/nc/kernels/attention/plan.h"
#include "targets/nc/tile/dsl.h"

namespace tessel::nc::kernels {

struct HeadsOperands {
  /// Tokens [start, start + count) of head h of batch b as an [X, count] view (X = D for q and k, Dv
  /// for v): q holds scale * Q in the matmul dtype, k holds K in the matmul dtype, v any dtype. q takes
  /// query heads, k and v K/V heads.
  std::function<tile::TileView(int64_t b, int64_t h, int64_t start, int64_t count)> q, k, v;
  /// With problem.mask: the additive mask in HBM, f32, row-major in the padded shape.
  std::optional<tile::HbmView> mask;
  /// Where group g of plan.groups of batch b goes: [group heads * Dv, Sq], the heads one after the
  /// other on partitions.
  std::function<tile::TileView(int64_t b, size_t group)> output;
  /// A [P, P] tile of ones in the matmul dtype, asked for when first needed (callers share one).
  std::function<tile::TileView()> ones;
  /// Prefix of the tile names ("node/" names them after a model node).
  std::string tilePrefix;
};

/// Records the attention of `problem` as `plan` says (planHeads of the same problem).
void emitHeadsAttention(tile::KernelBuilder &builder, const HeadsProblem &problem, const HeadsPlan &plan,
                        const HeadsOperands &operands);

}  // namespace tessel::nc::kernels
