// The AVX512_VNNI dot-product throughput loop (see fma_peak.h): kFmaPeakChains independent zmm
// vpdpbusd chains, each adding four u8 x s8 products to every int32 lane per instruction.
#include <immintrin.h>

#include "targets/cpu/kernels/fma_peak_loops.h"

namespace tessel::cpu {

float u8s8DotPeakAvx512Vnni(int64_t iterations, float seed) {
  // Bytes (1, 1, 1, 1) x (0, 0, 0, 0): each step adds zero, so the chains are still true
  // dependencies; the seed keeps the operands opaque to the compiler.
  const int base = int(seed * 0.0f);
  const __m512i ones = _mm512_set1_epi8(char(base + 1));
  const __m512i zeros = _mm512_set1_epi8(char(base));
  __m512i acc[kFmaPeakChains];
#pragma GCC unroll 16
  for (int i = 0; i < kFmaPeakChains; ++i) acc[i] = _mm512_set1_epi32(int(seed) + i);
  for (int64_t it = 0; it < iterations; ++it) {
#pragma GCC unroll 16
    for (int i = 0; i < kFmaPeakChains; ++i) acc[i] = _mm512_dpbusd_epi32(acc[i], ones, zeros);
  }
  __m512i sum = acc[0];
#pragma GCC unroll 16
  for (int i = 1; i < kFmaPeakChains; ++i) sum = _mm512_add_epi32(sum, acc[i]);
  alignas(64) int32_t lanes[kFmaPeakAvx512Lanes];
  _mm512_store_si512(lanes, sum);
  int32_t total = 0;
  for (int32_t lane : lanes) total += lane;
  return float(total);
}

}  // namespace tessel::cpu
