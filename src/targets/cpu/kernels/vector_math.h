// Single-precision exp, log, erf, tanh, sigmoid and the activations built on them, written as
// branch-free scalar code (selects, bit casts, polynomials) so that GCC vectorizes a loop over them
// with whatever ISA flags the including file is compiled with: the isa/<family>/ files include the
// kernel loops (*_impl.h) that call these, and each gets AVX-512, AVX2 or SSE2 code.
//
// Accuracy against double precision, over all finite floats (tests/targets/cpu/kernels):
//   fastExp, fastLog        ~1-2 ulp; exp results down to the denormal range are scaled exactly.
//   fastErf, fastTanh       relative error below 1e-6 (Maclaurin series near 0, exp-based outside).
//   fastSigmoid, gelu forms relative error below 1e-6 away from the underflow of the result.
// NaN inputs give NaN; +-inf give the limits.
//
// Everything here has internal linkage: the same function compiled with different ISA flags in two
// translation units must never be merged by the linker.
#pragma once

#include <bit>
#include <cstdint>

namespace tessel::cpu {
namespace {

// Every function is forced inline: a call left in a loop (GCC's inliner gives up inside the large
// switch of the unary loop) stops it from vectorizing.
#define TESSEL_VECTOR_MATH inline __attribute__((always_inline))

constexpr float kInfinity = __builtin_inff();

TESSEL_VECTOR_MATH float selectFloat(bool condition, float a, float b) { return condition ? a : b; }

/// |x| by clearing the sign bit (a bit operation, so it vectorizes everywhere).
TESSEL_VECTOR_MATH float absBits(float x) { return std::bit_cast<float>(std::bit_cast<uint32_t>(x) & 0x7fffffffu); }

/// `magnitude` with the sign of `sign`.
TESSEL_VECTOR_MATH float withSignOf(float magnitude, float sign) {
  return std::bit_cast<float>((std::bit_cast<uint32_t>(magnitude) & 0x7fffffffu) |
                              (std::bit_cast<uint32_t>(sign) & 0x80000000u));
}

/// x is NaN, tested on the bits: GCC does not if-convert the float compare x != x for AVX2 or
/// SSE (it would keep a branch, and the loop would not vectorize).
TESSEL_VECTOR_MATH bool isNaN(float x) { return (std::bit_cast<uint32_t>(x) & 0x7fffffffu) > 0x7f800000u; }

TESSEL_VECTOR_MATH float minFloat(float a, float b) { return b < a ? b : a; }
TESSEL_VECTOR_MATH float maxFloat(float a, float b) { return a < b ? b : a; }

/// e^x. Range reduction x = n ln2 + r (ln2 split in two so n ln2 is exact), a degree-6 polynomial
/// for e^r on |r| <= ln2/2, then 2^n applied as two factors so denormal results are not flushed.
TESSEL_VECTOR_MATH float fastExp(float x) {
  constexpr float kLog2e = 1.44269504088896341f;
  constexpr float kLn2Hi = 0.693359375f;  // 9 significant bits: n * kLn2Hi is exact for |n| <= 150.
  constexpr float kLn2Lo = -2.12194440e-4f;
  constexpr float kRoundMagic = 12582912.0f;  // 1.5 * 2^23: adding it rounds to an integer.
  // e^-104 is below half the smallest denormal and e^89 above FLT_MAX. NaN takes the path of 0
  // (the float-to-int conversion below must see a number) and is put back at the end.
  const float xc = selectFloat(isNaN(x), 0.0f, minFloat(maxFloat(x, -104.0f), 89.0f));
  const float n = (xc * kLog2e + kRoundMagic) - kRoundMagic;
  float r = xc - n * kLn2Hi;
  r = r - n * kLn2Lo;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  const float y = p * (r * r) + r + 1.0f;
  const int32_t ni = static_cast<int32_t>(n);
  const int32_t n1 = ni >> 1;
  const int32_t n2 = ni - n1;
  const float scale1 = std::bit_cast<float>(static_cast<uint32_t>(n1 + 127) << 23);
  const float scale2 = std::bit_cast<float>(static_cast<uint32_t>(n2 + 127) << 23);
  const float result = y * scale1 * scale2;
  return selectFloat(isNaN(x), x, result);
}

/// Natural log: x = m 2^e with m in [sqrt(1/2), sqrt(2)), log(m) = f - f^2/2 + f^3 P(f) with f = m - 1.
TESSEL_VECTOR_MATH float fastLog(float x) {
  constexpr float kMinNormal = 1.17549435e-38f;
  const bool denormal = x < kMinNormal;
  const float xs = selectFloat(denormal, x * 8388608.0f, x);  // 2^23 brings denormals to normal range.
  const int32_t bits = std::bit_cast<int32_t>(xs);
  int32_t e = ((bits >> 23) & 0xff) - 126;
  e = denormal ? e - 23 : e;
  const float m = std::bit_cast<float>((bits & 0x007fffff) | 0x3f000000);  // In [0.5, 1).
  const bool low = m < 0.707106781186547524f;
  e = low ? e - 1 : e;
  const float f = selectFloat(low, m + m - 1.0f, m - 1.0f);
  const float z = f * f;
  float p = 7.0376836292e-2f;
  p = p * f - 1.1514610310e-1f;
  p = p * f + 1.1676998740e-1f;
  p = p * f - 1.2420140846e-1f;
  p = p * f + 1.4249322787e-1f;
  p = p * f - 1.6668057665e-1f;
  p = p * f + 2.0000714765e-1f;
  p = p * f - 2.4999993993e-1f;
  p = p * f + 3.3333331174e-1f;
  const float fe = static_cast<float>(e);
  float y = p * f * z;
  y = y + fe * -2.12194440e-4f;
  y = y - 0.5f * z;
  float result = f + y;
  result = result + fe * 0.693359375f;
  result = selectFloat(x == kInfinity, x, result);
  result = selectFloat(x == 0.0f, -kInfinity, result);
  result = selectFloat(x < 0.0f, std::bit_cast<float>(0x7fc00000u), result);
  return selectFloat(isNaN(x), x, result);
}

/// log(1 + u) for u >= 0 without losing a small u: log(w) * u / (w - 1) with w = 1 + u corrects
/// the rounding of w (Goldberg's method).
TESSEL_VECTOR_MATH float fastLog1pNonNegative(float u) {
  const float w = 1.0f + u;
  const float ratio = u / (w - 1.0f);
  return selectFloat(w == 1.0f, u, fastLog(w) * selectFloat(w == kInfinity, 1.0f, ratio));
}

/// erf(a) for |a| < 0.5: 2/sqrt(pi) * a * sum (-1)^k a^2k / (k! (2k+1)); the first dropped term is
/// below 1e-9 of the result.
TESSEL_VECTOR_MATH float erfSmall(float a) {
  const float z = a * a;
  float p = 1.0f / 9360.0f;
  p = p * z - 1.0f / 1320.0f;
  p = p * z + 1.0f / 216.0f;
  p = p * z - 1.0f / 42.0f;
  p = p * z + 1.0f / 10.0f;
  p = p * z - 1.0f / 3.0f;
  p = p * z + 1.0f;
  return a * p * 1.12837916709551257f;
}

/// erfc(a) for a >= 0, with relative error below 1.2e-7 in exact arithmetic (the Chebyshev fit
/// t exp(-a^2 + P(t)), t = 1/(1 + a/2), from Numerical Recipes).
TESSEL_VECTOR_MATH float erfcNonNegative(float a) {
  const float t = 1.0f / (1.0f + 0.5f * a);
  float p = 0.17087277f;
  p = p * t - 0.82215223f;
  p = p * t + 1.48851587f;
  p = p * t - 1.13520398f;
  p = p * t + 0.27886807f;
  p = p * t - 0.18628806f;
  p = p * t + 0.09678418f;
  p = p * t + 0.37409196f;
  p = p * t + 1.00002368f;
  p = p * t - 1.26551223f;
  return t * fastExp(p - a * a);
}

TESSEL_VECTOR_MATH float fastErf(float x) {
  const float a = absBits(x);
  const float small = erfSmall(x);
  const float large = withSignOf(1.0f - erfcNonNegative(a), x);
  return selectFloat(a < 0.5f, small, large);
}

/// 1 + erf(x), accurate also where it is tiny (x very negative), which the erf-form GELU needs.
TESSEL_VECTOR_MATH float onePlusErf(float x) {
  const float a = absBits(x);
  const float erfc = erfcNonNegative(a);
  const float large = selectFloat(x < 0.0f, erfc, 2.0f - erfc);
  return selectFloat(a < 0.5f, 1.0f + erfSmall(x), large);
}

/// tanh: the Maclaurin series through x^17 for |x| < 0.55 (first dropped term < 2e-8 relative),
/// else 1 - 2 / (e^2|x| + 1), which has no cancellation there.
TESSEL_VECTOR_MATH float fastTanh(float x) {
  const float a = absBits(x);
  const float z = x * x;
  float p = 443861162.0f / 1856156927625.0f;
  p = p * z - 6404582.0f / 10854718875.0f;
  p = p * z + 929569.0f / 638512875.0f;
  p = p * z - 21844.0f / 6081075.0f;
  p = p * z + 1382.0f / 155925.0f;
  p = p * z - 62.0f / 2835.0f;
  p = p * z + 17.0f / 315.0f;
  p = p * z - 2.0f / 15.0f;
  p = p * z + 1.0f / 3.0f;
  // tanh x = x - x^3/3 + 2x^5/15 - ... = x - x z p(z).
  const float small = x - x * z * p;
  const float large = withSignOf(1.0f - 2.0f / (fastExp(2.0f * a) + 1.0f), x);
  return selectFloat(a < 0.55f, small, large);
}

TESSEL_VECTOR_MATH float fastSigmoid(float x) { return 1.0f / (1.0f + fastExp(-x)); }

/// x * sigmoid(x).
TESSEL_VECTOR_MATH float fastSilu(float x) { return x / (1.0f + fastExp(-x)); }

/// 0.5 x (1 + erf(x / sqrt 2)).
TESSEL_VECTOR_MATH float fastGelu(float x) { return 0.5f * x * onePlusErf(x * 0.70710678118654752f); }

/// 0.5 x (1 + tanh(u)), u = sqrt(2/pi) (x + 0.044715 x^3), computed as x / (1 + e^-2u): the same
/// value without the cancellation of 1 + tanh(u) for negative x.
TESSEL_VECTOR_MATH float fastGeluTanh(float x) {
  const float u = 0.7978845608028654f * (x + 0.044715f * x * x * x);
  return x / (1.0f + fastExp(-2.0f * u));
}

/// log(1 + e^x) = max(x, 0) + log1p(e^-|x|).
TESSEL_VECTOR_MATH float fastSoftplus(float x) {
  return maxFloat(x, 0.0f) + fastLog1pNonNegative(fastExp(-absBits(x)));
}

#undef TESSEL_VECTOR_MATH

}  // namespace
}  // namespace tessel::cpu
