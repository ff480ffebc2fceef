// The end of every AVX2 GEMM microkernel (the fp32 and the bf16 ones): the accumulator tile goes to
// C through the epilogue (accumulate, bias, row bias, residual, clamp), with masked loads and stores
// for the valid columns. Included only by translation units built with the AVX2 flags; everything
// here has internal linkage, so no copy built with other flags can be linked into another TU.
#pragma once

#include <immintrin.h>

#include "targets/cpu/kernels/gemm_microkernel.h"

namespace tessel::cpu {
namespace {

constexpr int kLanes = 8;  // floats per ymm register.

/// Stores the top-left args.rows x args.cols of acc (kMr rows of kVecs vectors) into C.
template <int kMr, int kVecs>
inline __attribute__((always_inline)) void storeTile(__m256 (&acc)[kMr][kVecs], const MicrokernelArgs &args) {
  const __m256 lo = _mm256_set1_ps(args.lo), hi = _mm256_set1_ps(args.hi);
  // Lane masks for the valid columns of each vector (all lanes on a full tile).
  const __m256i laneIndex = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  __m256i mask[kVecs];
#pragma GCC unroll 8
  for (int j = 0; j < kVecs; ++j) mask[j] = _mm256_cmpgt_epi32(_mm256_set1_epi32(args.cols - j * kLanes), laneIndex);
#pragma GCC unroll 32
  for (int i = 0; i < kMr; ++i) {
    if (i >= args.rows) break;
    float *c = args.c + i * args.ldc;
#pragma GCC unroll 8
    for (int j = 0; j < kVecs; ++j) {
      __m256 v = acc[i][j];
      if (args.accumulate) v = _mm256_add_ps(v, _mm256_maskload_ps(c + j * kLanes, mask[j]));
      if (args.bias != nullptr) v = _mm256_add_ps(v, _mm256_maskload_ps(args.bias + j * kLanes, mask[j]));
      if (args.rowBias != nullptr) v = _mm256_add_ps(v, _mm256_broadcast_ss(args.rowBias + i));
      if (args.residual != nullptr) {
        v = _mm256_add_ps(v, _mm256_maskload_ps(args.residual + i * args.ldr + j * kLanes, mask[j]));
      }
      if (args.clamp) v = _mm256_min_ps(_mm256_max_ps(v, lo), hi);
      _mm256_maskstore_ps(c + j * kLanes, mask[j], v);
    }
  }
}

}  // namespace
}  // namespace tessel::cpu
