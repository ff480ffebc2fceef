// The layer-norm row loop, compiled per ISA by isa/<family>/layer_norm.cpp. Sums keep kLanes
// partial results so GCC vectorizes them without reassociating. Internal linkage only.
#pragma once

#include <cmath>

#include "targets/cpu/kernels/layer_norm.h"
#include "targets/cpu/kernels/vector_math.h"

namespace tessel::cpu {
namespace {

constexpr int64_t kLanes = 16;

inline float rowSum(const float *x, int64_t n) {
  float lanes[kLanes] = {};
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    for (int64_t j = 0; j < kLanes; ++j) lanes[j] += x[i + j];
  }
  float total = 0.0f;
  for (; i < n; ++i) total += x[i];
  for (int64_t j = 0; j < kLanes; ++j) total += lanes[j];
  return total;
}

/// Sums of d and d^2 for d = x[i] - center.
inline void centeredSums(const float *x, int64_t n, float center, float *sum, float *sumSquares) {
  float lanes[kLanes] = {}, squares[kLanes] = {};
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    for (int64_t j = 0; j < kLanes; ++j) {
      const float d = x[i + j] - center;
      lanes[j] += d;
      squares[j] += d * d;
    }
  }
  float total = 0.0f, totalSquares = 0.0f;
  for (; i < n; ++i) {
    const float d = x[i] - center;
    total += d;
    totalSquares += d * d;
  }
  for (int64_t j = 0; j < kLanes; ++j) total += lanes[j], totalSquares += squares[j];
  *sum = total;
  *sumSquares = totalSquares;
}

/// The corrected two-pass algorithm: the float mean m0 is off by up to half an ulp of the data's
/// offset, so the second pass also sums d = x - m0 (exact for x near m0) and corrects both the
/// mean (m0 + c, c = sum d / n) and the variance (sum d^2 / n - c^2). The output subtracts m0 and
/// c separately for the same reason.
void layerNormRow(const float *x, const float *scale, const float *bias, float *y, int64_t n, float epsilon) {
  if (n <= 0) return;
  const float inverseN = 1.0f / float(n);
  const float mean0 = rowSum(x, n) * inverseN;
  float sum, sumSquares;
  centeredSums(x, n, mean0, &sum, &sumSquares);
  const float correction = sum * inverseN;
  const float variance = maxFloat(sumSquares * inverseN - correction * correction, 0.0f);
  const float inverseStdDev = 1.0f / std::sqrt(variance + epsilon);
  if (bias != nullptr) {
#pragma GCC ivdep
    for (int64_t i = 0; i < n; ++i) y[i] = ((x[i] - mean0) - correction) * inverseStdDev * scale[i] + bias[i];
  } else {
#pragma GCC ivdep
    for (int64_t i = 0; i < n; ++i) y[i] = ((x[i] - mean0) - correction) * inverseStdDev * scale[i];
  }
}

void rmsNormRow(const float *x, const float *scale, float *y, int64_t n, float epsilon) {
  if (n <= 0) return;
  float squares[kLanes] = {};
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    for (int64_t j = 0; j < kLanes; ++j) squares[j] += x[i + j] * x[i + j];
  }
  float sumSquares = 0.0f;
  for (; i < n; ++i) sumSquares += x[i] * x[i];
  for (int64_t j = 0; j < kLanes; ++j) sumSquares += squares[j];
  const float inverseRms = 1.0f / std::sqrt(sumSquares / float(n) + epsilon);
#pragma GCC ivdep
  for (int64_t k = 0; k < n; ++k) y[k] = x[k] * inverseRms * scale[k];
}

}  // namespace
}  // namespace tessel::cpu
