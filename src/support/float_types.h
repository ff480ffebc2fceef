// Narrow floating-point storage types: IEEE half, bfloat16, and the two OCP fp8 formats
// (e4m3fn: no infinities, one NaN encoding per sign; e5m2: IEEE-like). Arithmetic happens in float;
// these types only convert, rounding to nearest-even on the way in, as hardware and ONNX do.
#pragma once

#include <bit>
#include <cmath>
#include <cstdint>

namespace tessel {

namespace detail {
/// Rounds a float to a narrower format with `mantBits` mantissa bits and exponent bias `bias`,
/// `expBits` exponent bits; returns the bit pattern without the sign. Handles subnormals.
/// Without infinities (e4m3fn), overflow gives NaN unless saturating.
inline uint32_t roundToNarrow(float magnitude, int expBits, int mantBits, int bias, uint32_t maxFiniteBits,
                              bool hasInf, bool saturate) {
  const uint32_t expMask = (1u << expBits) - 1;
  if (std::isnan(magnitude)) return hasInf ? ((expMask << mantBits) | (1u << (mantBits - 1))) : ((expMask << mantBits) | ((1u << mantBits) - 1));
  if (std::isinf(magnitude)) {
    if (saturate) return maxFiniteBits;
    return hasInf ? (expMask << mantBits) : ((expMask << mantBits) | ((1u << mantBits) - 1));
  }
  if (magnitude == 0.0f) return 0;
  int exponent = 0;
  float fraction = std::frexp(magnitude, &exponent);  // magnitude = fraction * 2^exponent, fraction in [0.5, 1)
  int unbiased = exponent - 1;                        // magnitude = 1.f * 2^unbiased
  int minNormal = 1 - bias;
  // Scale so the integer part holds the mantissa bits (with hidden bit for normals).
  int shift = (unbiased < minNormal) ? (mantBits - minNormal) : (mantBits - unbiased);
  (void)fraction;
  double scaled = std::ldexp(static_cast<double>(magnitude), shift);  // magnitude * 2^shift, exact.
  double rounded = std::nearbyint(scaled);  // Round half to even (default rounding mode).
  uint64_t mant = static_cast<uint64_t>(rounded);
  uint32_t bits;
  if (unbiased < minNormal) {
    // Subnormal: exponent field 0; rounding may carry into the smallest normal, which the
    // encoding handles naturally because mant == 1 << mantBits means exponent field 1.
    bits = static_cast<uint32_t>(mant);
  } else {
    int expField = unbiased + bias;
    if (mant >= (1ull << (mantBits + 1))) {  // Rounding carried into the next binade.
      mant >>= 1;
      ++expField;
    }
    bits = (static_cast<uint32_t>(expField) << mantBits) | (static_cast<uint32_t>(mant) & ((1u << mantBits) - 1));
  }
  if (bits > maxFiniteBits) {
    if (saturate) return maxFiniteBits;
    return hasInf ? (expMask << mantBits) : ((expMask << mantBits) | ((1u << mantBits) - 1));
  }
  return bits;
}

inline float narrowToFloat(uint32_t bits, int expBits, int mantBits, int bias, bool hasInf) {
  const uint32_t expMask = (1u << expBits) - 1;
  uint32_t expField = (bits >> mantBits) & expMask;
  uint32_t mant = bits & ((1u << mantBits) - 1);
  if (hasInf && expField == expMask) return mant ? NAN : INFINITY;
  if (!hasInf && expField == expMask && mant == (1u << mantBits) - 1) return NAN;
  if (expField == 0) return std::ldexp(static_cast<float>(mant), 1 - bias - mantBits);
  return std::ldexp(static_cast<float>(mant | (1u << mantBits)), static_cast<int>(expField) - bias - mantBits);
}
}  // namespace detail

/// IEEE 754 binary16.
struct Float16 {
  uint16_t bits = 0;
  Float16() = default;
  explicit Float16(float value) : bits(fromFloat(value)) {}
  static Float16 fromBits(uint16_t raw) { Float16 h; h.bits = raw; return h; }
  operator float() const {  // NOLINT: implicit widening is exact.
    float magnitude = detail::narrowToFloat(bits & 0x7fffu, 5, 10, 15, /*hasInf=*/true);
    return (bits & 0x8000u) ? -magnitude : magnitude;
  }
  static uint16_t fromFloat(float value) {
    uint16_t sign = std::signbit(value) ? 0x8000u : 0;
    return sign | static_cast<uint16_t>(detail::roundToNarrow(std::fabs(value), 5, 10, 15, 0x7bffu, true, false));
  }
};

/// bfloat16: the upper half of a float, rounded to nearest-even.
struct BFloat16 {
  uint16_t bits = 0;
  BFloat16() = default;
  explicit BFloat16(float value) : bits(fromFloat(value)) {}
  static BFloat16 fromBits(uint16_t raw) { BFloat16 b; b.bits = raw; return b; }
  operator float() const { return std::bit_cast<float>(static_cast<uint32_t>(bits) << 16); }  // NOLINT
  static uint16_t fromFloat(float value) {
    uint32_t raw = std::bit_cast<uint32_t>(value);
    if (std::isnan(value)) return static_cast<uint16_t>((raw >> 16) | 0x40u);
    uint32_t roundingBias = 0x7fffu + ((raw >> 16) & 1u);
    return static_cast<uint16_t>((raw + roundingBias) >> 16);
  }
};

/// OCP fp8 E4M3FN: bias 7, max 448, no infinities; 0x7f/0xff are NaN.
struct Float8E4M3FN {
  uint8_t bits = 0;
  Float8E4M3FN() = default;
  explicit Float8E4M3FN(float value, bool saturate = true) : bits(fromFloat(value, saturate)) {}
  static Float8E4M3FN fromBits(uint8_t raw) { Float8E4M3FN f; f.bits = raw; return f; }
  operator float() const {  // NOLINT
    float magnitude = detail::narrowToFloat(bits & 0x7fu, 4, 3, 7, /*hasInf=*/false);
    return (bits & 0x80u) ? -magnitude : magnitude;
  }
  static uint8_t fromFloat(float value, bool saturate = true) {
    uint8_t sign = std::signbit(value) ? 0x80u : 0;
    return sign | static_cast<uint8_t>(detail::roundToNarrow(std::fabs(value), 4, 3, 7, 0x7eu, false, saturate));
  }
};

/// OCP fp8 E5M2: bias 15, IEEE-like with infinities; max finite 57344.
struct Float8E5M2 {
  uint8_t bits = 0;
  Float8E5M2() = default;
  explicit Float8E5M2(float value, bool saturate = true) : bits(fromFloat(value, saturate)) {}
  static Float8E5M2 fromBits(uint8_t raw) { Float8E5M2 f; f.bits = raw; return f; }
  operator float() const {  // NOLINT
    float magnitude = detail::narrowToFloat(bits & 0x7fu, 5, 2, 15, /*hasInf=*/true);
    return (bits & 0x80u) ? -magnitude : magnitude;
  }
  static uint8_t fromFloat(float value, bool saturate = true) {
    uint8_t sign = std::signbit(value) ? 0x80u : 0;
    return sign | static_cast<uint8_t>(detail::roundToNarrow(std::fabs(value), 5, 2, 15, 0x7bu, true, saturate));
  }
};

}  // namespace tessel
