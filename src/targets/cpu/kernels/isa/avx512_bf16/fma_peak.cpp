// The AVX512_BF16 dot-product throughput loop (see fma_peak.h): kFmaPeakChains independent zmm
// vdpbf16ps chains, each adding two bf16 products to every float lane per instruction.
#include <immintrin.h>

#include "targets/cpu/kernels/fma_peak_loops.h"

namespace tessel::cpu {

float bf16DotPeakAvx512Bf16(int64_t iterations, float seed) {
  // Pairs (1, 0) x (0, 0): each step adds zero, so the values stay finite and the chains are
  // still true dependencies; the seed keeps the operands opaque to the compiler.
  const __m512bh one = _mm512_cvtne2ps_pbh(_mm512_set1_ps(seed * 0.0f), _mm512_set1_ps(seed * 0.0f + 1.0f));
  const __m512bh zero = _mm512_cvtne2ps_pbh(_mm512_set1_ps(seed * 0.0f), _mm512_set1_ps(seed * 0.0f));
  __m512 acc[kFmaPeakChains];
#pragma GCC unroll 16
  for (int i = 0; i < kFmaPeakChains; ++i) acc[i] = _mm512_set1_ps(seed + float(i));
  for (int64_t it = 0; it < iterations; ++it) {
#pragma GCC unroll 16
    for (int i = 0; i < kFmaPeakChains; ++i) acc[i] = _mm512_dpbf16_ps(acc[i], one, zero);
  }
  __m512 sum = acc[0];
#pragma GCC unroll 16
  for (int i = 1; i < kFmaPeakChains; ++i) sum = _mm512_add_ps(sum, acc[i]);
  alignas(64) float lanes[kFmaPeakAvx512Lanes];
  _mm512_store_ps(lanes, sum);
  float total = 0.0f;
  for (float lane : lanes) total += lane;
  return total;
}

}  // namespace tessel::cpu
