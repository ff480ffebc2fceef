// The end of every AVX-512 GEMM microkernel (the fp32 and the bf16 ones): the accumulator tile
// goes to C through the epilogue (accumulate, bias, row bias, residual, clamp), with masked stores
// on a ragged right edge. Included only by translation units built with AVX-512 flags; everything
// here has internal linkage, so no copy built with wider flags can be linked into another TU.
#pragma once

#include <immintrin.h>

#include "targets/cpu/kernels/gemm_microkernel.h"

namespace tessel::cpu {
namespace {

constexpr int kLanes = 16;  // floats per zmm register.
// Max/min over all lanes in the masked form, because GCC 12 reports a false
// -Wmaybe-uninitialized inside the unmasked _mm512_max_ps.
constexpr __mmask16 kAllLanes = 0xFFFF;

/// Stores the top-left args.rows x args.cols of acc (kMr rows of kVecs vectors) into C.
template <int kMr, int kVecs>
inline __attribute__((always_inline)) void storeTile(__m512 (&acc)[kMr][kVecs], const MicrokernelArgs &args) {
  // Lane masks for the valid columns of each vector (all lanes on a full tile, where the masked
  // forms cost the same as the plain ones).
  __mmask16 mask[kVecs];
#pragma GCC unroll 8
  for (int j = 0; j < kVecs; ++j) {
    const int valid = args.cols - j * kLanes;
    mask[j] = valid >= kLanes ? kAllLanes : valid <= 0 ? __mmask16(0) : __mmask16((1u << valid) - 1);
  }
  const bool plain = !args.accumulate && args.bias == nullptr && args.rowBias == nullptr &&
                     args.residual == nullptr && !args.clamp;
  if (plain) {
#pragma GCC unroll 32
    for (int i = 0; i < kMr; ++i) {
      if (i >= args.rows) break;
#pragma GCC unroll 8
      for (int j = 0; j < kVecs; ++j) _mm512_mask_storeu_ps(args.c + i * args.ldc + j * kLanes, mask[j], acc[i][j]);
    }
    return;
  }
  const __m512 lo = _mm512_set1_ps(args.lo), hi = _mm512_set1_ps(args.hi);
#pragma GCC unroll 32
  for (int i = 0; i < kMr; ++i) {
    if (i >= args.rows) break;
    float *c = args.c + i * args.ldc;
#pragma GCC unroll 8
    for (int j = 0; j < kVecs; ++j) {
      __m512 v = acc[i][j];
      if (args.accumulate) v = _mm512_add_ps(v, _mm512_maskz_loadu_ps(mask[j], c + j * kLanes));
      if (args.bias != nullptr) v = _mm512_add_ps(v, _mm512_maskz_loadu_ps(mask[j], args.bias + j * kLanes));
      if (args.rowBias != nullptr) v = _mm512_add_ps(v, _mm512_set1_ps(args.rowBias[i]));
      if (args.residual != nullptr) {
        v = _mm512_add_ps(v, _mm512_maskz_loadu_ps(mask[j], args.residual + i * args.ldr + j * kLanes));
      }
      if (args.clamp) v = _mm512_maskz_min_ps(kAllLanes, _mm512_maskz_max_ps(kAllLanes, v, lo), hi);
      _mm512_mask_storeu_ps(c + j * kLanes, mask[j], v);
    }
  }
}

}  // namespace
}  // namespace tessel::cpu
