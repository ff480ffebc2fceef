// The softmax loops, compiled per ISA by isa/<family>/softmax.cpp. Reductions keep kLanes partial
// results in an array (one vector's worth) so GCC vectorizes them without reassociating a scalar
// sum. Internal linkage only.
#pragma once

#include "targets/cpu/kernels/softmax.h"
#include "targets/cpu/kernels/vector_math.h"

namespace tessel::cpu {
namespace {

constexpr int64_t kLanes = 16;

inline float rowMax(const float *x, int64_t n) {
  float lanes[kLanes];
  for (int64_t j = 0; j < kLanes; ++j) lanes[j] = -kInfinity;
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    for (int64_t j = 0; j < kLanes; ++j) lanes[j] = maxFloat(lanes[j], x[i + j]);
  }
  float best = -kInfinity;
  for (; i < n; ++i) best = maxFloat(best, x[i]);
  for (int64_t j = 0; j < kLanes; ++j) best = maxFloat(best, lanes[j]);
  return best;
}

/// Sum of e^(x[i] - shift), storing each term in y when y is not null.
inline float sumExp(const float *x, float *y, int64_t n, float shift) {
  float lanes[kLanes] = {};
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    for (int64_t j = 0; j < kLanes; ++j) {
      const float e = fastExp(x[i + j] - shift);
      if (y != nullptr) y[i + j] = e;
      lanes[j] += e;
    }
  }
  float total = 0.0f;
  for (; i < n; ++i) {
    const float e = fastExp(x[i] - shift);
    if (y != nullptr) y[i] = e;
    total += e;
  }
  for (int64_t j = 0; j < kLanes; ++j) total += lanes[j];
  return total;
}

void softmaxRow(const float *x, float *y, int64_t n, bool log) {
  if (n <= 0) return;
  const float max = rowMax(x, n);
  if (log) {
    // (x - max) - log(sum), not x - (max + log(sum)): the latter rounds log(sum) to max's ulp.
    const float logSum = fastLog(sumExp(x, nullptr, n, max));
#pragma GCC ivdep
    for (int64_t i = 0; i < n; ++i) y[i] = (x[i] - max) - logSum;
    return;
  }
  const float inverse = 1.0f / sumExp(x, y, n, max);
#pragma GCC ivdep
  for (int64_t i = 0; i < n; ++i) y[i] *= inverse;
}

void softmaxColumns(const float *x, float *y, int64_t length, int64_t stride, int64_t width, bool log) {
  float max[kSoftmaxColumnBlock], sum[kSoftmaxColumnBlock];
  for (int64_t j = 0; j < width; ++j) max[j] = -kInfinity, sum[j] = 0.0f;
  for (int64_t k = 0; k < length; ++k) {
    const float *row = x + k * stride;
    for (int64_t j = 0; j < width; ++j) max[j] = maxFloat(max[j], row[j]);
  }
  for (int64_t k = 0; k < length; ++k) {
    const float *in = x + k * stride;
    float *out = y + k * stride;
#pragma GCC ivdep
    for (int64_t j = 0; j < width; ++j) {
      const float e = fastExp(in[j] - max[j]);
      if (!log) out[j] = e;
      sum[j] += e;
    }
  }
  if (log) {
    for (int64_t j = 0; j < width; ++j) sum[j] = fastLog(sum[j]);
  } else {
    for (int64_t j = 0; j < width; ++j) sum[j] = 1.0f / sum[j];
  }
  for (int64_t k = 0; k < length; ++k) {
    const float *in = x + k * stride;
    float *out = y + k * stride;
    if (log) {
#pragma GCC ivdep
      for (int64_t j = 0; j < width; ++j) out[j] = (in[j] - max[j]) - sum[j];
    } else {
#pragma GCC ivdep
      for (int64_t j = 0; j < width; ++j) out[j] *= sum[j];
    }
  }
}

}  // namespace
}  // namespace tessel::cpu
