// The quantization loops, compiled per ISA by isa/<family>/quantize.cpp. The range keeps kLanes
// partial bounds so GCC vectorizes it without reassociating; rounding adds and subtracts 1.5 * 2^23,
// which rounds half to even in the default rounding mode (as std::nearbyint does) and vectorizes
// on every ISA. Internal linkage only.
#pragma once

#include <cstring>

#include "targets/cpu/kernels/quantize.h"
#include "targets/cpu/kernels/vector_math.h"

namespace tessel::cpu {
namespace {

constexpr int64_t kLanes = 16;

void rangeLoop(const float *x, int64_t n, float *lo, float *hi) {
  float los[kLanes], his[kLanes];
  for (int64_t j = 0; j < kLanes; ++j) los[j] = *lo, his[j] = *hi;
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    for (int64_t j = 0; j < kLanes; ++j) {
      los[j] = minFloat(los[j], x[i + j]);  // x < lo ? x : lo, as std::min(lo, x).
      his[j] = maxFloat(his[j], x[i + j]);  // hi < x ? x : hi, as std::max(hi, x).
    }
  }
  float l = *lo, h = *hi;
  for (; i < n; ++i) l = minFloat(l, x[i]), h = maxFloat(h, x[i]);
  for (int64_t j = 0; j < kLanes; ++j) l = minFloat(l, los[j]), h = maxFloat(h, his[j]);
  *lo = l;
  *hi = h;
}

/// round_half_to_even(v) for |v| <= 2^22.
inline float roundHalfEven(float v) {
  constexpr float kShift = 12582912.0f;  // 1.5 * 2^23: the sum's ulp is 1.
  return (v + kShift) - kShift;
}

void quantizeU8Loop(const float *x, float scale, float zeroPoint, uint8_t *y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    // Clamping the quotient to +-512 first changes no result (zeroPoint is in [0, 255], so both
    // sides saturate anyway) and keeps it in roundHalfEven's range.
    const float q = minFloat(maxFloat(x[i] / scale, -512.0f), 512.0f);
    const float v = minFloat(maxFloat(roundHalfEven(q) + zeroPoint, 0.0f), 255.0f);
    y[i] = uint8_t(int32_t(v));
  }
}

void quantizeS8Loop(const float *x, float scale, float zeroPoint, int8_t *y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    const float q = minFloat(maxFloat(x[i] / scale, -512.0f), 512.0f);  // As quantizeU8Loop.
    const float v = minFloat(maxFloat(roundHalfEven(q) + zeroPoint, -128.0f), 127.0f);
    y[i] = int8_t(int32_t(v));
  }
}

void dequantizeU8Loop(const uint8_t *x, float scale, float zeroPoint, float *y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = (float(x[i]) - zeroPoint) * scale;
}

void dequantizeS8Loop(const int8_t *x, float scale, float zeroPoint, float *y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = (float(x[i]) - zeroPoint) * scale;
}

/// round_half_to_even(float(acc + bias) * multiplier) + zeroPoint clamped to [lo, hi]; the
/// product is clamped to +-1024 first, past where any zero point saturates.
inline float requantized(int32_t acc, int32_t bias, float multiplier, float zeroPoint, float lo, float hi) {
  // The sum wraps as the int32 accumulators do; the exact sum fits whenever the reference's does.
  const float v = float(int32_t(uint32_t(acc) + uint32_t(bias))) * multiplier;
  return minFloat(maxFloat(roundHalfEven(minFloat(maxFloat(v, -1024.0f), 1024.0f)) + zeroPoint, lo), hi);
}

void requantizeU8Loop(const int32_t *acc, int32_t bias, float multiplier, float zeroPoint, uint8_t *y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = uint8_t(int32_t(requantized(acc[i], bias, multiplier, zeroPoint, 0.0f, 255.0f)));
}

void requantizeS8Loop(const int32_t *acc, int32_t bias, float multiplier, float zeroPoint, int8_t *y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    y[i] = int8_t(int32_t(requantized(acc[i], bias, multiplier, zeroPoint, -128.0f, 127.0f)));
  }
}

void requantizeColumnsU8Loop(const int32_t *acc, const int32_t *bias, const float *multiplier, float zeroPoint,
                             uint8_t *y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    y[i] = uint8_t(int32_t(requantized(acc[i], bias[i], multiplier[i], zeroPoint, 0.0f, 255.0f)));
  }
}

void requantizeColumnsS8Loop(const int32_t *acc, const int32_t *bias, const float *multiplier, float zeroPoint,
                             int8_t *y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    y[i] = int8_t(int32_t(requantized(acc[i], bias[i], multiplier[i], zeroPoint, -128.0f, 127.0f)));
  }
}

/// QLinearAdd's element: QuantizeLinear(DequantizeLinear(a) + DequantizeLinear(b)) in float32, in
/// the order the three ops compute it (no contraction: fp-contract off).
inline float addedQuantized(float a, float b, const QuantizedAddParams &p, float lo, float hi) {
  const float sum = (a - p.aZero) * p.aScale + (b - p.bZero) * p.bScale;
  const float q = minFloat(maxFloat(sum / p.yScale, -512.0f), 512.0f);  // As quantizeU8Loop.
  return minFloat(maxFloat(roundHalfEven(q) + p.yZero, lo), hi);
}

// maybe_unused: the AVX-512 build writes these two out with intrinsics (isa/avx512/quantize.cpp).
[[maybe_unused]] void addQuantizedU8Loop(const uint8_t *a, const uint8_t *b, const QuantizedAddParams &p, uint8_t *y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = uint8_t(int32_t(addedQuantized(float(a[i]), float(b[i]), p, 0.0f, 255.0f)));
}

[[maybe_unused]] void addQuantizedS8Loop(const int8_t *a, const int8_t *b, const QuantizedAddParams &p, int8_t *y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    y[i] = int8_t(int32_t(addedQuantized(float(a[i]), float(b[i]), p, -128.0f, 127.0f)));
  }
}

void centerU8Loop(const uint8_t *x, float zeroPoint, float *y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = float(x[i]) - zeroPoint;
}

void centerS8Loop(const int8_t *x, float zeroPoint, float *y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = float(x[i]) - zeroPoint;
}

void int32FromFloatLoop(std::byte *data, int64_t n) {
  // memcpy reads and writes the same bytes under both types without aliasing questions; GCC turns
  // it into a vector load, convert and store.
  for (int64_t i = 0; i < n; ++i) {
    float f;
    std::memcpy(&f, data + i * 4, 4);
    const int32_t v = int32_t(f);
    std::memcpy(data + i * 4, &v, 4);
  }
}

void int32FromSplitSumsLoop(std::byte *data, const float *low, int shift, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    float f;
    std::memcpy(&f, data + i * 4, 4);
    // Unsigned arithmetic wraps where int32 would overflow; the true value fits, so it is exact.
    const uint32_t v = (uint32_t(int32_t(f)) << shift) + uint32_t(int32_t(low[i]));
    std::memcpy(data + i * 4, &v, 4);
  }
}

}  // namespace
}  // namespace tessel::cpu
