// What the NCHW and channels-last pooling loops share: the two folds and the range of window
// indices that land inside the input. Included by their per-ISA builds, so everything has internal
// linkage (see pool_impl.h).
#pragma once

#include <cstdint>

namespace tessel::cpu {
namespace {

struct MaxOp {
  static float identity() { return -__builtin_inff(); }
  static float apply(float acc, float x) { return acc >= x ? acc : x; }
};

/// The maximum of u8 or s8 values; the identity is the type's lowest (never kept: a window always
/// has a tap inside the input).
template <class T>
struct BytesMaxOp {
  static T identity() { return T(T(-1) < T(0) ? -128 : 0); }
  static T apply(T acc, T x) { return acc >= x ? acc : x; }
};

struct SumOp {
  static float identity() { return 0.0f; }
  static float apply(float acc, float x) { return acc + x; }
};

/// Indices i in [0, count) whose position start + i * step lies in [lo, hi): [*begin, *end).
inline void indicesInside(int64_t start, int64_t step, int64_t count, int64_t lo, int64_t hi, int64_t *begin,
                          int64_t *end) {
  int64_t b = start >= lo ? 0 : (lo - start + step - 1) / step;
  int64_t e = hi - 1 - start < 0 ? 0 : (hi - 1 - start) / step + 1;
  if (e > count) e = count;
  if (b > e) b = e;
  *begin = b;
  *end = e;
}

}  // namespace
}  // namespace tessel::cpu
