// QLinearAdd's loops on every pair of operand values: each variant the host can run against
// QuantizeLinear(DequantizeLinear(a) + DequantizeLinear(b)) computed here in float32, step by
// step as the three ops do (this file is built without contraction). u8 and s8, scales whose
// quotients land on rounding ties and ones that saturate, and a count that leaves a tail.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "targets/cpu/kernels/cpu_features.h"
#include "targets/cpu/kernels/quantize.h"

namespace tessel::cpu {
namespace {

int32_t expectedAdd(int32_t a, int32_t b, const QuantizedAddParams &p, bool isSigned) {
  const float dqA = (float(a) - p.aZero) * p.aScale;
  const float dqB = (float(b) - p.bZero) * p.bScale;
  const float sum = dqA + dqB;
  const float q = std::nearbyint(sum / p.yScale) + p.yZero;
  const float lo = isSigned ? -128.0f : 0.0f, hi = isSigned ? 127.0f : 255.0f;
  return int32_t(std::min(std::max(q, lo), hi));
}

TEST(QuantizedAdd, EveryPairOfValuesOnEveryVariant) {
  const std::vector<QuantizedAddParams> params = {
      {0.0173f, 120.0f, 0.0091f, 131.0f, 0.0211f, 0.0f},
      // Halves: every odd sum of a and b is a tie, rounded to even.
      {0.5f, 0.0f, 0.5f, 0.0f, 1.0f, 3.0f},
      // y_scale = 15 * 2^-12 and a, b scales a quarter of it: the quotient is (a + b) / 4 exactly,
      // a tie when a + b = 4k + 2, which a multiplication by the rounded reciprocal misses (2.5
      // becomes 2.5000002).
      {0.00091552734375f, 0.0f, 0.00091552734375f, 0.0f, 0.003662109375f, 0.0f},
      // Decimal scales: the exact quotient (5 (a - 128) + 4 (b - 128)) / 6 is a tie for a sixth of
      // the pairs, which the float steps round either way; a loop that rounds a different float
      // (multiplying by the scales' ratios) must find those and take the reference's steps.
      {0.01f, 128.0f, 0.008f, 128.0f, 0.012f, 0.0f},
      // Quotients of scales that are not powers of two, and a small output scale that saturates.
      {0.1f, 7.0f, 0.3f, 250.0f, 0.7f, 128.0f},
      {0.02f, 128.0f, 0.017f, 100.0f, 0.0007f, 64.0f},
  };
  constexpr int64_t kCount = 256 * 256 + 7;  // Every pair, then a tail of seven.
  for (bool isSigned : {false, true}) {
    std::vector<uint8_t> a(kCount), b(kCount), y(kCount);
    for (int64_t i = 0; i < kCount; ++i) {
      a[size_t(i)] = uint8_t(i % 65536 / 256);
      b[size_t(i)] = uint8_t(i % 256);
    }
    for (QuantizedAddParams p : params) {
      if (isSigned) p.aZero -= 128.0f, p.bZero -= 128.0f, p.yZero -= 128.0f;
      for (const QuantizeKernels *kernels : quantizeKernelVariants()) {
        if (!hasAll(hostIsa(), kernels->isa)) continue;
        std::fill(y.begin(), y.end(), uint8_t(0xa5));
        if (isSigned) {
          kernels->addQuantizedS8(reinterpret_cast<const int8_t *>(a.data()), reinterpret_cast<const int8_t *>(b.data()),
                                  p, reinterpret_cast<int8_t *>(y.data()), kCount);
        } else {
          kernels->addQuantizedU8(a.data(), b.data(), p, y.data(), kCount);
        }
        int64_t wrong = 0, first = -1;
        for (int64_t i = 0; i < kCount; ++i) {
          const int32_t va = isSigned ? int8_t(a[size_t(i)]) : a[size_t(i)];
          const int32_t vb = isSigned ? int8_t(b[size_t(i)]) : b[size_t(i)];
          const int32_t got = isSigned ? int8_t(y[size_t(i)]) : y[size_t(i)];
          if (got != expectedAdd(va, vb, p, isSigned) && wrong++ == 0) first = i;
        }
        EXPECT_EQ(wrong, 0) << kernels->name << (isSigned ? " s8" : " u8") << " y_scale " << p.yScale
                            << ": first at a=" << (first / 256 % 256) << " b=" << (first % 256);
      }
    }
  }
}

}  // namespace
}  // namespace tessel::cpu
