// The contract between the attention driver (attention.cpp) and its per-ISA online-softmax step
// (isa/<family>/attention_softmax.cpp). Like gemm_microkernel.h, this header is included by
// translation units compiled with AVX-512/AVX2 flags, so it holds only plain structs and
// declarations: an inline function here could be emitted with those flags and then picked by the
// linker for code that runs on any host.
#pragma once

#include <cstdint>

namespace tessel::cpu {

/// One online-softmax update over a tile of scores (rows = queries, cols = keys of one key block).
/// The scores arrive already scaled (the driver folds the scale into Q). For each row r:
///   s[c] += mask(r, c); s[c] = -inf for c > causalLast + r;
///   m' = max(m, max_c s[c]); alpha = exp(m - m'); l = l * alpha + sum_c exp(s[c] - m');
///   out[r, :] *= alpha; s[c] = exp(s[c] - m') (the probabilities P·V then accumulates).
/// A row whose scores are all -inf so far keeps m = -inf, l = 0 and P = 0.
struct AttentionSoftmaxArgs {
  float *scores = nullptr;  // rows x cols, row stride ldScores; overwritten with probabilities.
  int64_t ldScores = 0;
  int64_t rows = 0;
  int64_t cols = 0;
  const float *mask = nullptr;  // Additive mask at (row 0, col 0) of the tile, or null.
  int64_t maskRowStride = 0;    // Elements between rows (0 when broadcast over queries).
  int64_t maskColStride = 0;    // 1, or 0 when broadcast over keys.
  int64_t causalLast = INT64_MAX;  // Last valid column of row 0; row r may see up to causalLast + r.
  float *rowMax = nullptr;      // rows running maxima.
  float *rowSum = nullptr;      // rows running sums of exponentials.
  float *out = nullptr;         // rows x outCols accumulator (row stride ldOut), rescaled by alpha.
  int64_t ldOut = 0;
  int64_t outCols = 0;
};

using AttentionSoftmaxFn = void (*)(const AttentionSoftmaxArgs &args);

void f32_attention_softmax__avx512(const AttentionSoftmaxArgs &args);
void f32_attention_softmax__avx2(const AttentionSoftmaxArgs &args);
void f32_attention_softmax__generic(const AttentionSoftmaxArgs &args);

}  // namespace tessel::cpu
