// The portable FMA-throughput loop (see fma_peak.h): kFmaPeakChains independent scalar
// multiply-add chains, for hosts without AVX2+FMA.
#include "targets/cpu/kernels/fma_peak_loops.h"

namespace tessel::cpu {

float fmaPeakGeneric(int64_t iterations, float seed) {
  const float one = seed * 0.0f + 1.0f;  // Opaque to the compiler, so the multiply stays.
  const float zero = seed * 0.0f;
  float acc[kFmaPeakChains];
  for (int i = 0; i < kFmaPeakChains; ++i) acc[i] = seed + float(i);
  for (int64_t it = 0; it < iterations; ++it) {
    for (int i = 0; i < kFmaPeakChains; ++i) acc[i] = acc[i] * one + zero;
  }
  float total = 0.0f;
  for (float x : acc) total += x;
  return total;
}

}  // namespace tessel::cpu
