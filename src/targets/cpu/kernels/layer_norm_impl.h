// The layer-norm row loop, compiled per ISA by isa/<family>/layer_norm.cpp. Sums keep kLanes
// partial results so GCC vectorizes them without reassociating. Internal linkage only.
#pragma once

#include <cmath>

#include "targets/cpu/kernels/layer_norm.h"
#include "targets/cpu/kernels/vector_math.h"

namespace tessel::cpu {
namespace {

constexpr int64_t kLanes = 16;

/// Sum of (x[i] - center)^power for power 1 or 2.
template <int kPower>
inline float centeredSum(const float *x, int64_t n, float center) {
  float lanes[kLanes] = {};
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    for (int64_t j = 0; j < kLanes; ++j) {
      const float d = x[i + j] - center;
      lanes[j] += kPower == 2 ? d * d : d;
    }
  }
  float total = 0.0f;
  for (; i < n; ++i) {
    const float d = x[i] - center;
    total += kPower == 2 ? d * d : d;
  }
  for (int64_t j = 0; j < kLanes; ++j) total += lanes[j];
  return total;
}

void layerNormRow(const float *x, const float *scale, const float *bias, float *y, int64_t n, float epsilon) {
  if (n <= 0) return;
  const float mean = centeredSum<1>(x, n, 0.0f) / float(n);
  const float variance = centeredSum<2>(x, n, mean) / float(n);
  const float inverseStdDev = 1.0f / std::sqrt(variance + epsilon);
  if (bias != nullptr) {
#pragma GCC ivdep
    for (int64_t i = 0; i < n; ++i) y[i] = (x[i] - mean) * inverseStdDev * scale[i] + bias[i];
  } else {
#pragma GCC ivdep
    for (int64_t i = 0; i < n; ++i) y[i] = (x[i] - mean) * inverseStdDev * scale[i];
  }
}

}  // namespace
}  // namespace tessel::cpu
