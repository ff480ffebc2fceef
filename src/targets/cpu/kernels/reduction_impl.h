// The reduction loops, compiled per ISA by isa/<family>/reduction.cpp. A row keeps kLanes partial
// results so GCC vectorizes it without reassociating. Internal linkage only.
#pragma once

#include "targets/cpu/kernels/reduction.h"
#include "targets/cpu/kernels/vector_math.h"

namespace tessel::cpu {
namespace {

constexpr int64_t kLanes = 16;

struct SumCombine {
  static constexpr float kIdentity = 0.0f;
  static float combine(float acc, float x) { return acc + x; }
};
// NaN wins: once the accumulator is NaN no comparison replaces it, and a NaN input always does.
struct MaxCombine {
  static constexpr float kIdentity = -kInfinity;
  static float combine(float acc, float x) { return selectFloat(x > acc || isNaN(x), x, acc); }
};
struct MinCombine {
  static constexpr float kIdentity = kInfinity;
  static float combine(float acc, float x) { return selectFloat(x < acc || isNaN(x), x, acc); }
};

template <class C>
inline float reduceRowWith(const float *x, int64_t n) {
  float lanes[kLanes];
  for (int64_t j = 0; j < kLanes; ++j) lanes[j] = C::kIdentity;
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    for (int64_t j = 0; j < kLanes; ++j) lanes[j] = C::combine(lanes[j], x[i + j]);
  }
  float total = C::kIdentity;
  for (; i < n; ++i) total = C::combine(total, x[i]);
  for (int64_t j = 0; j < kLanes; ++j) total = C::combine(total, lanes[j]);
  return total;
}

template <class C>
inline void accumulateWith(const float *x, float *acc, int64_t n) {
#pragma GCC ivdep
  for (int64_t j = 0; j < n; ++j) acc[j] = C::combine(acc[j], x[j]);
}

float reduceRowLoop(ReduceKind kind, const float *x, int64_t n) {
  switch (kind) {
    case ReduceKind::Sum:
    case ReduceKind::Mean: return reduceRowWith<SumCombine>(x, n);
    case ReduceKind::Max: return reduceRowWith<MaxCombine>(x, n);
    case ReduceKind::Min: return reduceRowWith<MinCombine>(x, n);
  }
  return 0.0f;
}

void accumulateLoop(ReduceKind kind, const float *x, float *acc, int64_t n) {
  switch (kind) {
    case ReduceKind::Sum:
    case ReduceKind::Mean: return accumulateWith<SumCombine>(x, acc, n);
    case ReduceKind::Max: return accumulateWith<MaxCombine>(x, acc, n);
    case ReduceKind::Min: return accumulateWith<MinCombine>(x, acc, n);
  }
}

}  // namespace
}  // namespace tessel::cpu
