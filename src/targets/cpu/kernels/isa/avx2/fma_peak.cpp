// The AVX2+FMA FMA-throughput loop (see fma_peak.h): kFmaPeakChains independent ymm FMA chains.
#include <immintrin.h>

#include "targets/cpu/kernels/fma_peak_loops.h"

namespace tessel::cpu {

float fmaPeakAvx2(int64_t iterations, float seed) {
  // x * 1 + 0 keeps the values finite forever; the chains are still true dependencies.
  const __m256 one = _mm256_set1_ps(seed * 0.0f + 1.0f);  // Opaque to the compiler, so FMA stays FMA.
  const __m256 zero = _mm256_set1_ps(seed * 0.0f);
  __m256 acc[kFmaPeakChains];
#pragma GCC unroll 16
  for (int i = 0; i < kFmaPeakChains; ++i) acc[i] = _mm256_set1_ps(seed + float(i));
  for (int64_t it = 0; it < iterations; ++it) {
#pragma GCC unroll 16
    for (int i = 0; i < kFmaPeakChains; ++i) acc[i] = _mm256_fmadd_ps(acc[i], one, zero);
  }
  __m256 sum = acc[0];
#pragma GCC unroll 16
  for (int i = 1; i < kFmaPeakChains; ++i) sum = _mm256_add_ps(sum, acc[i]);
  alignas(32) float lanes[kFmaPeakAvx2Lanes];
  _mm256_store_ps(lanes, sum);
  float total = 0.0f;
  for (float lane : lanes) total += lane;
  return total;
}

}  // namespace tessel::cpu
