// The channels-last depthwise convolution against a double-precision direct convolution and against
// the NCHW kernel on transposed data: channel counts that are not a multiple of any vector width
// (2, 3, 17, 33) and some that are (16, 48, 144), 3x3 and 5x5 kernels (the register-resident taps)
// and others (the general loop), strides 1, 2 and 3, asymmetric pads, dilation 2, batch 2, planes
// narrower than the kernel, every epilogue (bias, residual, residual == y, each activation kind),
// one thread and more, and every ISA variant the host can run.
//
// Tolerance: |y - ref| <= 1e-6 + (K + 4) * FLT_EPSILON * (sum |x||w| + |b| + |z|), as for the NCHW
// kernel, plus 2e-6 relative for the activations computed with the vector math approximations.
#include <gtest/gtest.h>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <string>
#include <vector>

#include "kernel_shape_util.h"
#include "nhwc_test_util.h"
#include "support/thread_pool.h"
#include "targets/cpu/kernels/conv.h"
#include "targets/cpu/kernels/cpu_features.h"
#include "targets/cpu/kernels/depthwise_conv.h"

namespace tessel::cpu {
namespace {

using testing::randomFloats;
using testing::transposeChannels;

struct DepthwiseCase {
  std::string name;
  Conv2dShape shape;
};

/// A depthwise shape with its output sizes derived from the end pads (floor mode).
DepthwiseCase makeCase(std::string name, int64_t batch, int64_t channels, int64_t height, int64_t width, int64_t kernelH,
                int64_t kernelW, int64_t stride, int64_t dilation, int64_t padTop, int64_t padLeft, int64_t padBottom,
                int64_t padRight) {
  return {std::move(name), testing::convShape(batch, channels, height, width, channels, channels, kernelH, kernelW,
                                              stride, dilation, padTop, padLeft, padBottom, padRight)};
}

std::vector<DepthwiseCase> cases() {
  return {
      // name, N, C, H, W, KH, KW, stride, dilation, pads (top, left, bottom, right)
      makeCase("3x3 s1 C17 batch 2", 2, 17, 9, 13, 3, 3, 1, 1, 1, 1, 1, 1),
      makeCase("3x3 s2 C33", 1, 33, 15, 14, 3, 3, 2, 1, 1, 1, 1, 1),
      makeCase("3x3 s2 asymmetric pads C3", 2, 3, 16, 16, 3, 3, 2, 1, 0, 0, 1, 1),
      makeCase("3x3 s1 wide rows C32", 1, 32, 5, 37, 3, 3, 1, 1, 1, 1, 1, 1),
      makeCase("3x3 s1 unpadded C16", 2, 16, 6, 21, 3, 3, 1, 1, 0, 0, 0, 0),
      makeCase("3x3 7x7 plane C48", 1, 48, 7, 7, 3, 3, 1, 1, 1, 1, 1, 1),
      makeCase("3x3 s2 7x7 plane C144", 1, 144, 7, 7, 3, 3, 2, 1, 1, 1, 1, 1),
      makeCase("5x5 s1 C144", 1, 144, 9, 10, 5, 5, 1, 1, 2, 2, 2, 2),
      makeCase("5x5 s2 C17 batch 2", 2, 17, 17, 19, 5, 5, 2, 1, 2, 2, 2, 2),
      makeCase("3x3 dilation 2 C33", 1, 33, 11, 12, 3, 3, 1, 2, 2, 2, 2, 2),
      makeCase("3x3 s2 dilation 2 C19", 2, 19, 13, 12, 3, 3, 2, 2, 2, 1, 2, 1),
      makeCase("5x5 dilation 2 C2", 1, 2, 12, 14, 5, 5, 1, 2, 4, 4, 4, 4),
      makeCase("2x3 s1 C3", 1, 3, 6, 10, 2, 3, 1, 1, 0, 1, 1, 1),
      makeCase("4x2 s3 C17", 1, 17, 13, 11, 4, 2, 3, 1, 1, 0, 2, 1),
      makeCase("kernel wider than input C5", 1, 5, 2, 2, 3, 3, 1, 1, 1, 1, 1, 1),
      makeCase("1x7 one row C16", 1, 16, 1, 40, 1, 7, 1, 1, 0, 3, 0, 3),
  };
}

/// The reference on NHWC data: y and a bound on each element's error.
void referenceConv(const Conv2dShape &s, const std::vector<float> &x, const std::vector<float> &w, const float *bias,
                   const float *residual, const Activation &act, std::vector<double> *y,
                   std::vector<double> *bound) {
  const int64_t channels = s.outChannels;
  y->assign(size_t(s.batch * s.outPlane() * channels), 0.0);
  bound->assign(y->size(), 0.0);
  const double eps = double(s.kernelHeight * s.kernelWidth + 4) * FLT_EPSILON;
  for (int64_t n = 0; n < s.batch; ++n) {
    for (int64_t oh = 0; oh < s.outHeight; ++oh) {
      for (int64_t ow = 0; ow < s.outWidth; ++ow) {
        for (int64_t c = 0; c < channels; ++c) {
          const size_t flat = size_t(((n * s.outHeight + oh) * s.outWidth + ow) * channels + c);
          double acc = bias != nullptr ? bias[c] : 0.0;
          double magnitude = std::fabs(acc);
          for (int64_t kh = 0; kh < s.kernelHeight; ++kh) {
            const int64_t ih = oh * s.strideHeight + kh * s.dilationHeight - s.padTop;
            if (ih < 0 || ih >= s.inHeight) continue;
            for (int64_t kw = 0; kw < s.kernelWidth; ++kw) {
              const int64_t iw = ow * s.strideWidth + kw * s.dilationWidth - s.padLeft;
              if (iw < 0 || iw >= s.inWidth) continue;
              const double xv = x[size_t(((n * s.inHeight + ih) * s.inWidth + iw) * channels + c)];
              const double wv = w[size_t((c * s.kernelHeight + kh) * s.kernelWidth + kw)];
              acc += xv * wv;
              magnitude += std::fabs(xv * wv);
            }
          }
          if (residual != nullptr) {
            acc += residual[flat];
            magnitude += std::fabs(residual[flat]);
          }
          (*y)[flat] = act.apply(acc);
          // Every activation here has slope at most 1.13 (GELU), so the sum's bound carries over.
          (*bound)[flat] = 1e-6 + 1.13 * eps * magnitude + 2e-6 * std::fabs((*y)[flat]);
        }
      }
    }
  }
}

struct Epilogue {
  const char *name;
  bool bias;
  bool residual;
  bool inPlace;  // The residual is y itself.
  Activation activation;
};

const Epilogue kEpilogues[] = {
    {"none", false, false, false, {}},
    {"bias+relu", true, false, false, {ActivationKind::Relu, 0, 0}},
    {"bias+residual+clip", true, true, false, {ActivationKind::Clip, 0.0f, 0.5f}},
    {"in-place residual", false, true, true, {}},
    {"bias+in-place residual+relu6", true, true, true, {ActivationKind::Clip, 0.0f, 6.0f}},
    {"bias+sigmoid", true, false, false, {ActivationKind::Sigmoid, 0, 0}},
    {"bias+tanh", true, false, false, {ActivationKind::Tanh, 0, 0}},
    {"residual+silu", false, true, false, {ActivationKind::Silu, 0, 0}},
    {"bias+gelu", true, false, false, {ActivationKind::Gelu, 0, 0}},
    {"bias+in-place residual+gelu tanh", true, true, true, {ActivationKind::GeluTanh, 0, 0}},
    {"bias+leaky relu", true, false, false, {ActivationKind::LeakyRelu, 0.1f, 0}},
};

std::vector<float> packWeights(const Conv2dShape &s, const std::vector<float> &w) {
  // Filled with garbage first: packing must write every float the kernel reads, padding included.
  std::vector<float> packed(depthwiseNhwcWeightsBytes(s) / sizeof(float), 1e30f);
  packDepthwiseWeightsNhwc(s, w.data(), packed.data());
  return packed;
}

void checkCase(const DepthwiseCase &c, const DepthwiseNhwcVariant &variant, const Epilogue &e, ThreadPool *pool) {
  const Conv2dShape &s = c.shape;
  SCOPED_TRACE(::testing::Message() << c.name << " " << variant.name << " epilogue=" << e.name
                                  << " threads=" << (pool != nullptr ? pool->size() : 1));
  const uint32_t seed = uint32_t(s.inChannels * 131 + s.inHeight * 7 + s.kernelWidth);
  const auto x = randomFloats(s.batch * s.inPlane() * s.inChannels, seed);
  const auto w = randomFloats(s.outChannels * s.kernelHeight * s.kernelWidth, seed + 1);
  const auto bias = randomFloats(s.outChannels, seed + 2);
  const auto residual = randomFloats(s.batch * s.outPlane() * s.outChannels, seed + 3);
  std::vector<float> y(residual.size(), -12345.0f);

  ConvEpilogue epilogue;
  epilogue.bias = e.bias ? bias.data() : nullptr;
  epilogue.activation = e.activation;
  if (e.residual) epilogue.residual = residual.data();
  if (e.inPlace) {
    y = residual;
    epilogue.residual = y.data();
  }
  std::vector<double> want, bound;
  referenceConv(s, x, w, epilogue.bias, e.residual ? residual.data() : nullptr, e.activation, &want, &bound);
  const std::vector<float> packed = packWeights(s, w);
  depthwiseConv2dNhwcWith(variant, s, x.data(), packed.data(), epilogue, y.data(), pool);

  int reported = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    if (std::fabs(double(y[i]) - want[i]) <= bound[i]) continue;
    ADD_FAILURE() << "element " << i << ": got " << y[i] << ", want " << want[i] << " (bound " << bound[i] << ")";
    if (++reported == 5) return;
  }
}

std::vector<const DepthwiseNhwcVariant *> runnableVariants() {
  std::vector<const DepthwiseNhwcVariant *> variants;
  for (const DepthwiseNhwcVariant &variant : depthwiseNhwcVariants()) {
    if (hasAll(hostIsa(), variant.isa)) variants.push_back(&variant);
  }
  return variants;
}

TEST(DepthwiseConvNhwc, MatchesDirectConvolution) {
  ThreadPool twoThreads(2);
  ThreadPool threeThreads(3);
  const auto variants = runnableVariants();
  ASSERT_FALSE(variants.empty());
  for (const DepthwiseNhwcVariant *variant : variants) {
    for (const DepthwiseCase &c : cases()) {
      ASSERT_TRUE(isDepthwiseNhwc(c.shape)) << c.name;
      for (const Epilogue &e : kEpilogues) {
        checkCase(c, *variant, e, nullptr);
        checkCase(c, *variant, e, &twoThreads);
      }
      // Three threads split rows and channels into ranges that do not line up with images.
      checkCase(c, *variant, kEpilogues[2], &threeThreads);
    }
  }
}

TEST(DepthwiseConvNhwc, MatchesNchwKernelOnTransposedData) {
  ThreadPool twoThreads(2);
  const DepthwiseCase shapes[] = {
      makeCase("mobilenet 3x3 s1", 2, 96, 14, 14, 3, 3, 1, 1, 1, 1, 1, 1),
      makeCase("mobilenet 3x3 s2", 1, 144, 28, 28, 3, 3, 2, 1, 1, 1, 1, 1),
      makeCase("5x5 s2 C33", 2, 33, 15, 13, 5, 5, 2, 1, 2, 2, 2, 2),
  };
  for (const DepthwiseCase &c : shapes) {
    const Conv2dShape &s = c.shape;
    SCOPED_TRACE(c.name);
    const int64_t channels = s.outChannels;
    const auto xNchw = randomFloats(s.batch * channels * s.inPlane(), 7);
    const auto w = randomFloats(channels * s.kernelHeight * s.kernelWidth, 8);
    const auto bias = randomFloats(channels, 9);
    const auto residualNchw = randomFloats(s.batch * channels * s.outPlane(), 10);
    ConvEpilogue epilogue;
    epilogue.bias = bias.data();
    epilogue.residual = residualNchw.data();
    epilogue.activation = {ActivationKind::Clip, 0.0f, 6.0f};
    std::vector<float> yNchw(residualNchw.size());
    depthwiseConv2d(s, xNchw.data(), w.data(), epilogue, yNchw.data(), &twoThreads);

    const auto x = transposeChannels(xNchw, s.batch, channels, s.inHeight * s.inWidth, /*toNchw=*/false);
    const auto residual =
        transposeChannels(residualNchw, s.batch, channels, s.outHeight * s.outWidth, /*toNchw=*/false);
    const std::vector<float> packed = packWeights(s, w);
    epilogue.residual = residual.data();
    std::vector<float> y(residual.size());
    depthwiseConv2dNhwc(s, x.data(), packed.data(), epilogue, y.data(), &twoThreads);
    const auto back = transposeChannels(y, s.batch, channels, s.outHeight * s.outWidth, /*toNchw=*/true);
    int reported = 0;
    for (size_t i = 0; i < back.size() && reported < 5; ++i) {
      // Both sum at most 25 products and a bias and residual in [-1, 1], in different orders.
      if (std::fabs(back[i] - yNchw[i]) <= 40 * FLT_EPSILON * 27) continue;
      ADD_FAILURE() << "element " << i << ": nhwc " << back[i] << ", nchw " << yNchw[i];
      ++reported;
    }
  }
}

TEST(DepthwiseConvNhwc, RecognizesOnlyOneChannelPerGroupAndNoMultiplier) {
  EXPECT_TRUE(isDepthwiseNhwc(makeCase("", 1, 4, 5, 5, 3, 3, 1, 1, 1, 1, 1, 1).shape));
  Conv2dShape multiplier = makeCase("", 1, 4, 5, 5, 3, 3, 1, 1, 1, 1, 1, 1).shape;
  multiplier.outChannels = 8;
  EXPECT_FALSE(isDepthwiseNhwc(multiplier));
  Conv2dShape grouped = multiplier;
  grouped.outChannels = 4;
  grouped.group = 2;
  EXPECT_FALSE(isDepthwiseNhwc(grouped));
  EXPECT_FALSE(isDepthwiseNhwc(makeCase("", 1, 1, 5, 5, 3, 3, 1, 1, 1, 1, 1, 1).shape));
}

TEST(DepthwiseConvNhwc, PacksTapsChannelsLastWithZeroPadding) {
  const Conv2dShape s = makeCase("", 1, 3, 4, 4, 2, 2, 1, 1, 0, 0, 0, 0).shape;
  ASSERT_EQ(depthwiseNhwcWeightsBytes(s), size_t(4 * 16 * sizeof(float)));
  const std::vector<float> w = {0, 1, 2, 3, 10, 11, 12, 13, 20, 21, 22, 23};  // [C=3, 1, 2, 2]
  const std::vector<float> packed = packWeights(s, w);
  for (int64_t t = 0; t < 4; ++t) {
    for (int64_t c = 0; c < 16; ++c) {
      EXPECT_EQ(packed[size_t(t * 16 + c)], c < 3 ? float(c * 10 + t) : 0.0f) << "tap " << t << " channel " << c;
    }
  }
}

}  // namespace
}  // namespace tessel::cpu
