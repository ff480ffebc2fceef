// The channels-last pooling kernels against a double-precision reference on NHWC data and against
// the NCHW kernels on transposed data: MaxPool and AveragePool (with and without
// count_include_pad) at channel counts 1, 3, 17, 33, 64 and 144 (below, at and above a chunk of
// channels), odd sizes, asymmetric pads, strides 1 to 3, dilation 2, ceil-mode windows that reach
// past the end pad, batch 2; MaxPool of u8 and s8 bytes too; the global average pool at planes
// below and above a vector. One
// thread, two and three (whose ranges do not line up with images or channel chunks), every ISA
// variant the host can run.
#include <gtest/gtest.h>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <string>
#include <vector>

#include "nhwc_test_util.h"
#include "support/thread_pool.h"
#include "targets/cpu/kernels/cpu_features.h"
#include "kernel_shape_util.h"
#include "targets/cpu/kernels/pool.h"

namespace tessel::cpu {
namespace {

using testing::randomFloats;
using testing::transposeChannels;

using testing::PoolCase;

std::vector<PoolCase> cases() {
  return {
      // name, N, C, H, W, KH, KW, stride, dilation, pads (top, left, bottom, right), ceil_mode
      testing::poolCase("resnet maxpool 3x3/2 C64", 1, 64, 17, 19, 3, 3, 2, 1, 1, 1, 1, 1, false),
      testing::poolCase("3x3/2 C144 batch 2", 2, 144, 9, 8, 3, 3, 2, 1, 1, 1, 1, 1, false),
      testing::poolCase("2x2/2 C3", 2, 3, 9, 11, 2, 2, 2, 1, 0, 0, 0, 0, false),
      testing::poolCase("2x2/2 ceil C17", 2, 17, 9, 11, 2, 2, 2, 1, 0, 0, 0, 0, true),
      testing::poolCase("3x3/2 ceil padded C33", 1, 33, 10, 13, 3, 3, 2, 1, 1, 1, 1, 1, true),
      testing::poolCase("3x3/1 asymmetric pads C1", 1, 1, 7, 8, 3, 3, 1, 1, 0, 2, 1, 0, false),
      testing::poolCase("dilated 3x3 C17", 2, 17, 12, 11, 3, 3, 1, 2, 2, 2, 2, 2, false),
      testing::poolCase("5x4/3 C33", 1, 33, 16, 14, 5, 4, 3, 1, 2, 1, 2, 3, false),
      testing::poolCase("one row C3", 1, 3, 1, 30, 1, 3, 2, 1, 0, 1, 0, 1, true),
      testing::poolCase("7x7 whole plane C130", 2, 130, 7, 7, 7, 7, 1, 1, 0, 0, 0, 0, false),
  };
}

enum class Kind { Max, Average, AverageIncludePad };

/// Direct windowed pool in double on NHWC data.
std::vector<double> referencePool(const Pool2dShape &s, Kind kind, const std::vector<float> &x) {
  std::vector<double> y;
  for (int64_t n = 0; n < s.batch; ++n) {
    for (int64_t oh = 0; oh < s.outHeight; ++oh) {
      for (int64_t ow = 0; ow < s.outWidth; ++ow) {
        for (int64_t c = 0; c < s.channels; ++c) {
          double max = -INFINITY, sum = 0;
          int64_t inside = 0, padded = 0;
          for (int64_t kh = 0; kh < s.kernelHeight; ++kh) {
            for (int64_t kw = 0; kw < s.kernelWidth; ++kw) {
              const int64_t ih = oh * s.strideHeight + kh * s.dilationHeight - s.padTop;
              const int64_t iw = ow * s.strideWidth + kw * s.dilationWidth - s.padLeft;
              if (ih >= -s.padTop && ih < s.inHeight + s.padBottom && iw >= -s.padLeft && iw < s.inWidth + s.padRight) {
                ++padded;
              }
              if (ih < 0 || ih >= s.inHeight || iw < 0 || iw >= s.inWidth) continue;
              const double v = x[size_t(((n * s.inHeight + ih) * s.inWidth + iw) * s.channels + c)];
              max = std::max(max, v);
              sum += v;
              ++inside;
            }
          }
          y.push_back(kind == Kind::Max ? max : sum / double(kind == Kind::Average ? inside : padded));
        }
      }
    }
  }
  return y;
}

void checkClose(const std::vector<float> &got, const std::vector<double> &want, double tolerance) {
  ASSERT_EQ(got.size(), want.size());
  int reported = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    if (std::fabs(double(got[i]) - want[i]) <= tolerance) continue;
    ADD_FAILURE() << "element " << i << ": got " << got[i] << ", want " << want[i];
    if (++reported == 5) return;
  }
}

std::vector<const PoolNhwcVariant *> runnableVariants() {
  std::vector<const PoolNhwcVariant *> variants;
  for (const PoolNhwcVariant &variant : poolNhwcVariants()) {
    if (hasAll(hostIsa(), variant.isa)) variants.push_back(&variant);
  }
  return variants;
}

void checkWindowed(const PoolNhwcVariant &variant, Kind kind, ThreadPool *pool) {
  for (const PoolCase &c : cases()) {
    const Pool2dShape &s = c.shape;
    SCOPED_TRACE(::testing::Message() << c.name << " " << variant.name << " kind=" << int(kind)
                                    << " threads=" << (pool ? pool->size() : 1));
    const auto x = randomFloats(s.batch * s.channels * s.inHeight * s.inWidth, uint32_t(s.inHeight * 31 + s.channels));
    std::vector<float> y(size_t(s.batch * s.channels * s.outHeight * s.outWidth), -12345.0f);
    if (kind == Kind::Max) {
      maxPool2dNhwcWith(variant, s, x.data(), y.data(), pool);
    } else {
      averagePool2dNhwcWith(variant, s, kind == Kind::AverageIncludePad, x.data(), y.data(), pool);
    }
    // Max is exact; a mean of at most 49 floats in [-1, 1] is within 49 ulps of 1.
    checkClose(y, referencePool(s, kind, x), kind == Kind::Max ? 0.0 : 50 * FLT_EPSILON);
  }
}

TEST(PoolNhwc, WindowedPoolsMatchReference) {
  ThreadPool twoThreads(2);
  ThreadPool threeThreads(3);
  const auto variants = runnableVariants();
  ASSERT_FALSE(variants.empty());
  for (const PoolNhwcVariant *variant : variants) {
    for (Kind kind : {Kind::Max, Kind::Average, Kind::AverageIncludePad}) {
      checkWindowed(*variant, kind, nullptr);
      checkWindowed(*variant, kind, &twoThreads);
      checkWindowed(*variant, kind, &threeThreads);
    }
  }
}

TEST(PoolNhwc, BytesMaxPoolMatchesReference) {
  // Quantized activations (u8 and s8) pooled as bytes: exact, every case, variant and thread count.
  ThreadPool threeThreads(3);
  for (const PoolNhwcVariant *variant : runnableVariants()) {
    for (bool isSigned : {false, true}) {
      for (ThreadPool *pool : {static_cast<ThreadPool *>(nullptr), &threeThreads}) {
        for (const PoolCase &c : cases()) {
          const Pool2dShape &s = c.shape;
          SCOPED_TRACE(::testing::Message() << c.name << " " << variant->name << (isSigned ? " s8" : " u8"));
          const auto noise = randomFloats(s.batch * s.channels * s.inHeight * s.inWidth, uint32_t(s.channels));
          std::vector<uint8_t> x(noise.size());
          std::vector<float> values(noise.size());
          for (size_t i = 0; i < x.size(); ++i) {
            x[i] = uint8_t(int(std::lround(noise[i] * 127.0f)) + (isSigned ? 0 : 128));
            values[i] = isSigned ? float(int8_t(x[i])) : float(x[i]);
          }
          std::vector<uint8_t> y(size_t(s.batch * s.channels * s.outHeight * s.outWidth), 0x5a);
          maxPool2dNhwcBytesWith(*variant, s, x.data(), isSigned, y.data(), pool);
          std::vector<float> got(y.size());
          for (size_t i = 0; i < y.size(); ++i) got[i] = isSigned ? float(int8_t(y[i])) : float(y[i]);
          checkClose(got, referencePool(s, Kind::Max, values), 0.0);
        }
      }
    }
  }
}

TEST(PoolNhwc, MatchesNchwKernelsOnTransposedData) {
  ThreadPool twoThreads(2);
  for (const PoolCase &c : cases()) {
    const Pool2dShape &s = c.shape;
    SCOPED_TRACE(c.name);
    const int64_t inPlane = s.inHeight * s.inWidth, outPlane = s.outHeight * s.outWidth;
    const auto xNchw = randomFloats(s.batch * s.channels * inPlane, 3);
    const auto x = transposeChannels(xNchw, s.batch, s.channels, inPlane, /*toNchw=*/false);
    std::vector<float> want(size_t(s.batch * s.channels * outPlane)), got(want.size());
    maxPool2d(s, xNchw.data(), want.data(), &twoThreads);
    maxPool2dNhwc(s, x.data(), got.data(), &twoThreads);
    EXPECT_EQ(transposeChannels(got, s.batch, s.channels, outPlane, /*toNchw=*/true), want) << "max";
    averagePool2d(s, /*countIncludePad=*/true, xNchw.data(), want.data(), &twoThreads);
    averagePool2dNhwc(s, /*countIncludePad=*/true, x.data(), got.data(), &twoThreads);
    const auto back = transposeChannels(got, s.batch, s.channels, outPlane, /*toNchw=*/true);
    for (size_t i = 0; i < want.size(); ++i) ASSERT_NEAR(back[i], want[i], 50 * FLT_EPSILON) << "average " << i;
  }
}

TEST(PoolNhwc, GlobalAveragePoolMatchesReference) {
  ThreadPool twoThreads(2);
  ThreadPool threeThreads(3);
  for (const PoolNhwcVariant *variant : runnableVariants()) {
    for (int64_t plane : {1, 7, 49, 67}) {
      for (int64_t channels : {1, 3, 17, 64, 144, 1280}) {
        for (ThreadPool *pool : {static_cast<ThreadPool *>(nullptr), &twoThreads, &threeThreads}) {
          SCOPED_TRACE(::testing::Message() << variant->name << " plane " << plane << " channels " << channels
                                          << " threads=" << (pool ? pool->size() : 1));
          const int64_t batch = 2;
          const auto x = randomFloats(batch * plane * channels, uint32_t(plane * 7 + channels));
          std::vector<double> want;
          for (int64_t n = 0; n < batch; ++n) {
            for (int64_t c = 0; c < channels; ++c) {
              double sum = 0;
              for (int64_t p = 0; p < plane; ++p) sum += x[size_t((n * plane + p) * channels + c)];
              want.push_back(sum / double(plane));
            }
          }
          std::vector<float> y(size_t(batch * channels), -12345.0f);
          globalAveragePoolNhwcWith(*variant, batch, plane, channels, x.data(), y.data(), pool);
          // A float sum of n terms in [-1, 1] errs by at most n * FLT_EPSILON times n; the mean by n ulps.
          checkClose(y, want, double(plane + 2) * FLT_EPSILON);
        }
      }
    }
  }
}

}  // namespace
}  // namespace tessel::cpu
