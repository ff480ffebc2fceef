// The int8 channels-last depthwise convolution against an int64 direct convolution with the same
// requantization (float(acc + bias) * multiplier, clamped, rounded half to even, plus the zero
// point): every output byte must be equal. Cases: channel counts that are not a multiple of any
// vector width (3, 17, 40) and some that are (16, 32, 48), the fixed 3x3 kernels at strides 1
// and 2 and the general loop (5x5, 1x7, stride 3, dilation 2, and a 16x16 kernel: 256 taps, the
// most whose float sums are exact), asymmetric pads, planes narrower than the kernel, rows long
// enough for the four-pixel blocks and the halving rest, batch 2, u8 and s8 on either side, the
// extreme operands (every |x - xZero| * |w| at 255 * 255) and saturation, one thread and more,
// and every ISA variant the host can run.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "kernel_shape_util.h"
#include "support/thread_pool.h"
#include "targets/cpu/kernels/conv.h"
#include "targets/cpu/kernels/cpu_features.h"
#include "targets/cpu/kernels/depthwise_conv_s8.h"

namespace tessel::cpu {
namespace {

struct S8Case {
  std::string name;
  Conv2dShape shape;
  bool xSigned = false, wSigned = true, ySigned = false;
  bool extreme = false;  // Operands at the ends of their ranges, zero points at the other end.
};

S8Case makeCase(std::string name, int64_t batch, int64_t channels, int64_t height, int64_t width, int64_t kernelH,
                int64_t kernelW, int64_t stride, int64_t dilation, int64_t padTop, int64_t padLeft, int64_t padBottom,
                int64_t padRight) {
  return {std::move(name), testing::convShape(batch, channels, height, width, channels, channels, kernelH, kernelW,
                                              stride, dilation, padTop, padLeft, padBottom, padRight)};
}

S8Case with(S8Case c, bool xSigned, bool wSigned, bool ySigned, bool extreme = false) {
  c.xSigned = xSigned;
  c.wSigned = wSigned;
  c.ySigned = ySigned;
  c.extreme = extreme;
  return c;
}

std::vector<S8Case> cases() {
  return {
      // name, N, C, H, W, KH, KW, stride, dilation, pads (top, left, bottom, right)
      makeCase("3x3 s1 C32 rows of 19", 1, 32, 9, 19, 3, 3, 1, 1, 1, 1, 1, 1),
      with(makeCase("3x3 s1 C17 batch 2", 2, 17, 7, 13, 3, 3, 1, 1, 1, 1, 1, 1), true, true, true),
      with(makeCase("3x3 s2 C40", 1, 40, 15, 14, 3, 3, 2, 1, 1, 1, 1, 1), false, false, true),
      makeCase("3x3 s2 asymmetric pads C3", 2, 3, 16, 16, 3, 3, 2, 1, 0, 0, 1, 1),
      with(makeCase("5x5 s1 C48", 1, 48, 11, 12, 5, 5, 1, 1, 2, 2, 2, 2), true, true, false),
      makeCase("1x7 s3 C16", 1, 16, 5, 23, 1, 7, 3, 1, 0, 3, 0, 3),
      makeCase("3x3 dilation 2 C40", 1, 40, 11, 9, 3, 3, 2, 2, 2, 2, 2, 2),
      makeCase("3x3 plane narrower than the kernel C16", 1, 16, 2, 1, 3, 3, 1, 1, 1, 1, 1, 1),
      with(makeCase("16x16 (256 taps) C17", 1, 17, 18, 20, 16, 16, 1, 1, 1, 2, 1, 2), false, true, false, true),
      with(makeCase("3x3 s1 extreme C33", 1, 33, 6, 11, 3, 3, 1, 1, 1, 1, 1, 1), true, false, true, true),
      with(makeCase("3x3 s1 extreme u8 C16", 1, 16, 6, 11, 3, 3, 1, 1, 1, 1, 1, 1), false, true, false, true),
  };
}

/// One operand's values: uniform in its type's range, or (extreme) at the end farthest from the
/// zero point, so every product is 255 * 255 in magnitude.
std::vector<int32_t> values(int64_t count, bool isSigned, bool extreme, int32_t zero, std::mt19937 &rng) {
  const int32_t lo = isSigned ? -128 : 0, hi = isSigned ? 127 : 255;
  std::uniform_int_distribution<int32_t> dist(lo, hi);
  std::vector<int32_t> v(static_cast<size_t>(count));
  for (int32_t &e : v) e = extreme ? (zero == lo ? hi : lo) : dist(rng);
  return v;
}

std::vector<uint8_t> asBytes(const std::vector<int32_t> &v) {
  std::vector<uint8_t> bytes(v.size());
  for (size_t i = 0; i < v.size(); ++i) bytes[i] = uint8_t(v[i] & 0xff);
  return bytes;
}

TEST(DepthwiseConvS8, EqualsTheIntegerReferenceOnEveryVariant) {
  ThreadPool pool(3);
  for (const S8Case &c : cases()) {
    const Conv2dShape &s = c.shape;
    const int64_t ch = s.outChannels, taps = s.kernelHeight * s.kernelWidth;
    ASSERT_TRUE(runsDepthwiseConvS8(s)) << c.name;
    std::mt19937 rng(uint32_t(ch * 131 + taps));
    // Extreme cases put the zero points at one end of the range and the values at the other.
    const int32_t xZero = c.extreme ? (c.xSigned ? -128 : 0) : (c.xSigned ? 3 : 121);
    std::vector<int32_t> wZeros(static_cast<size_t>(ch));
    for (int64_t k = 0; k < ch; ++k) {
      wZeros[size_t(k)] = c.extreme ? (c.wSigned ? 127 : 255) : (c.wSigned ? int32_t(k % 5) - 2 : 125 + int32_t(k % 7));
    }
    const std::vector<int32_t> x = values(s.batch * s.inPlane() * ch, c.xSigned, c.extreme, xZero, rng);
    std::vector<int32_t> w(static_cast<size_t>(ch * taps));
    for (int64_t k = 0; k < ch; ++k) {
      const std::vector<int32_t> row = values(taps, c.wSigned, c.extreme, wZeros[size_t(k)], rng);
      std::copy(row.begin(), row.end(), w.begin() + k * taps);
    }
    std::vector<int32_t> bias(static_cast<size_t>(ch));
    std::vector<float> multiplier(static_cast<size_t>(ch));
    for (int64_t k = 0; k < ch; ++k) {
      bias[size_t(k)] = int32_t(k * 977 % 20001) - 10000;
      // About a quarter of the way to saturation for the typical sums; extreme sums saturate.
      multiplier[size_t(k)] = float(1.0 / (std::sqrt(double(taps)) * 74.0 * 74.0 / 40.0) * (1.0 + 0.03 * double(k % 9)));
    }
    const float yZero = c.ySigned ? -3.0f : 128.0f;
    const std::vector<int16_t> packed = packDepthwiseS8Weights(s, asBytes(w).data(), c.wSigned, wZeros);

    // Reference: int64 sums over the taps inside the image, then the kernel's requantization.
    const float lo = c.ySigned ? -128.0f : 0.0f, hi = c.ySigned ? 127.0f : 255.0f;
    std::vector<int32_t> expected(static_cast<size_t>(s.batch * s.outPlane() * ch));
    for (int64_t n = 0; n < s.batch; ++n) {
      for (int64_t oh = 0; oh < s.outHeight; ++oh) {
        for (int64_t ow = 0; ow < s.outWidth; ++ow) {
          for (int64_t k = 0; k < ch; ++k) {
            int64_t acc = 0;
            for (int64_t kh = 0; kh < s.kernelHeight; ++kh) {
              const int64_t ih = oh * s.strideHeight - s.padTop + kh * s.dilationHeight;
              for (int64_t kw = 0; kw < s.kernelWidth; ++kw) {
                const int64_t iw = ow * s.strideWidth - s.padLeft + kw * s.dilationWidth;
                if (ih < 0 || ih >= s.inHeight || iw < 0 || iw >= s.inWidth) continue;
                const int64_t xv = x[size_t(((n * s.inHeight + ih) * s.inWidth + iw) * ch + k)] - xZero;
                const int64_t wv = w[size_t(k * taps + kh * s.kernelWidth + kw)] - wZeros[size_t(k)];
                acc += xv * wv;
              }
            }
            const float v = float(int32_t(acc) + bias[size_t(k)]) * multiplier[size_t(k)];
            const float q = std::nearbyint(std::min(std::max(v, lo - yZero), hi - yZero)) + yZero;
            expected[size_t(((n * s.outHeight + oh) * s.outWidth + ow) * ch + k)] = int32_t(q);
          }
        }
      }
    }

    const std::vector<uint8_t> xBytes = asBytes(x);
    DepthwiseS8Output output;
    output.bias = bias.data();
    output.multiplier = multiplier.data();
    output.zeroPoint = yZero;
    output.ySigned = c.ySigned;
    for (const DepthwiseS8Variant &variant : depthwiseConvS8Variants()) {
      if (!hasAll(hostIsa(), variant.isa)) continue;
      for (ThreadPool *threads : {static_cast<ThreadPool *>(nullptr), &pool}) {
        std::vector<uint8_t> y(expected.size(), 0xa5);
        depthwiseConvS8With(variant, s, xBytes.data(), c.xSigned, xZero, packed.data(), output, y.data(), threads);
        int64_t wrong = 0;
        size_t first = 0;
        for (size_t i = 0; i < y.size(); ++i) {
          const int32_t got = c.ySigned ? int32_t(int8_t(y[i])) : int32_t(y[i]);
          if (got != expected[i] && wrong++ == 0) first = i;
        }
        EXPECT_EQ(wrong, 0) << c.name << " " << variant.name << (threads ? " threaded" : "") << ": first at " << first
                            << " got " << int(c.ySigned ? int8_t(y[first]) : y[first]) << " want "
                            << expected[first];
      }
    }
  }
}

TEST(DepthwiseConvS8, KernelsPastTheExactTapCountAreNotTaken) {
  Conv2dShape s = makeCase("17x16", 1, 8, 20, 20, 17, 16, 1, 1, 0, 0, 0, 0).shape;
  EXPECT_FALSE(runsDepthwiseConvS8(s));
  s.kernelHeight = 16;
  EXPECT_TRUE(runsDepthwiseConvS8(s));
}

}  // namespace
}  // namespace tessel::cpu
