// The pooling kernels against a double-precision reference: MaxPool and AveragePool (with and
// without count_include_pad) at odd sizes, asymmetric pads, strides, dilations and ceil-mode
// output sizes whose last window reaches past the end pad; the global pools at plane sizes below
// and above the vector width. One thread and two.
#include <gtest/gtest.h>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "support/thread_pool.h"
#include "kernel_shape_util.h"
#include "targets/cpu/kernels/pool.h"

namespace tessel::cpu {
namespace {

using testing::PoolCase;

std::vector<PoolCase> cases() {
  return {
      // name, N, C, H, W, KH, KW, stride, dilation, pads (top, left, bottom, right), ceil_mode
      testing::poolCase("resnet maxpool 3x3/2", 1, 3, 17, 19, 3, 3, 2, 1, 1, 1, 1, 1, false),
      testing::poolCase("2x2/2", 2, 4, 9, 11, 2, 2, 2, 1, 0, 0, 0, 0, false),
      testing::poolCase("2x2/2 ceil", 2, 4, 9, 11, 2, 2, 2, 1, 0, 0, 0, 0, true),
      testing::poolCase("3x3/2 ceil padded", 1, 2, 10, 13, 3, 3, 2, 1, 1, 1, 1, 1, true),
      testing::poolCase("3x3/1 asymmetric pads", 1, 3, 7, 8, 3, 3, 1, 1, 0, 2, 1, 0, false),
      testing::poolCase("dilated 3x3", 1, 2, 12, 11, 3, 3, 1, 2, 2, 2, 2, 2, false),
      testing::poolCase("5x4/3", 1, 2, 16, 14, 5, 4, 3, 1, 2, 1, 2, 3, false),
      testing::poolCase("one row", 1, 2, 1, 30, 1, 3, 2, 1, 0, 1, 0, 1, true),
      testing::poolCase("wide rows", 1, 1, 4, 70, 3, 3, 1, 1, 1, 1, 1, 1, false),
  };
}

std::vector<float> randomFloats(int64_t count, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> v(static_cast<size_t>(count));
  for (float &x : v) x = dist(rng);
  return v;
}

enum class Kind { Max, Average, AverageIncludePad };

/// Direct windowed pool in double.
std::vector<double> referencePool(const Pool2dShape &s, Kind kind, const std::vector<float> &x) {
  std::vector<double> y;
  for (int64_t p = 0; p < s.batch * s.channels; ++p) {
    const float *plane = x.data() + p * s.inHeight * s.inWidth;
    for (int64_t oh = 0; oh < s.outHeight; ++oh) {
      for (int64_t ow = 0; ow < s.outWidth; ++ow) {
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
            const double v = plane[ih * s.inWidth + iw];
            max = std::max(max, v);
            sum += v;
            ++inside;
          }
        }
        y.push_back(kind == Kind::Max ? max : sum / double(kind == Kind::Average ? inside : padded));
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

void checkWindowed(Kind kind, ThreadPool *pool) {
  for (const PoolCase &c : cases()) {
    const Pool2dShape &s = c.shape;
    SCOPED_TRACE(::testing::Message() << c.name << " kind=" << int(kind) << " threads=" << (pool ? pool->size() : 1));
    const auto x = randomFloats(s.batch * s.channels * s.inHeight * s.inWidth, uint32_t(s.inHeight * 31 + s.inWidth));
    std::vector<float> y(size_t(s.batch * s.channels * s.outHeight * s.outWidth), -12345.0f);
    if (kind == Kind::Max) {
      maxPool2d(s, x.data(), y.data(), pool);
    } else {
      averagePool2d(s, kind == Kind::AverageIncludePad, x.data(), y.data(), pool);
    }
    // Max is exact; a mean of at most 20 floats in [-1, 1] is within 20 ulps of 1.
    checkClose(y, referencePool(s, kind, x), kind == Kind::Max ? 0.0 : 20 * FLT_EPSILON);
  }
}

TEST(Pool, MaxPoolMatchesReference) {
  ThreadPool twoThreads(2);
  checkWindowed(Kind::Max, nullptr);
  checkWindowed(Kind::Max, &twoThreads);
}

TEST(Pool, AveragePoolMatchesReference) {
  ThreadPool twoThreads(2);
  checkWindowed(Kind::Average, nullptr);
  checkWindowed(Kind::Average, &twoThreads);
  checkWindowed(Kind::AverageIncludePad, nullptr);
  checkWindowed(Kind::AverageIncludePad, &twoThreads);
}

TEST(Pool, GlobalPoolsMatchReference) {
  ThreadPool twoThreads(2);
  for (int64_t planeSize : {1, 7, 16, 49, 67, 3136}) {
    for (ThreadPool *pool : {static_cast<ThreadPool *>(nullptr), &twoThreads}) {
      SCOPED_TRACE(::testing::Message() << "plane " << planeSize << " threads=" << (pool ? pool->size() : 1));
      const int64_t planes = 37;
      const auto x = randomFloats(planes * planeSize, uint32_t(planeSize));
      std::vector<double> wantMean, wantMax;
      for (int64_t p = 0; p < planes; ++p) {
        double sum = 0, max = -INFINITY;
        for (int64_t i = 0; i < planeSize; ++i) {
          sum += x[size_t(p * planeSize + i)];
          max = std::max(max, double(x[size_t(p * planeSize + i)]));
        }
        wantMean.push_back(sum / double(planeSize));
        wantMax.push_back(max);
      }
      std::vector<float> y(static_cast<size_t>(planes));
      globalAveragePool(planes, planeSize, x.data(), y.data(), pool);
      // A float sum of n terms in [-1, 1] errs by at most n * FLT_EPSILON times n; the mean by n ulps.
      checkClose(y, wantMean, double(planeSize + 2) * FLT_EPSILON);
      globalMaxPool(planes, planeSize, x.data(), y.data(), pool);
      checkClose(y, wantMax, 0.0);
    }
  }
}

}  // namespace
}  // namespace tessel::cpu
