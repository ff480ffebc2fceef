// The AVX-512 FMA-throughput loop (see fma_peak.h): kFmaPeakChains independent zmm FMA chains.
#include <immintrin.h>

#include "targets/cpu/kernels/fma_peak_loops.h"

namespace tessel::cpu {

float fmaPeakAvx512(int64_t iterations, float seed) {
  // x * 1 + 0 keeps the values finite forever; the chains are still true dependencies.
  const __m512 one = _mm512_set1_ps(seed * 0.0f + 1.0f);  // Opaque to the compiler, so FMA stays FMA.
  const __m512 zero = _mm512_set1_ps(seed * 0.0f);
  __m512 acc[kFmaPeakChains];
#pragma GCC unroll 16
  for (int i = 0; i < kFmaPeakChains; ++i) acc[i] = _mm512_set1_ps(seed + float(i));
  for (int64_t it = 0; it < iterations; ++it) {
#pragma GCC unroll 16
    for (int i = 0; i < kFmaPeakChains; ++i) acc[i] = _mm512_fmadd_ps(acc[i], one, zero);
  }
  __m512 sum = acc[0];
#pragma GCC unroll 16
  for (int i = 1; i < kFmaPeakChains; ++i) sum = _mm512_add_ps(sum, acc[i]);
  // Summed through memory: GCC 12 warns (falsely) inside _mm512_reduce_add_ps.
  alignas(64) float lanes[kFmaPeakAvx512Lanes];
  _mm512_store_ps(lanes, sum);
  float total = 0.0f;
  for (float lane : lanes) total += lane;
  return total;
}

}  // namespace tessel::cpu
