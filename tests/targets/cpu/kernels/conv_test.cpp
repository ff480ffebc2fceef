// The convolution kernels (im2col/1x1 GEMM and depthwise) against a double-precision direct
// convolution, at ragged shapes: odd sizes, asymmetric pads, strides, dilations, groups, output
// channels that are not a multiple of any register tile, chunked column matrices, and every
// epilogue (bias, residual, in-place residual, activation), on one thread and on two.
//
// Tolerance: |y - ref| <= 1e-6 + (K + 4) * FLT_EPSILON * (sum |x||w| + |b| + |z|), a float sum's
// worst-case bound with room to spare; a lost or doubled tap is off by about 1/K of that sum.
#include <gtest/gtest.h>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "kernel_shape_util.h"
#include "support/thread_pool.h"
#include "targets/cpu/kernels/conv.h"
#include "targets/cpu/kernels/depthwise_conv.h"

namespace tessel::cpu {
namespace {

struct ConvCase {
  std::string name;
  Conv2dShape shape;
};

ConvCase makeCase(std::string name, int64_t batch, int64_t inChannels, int64_t height, int64_t width,
                  int64_t outChannels, int64_t group, int64_t kernelH, int64_t kernelW, int64_t stride,
                  int64_t dilation, int64_t padTop, int64_t padLeft, int64_t padBottom, int64_t padRight) {
  return {std::move(name), testing::convShape(batch, inChannels, height, width, outChannels, group, kernelH, kernelW,
                                              stride, dilation, padTop, padLeft, padBottom, padRight)};
}

std::vector<float> randomFloats(int64_t count, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> v(static_cast<size_t>(count));
  for (float &x : v) x = dist(rng);
  return v;
}

/// The reference: y and a bound on each element's rounding error.
void referenceConv(const Conv2dShape &s, const std::vector<float> &x, const std::vector<float> &w, const float *bias,
                   const float *residual, const Activation &act, std::vector<double> *y,
                   std::vector<double> *bound) {
  const int64_t inPerGroup = s.inPerGroup(), outPerGroup = s.outPerGroup();
  y->assign(size_t(s.batch * s.outChannels * s.outPlane()), 0.0);
  bound->assign(y->size(), 0.0);
  const double eps = double(s.columnRows() + 4) * FLT_EPSILON;
  size_t flat = 0;
  for (int64_t n = 0; n < s.batch; ++n) {
    for (int64_t m = 0; m < s.outChannels; ++m) {
      const int64_t firstChannel = (m / outPerGroup) * inPerGroup;
      for (int64_t oh = 0; oh < s.outHeight; ++oh) {
        for (int64_t ow = 0; ow < s.outWidth; ++ow, ++flat) {
          double acc = bias != nullptr ? bias[m] : 0.0;
          double magnitude = std::fabs(acc);
          for (int64_t c = 0; c < inPerGroup; ++c) {
            for (int64_t kh = 0; kh < s.kernelHeight; ++kh) {
              const int64_t ih = oh * s.strideHeight + kh * s.dilationHeight - s.padTop;
              if (ih < 0 || ih >= s.inHeight) continue;
              for (int64_t kw = 0; kw < s.kernelWidth; ++kw) {
                const int64_t iw = ow * s.strideWidth + kw * s.dilationWidth - s.padLeft;
                if (iw < 0 || iw >= s.inWidth) continue;
                const double xv = x[size_t(((n * s.inChannels + firstChannel + c) * s.inHeight + ih) * s.inWidth + iw)];
                const double wv = w[size_t(((m * inPerGroup + c) * s.kernelHeight + kh) * s.kernelWidth + kw)];
                acc += xv * wv;
                magnitude += std::fabs(xv * wv);
              }
            }
          }
          if (residual != nullptr) {
            acc += residual[flat];
            magnitude += std::fabs(residual[flat]);
          }
          (*y)[flat] = act.apply(acc);
          (*bound)[flat] = 1e-6 + eps * magnitude;
        }
      }
    }
  }
}

enum class EpilogueMode { None, BiasRelu, BiasResidualClip, InPlaceResidual };

const char *modeName(EpilogueMode mode) {
  switch (mode) {
    case EpilogueMode::None: return "none";
    case EpilogueMode::BiasRelu: return "bias+relu";
    case EpilogueMode::BiasResidualClip: return "bias+residual+clip";
    case EpilogueMode::InPlaceResidual: return "in-place residual";
  }
  return "?";
}

using ConvRunner = void (*)(const Conv2dShape &s, const float *x, const float *w, const ConvEpilogue &epilogue,
                            float *y, ThreadPool *pool);

void runGemmConv(const Conv2dShape &s, const float *x, const float *w, const ConvEpilogue &epilogue, float *y,
                 ThreadPool *pool) {
  const ConvGemmPlan plan = planConvGemm(s, pool != nullptr ? pool->size() : 1);
  auto *packed = static_cast<float *>(std::aligned_alloc(64, convPackedWeightsBytes(plan)));
  auto *scratch = static_cast<std::byte *>(std::aligned_alloc(64, std::max<size_t>(convGemmScratchBytes(plan), 64)));
  packConvWeights(plan, w, packed);
  convGemm(plan, x, packed, epilogue, y, scratch, pool);
  std::free(packed);
  std::free(scratch);
}

void runDepthwiseConv(const Conv2dShape &s, const float *x, const float *w, const ConvEpilogue &epilogue, float *y,
                      ThreadPool *pool) {
  depthwiseConv2d(s, x, w, epilogue, y, pool);
}

void checkCase(const ConvCase &c, ConvRunner runner, EpilogueMode mode, ThreadPool *pool) {
  const Conv2dShape &s = c.shape;
  SCOPED_TRACE(::testing::Message() << c.name << " epilogue=" << modeName(mode)
                                  << " threads=" << (pool != nullptr ? pool->size() : 1));
  const uint32_t seed = uint32_t(s.inChannels * 131 + s.outChannels * 17 + s.inHeight * 7 + s.kernelWidth);
  const auto x = randomFloats(s.batch * s.inChannels * s.inPlane(), seed);
  const auto w = randomFloats(s.outChannels * s.columnRows(), seed + 1);
  const auto bias = randomFloats(s.outChannels, seed + 2);
  const auto residual = randomFloats(s.batch * s.outChannels * s.outPlane(), seed + 3);
  std::vector<float> y(residual.size(), -12345.0f);

  ConvEpilogue epilogue;
  if (mode == EpilogueMode::BiasRelu || mode == EpilogueMode::BiasResidualClip) epilogue.bias = bias.data();
  if (mode == EpilogueMode::BiasRelu) epilogue.activation = {ActivationKind::Relu, 0, 0};
  if (mode == EpilogueMode::BiasResidualClip) {
    epilogue.residual = residual.data();
    epilogue.activation = {ActivationKind::Clip, 0.0f, 0.5f};
  }
  if (mode == EpilogueMode::InPlaceResidual) {
    y = residual;
    epilogue.residual = y.data();
  }
  std::vector<double> want, bound;
  referenceConv(s, x, w, epilogue.bias, epilogue.residual != nullptr ? residual.data() : nullptr, epilogue.activation,
                &want, &bound);
  runner(s, x.data(), w.data(), epilogue, y.data(), pool);

  int reported = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    if (std::fabs(double(y[i]) - want[i]) <= bound[i]) continue;
    ADD_FAILURE() << "element " << i << ": got " << y[i] << ", want " << want[i] << " (bound " << bound[i] << ")";
    if (++reported == 5) return;
  }
}

constexpr EpilogueMode kModes[] = {EpilogueMode::None, EpilogueMode::BiasRelu, EpilogueMode::BiasResidualClip,
                                   EpilogueMode::InPlaceResidual};

std::vector<ConvCase> gemmCases() {
  return {
      // name, N, Cin, H, W, Cout, group, KH, KW, stride, dilation, pads (top, left, bottom, right)
      makeCase("1x1 direct", 2, 5, 9, 11, 7, 1, 1, 1, 1, 1, 0, 0, 0, 0),
      makeCase("1x1 stride 2", 2, 6, 9, 11, 13, 1, 1, 1, 2, 1, 0, 0, 0, 0),
      makeCase("1x1 padded", 1, 3, 5, 4, 5, 1, 1, 1, 1, 1, 1, 0, 0, 1),
      makeCase("3x3 pad 1", 1, 4, 13, 17, 37, 1, 3, 3, 1, 1, 1, 1, 1, 1),
      makeCase("3x3 stride 2 asymmetric pads", 2, 5, 12, 15, 19, 1, 3, 3, 2, 1, 0, 1, 1, 0),
      makeCase("7x7 stride 2 stem", 1, 3, 23, 21, 10, 1, 7, 7, 2, 1, 3, 3, 3, 3),
      makeCase("3x3 dilation 2", 1, 3, 11, 10, 9, 1, 3, 3, 1, 2, 2, 2, 2, 2),
      makeCase("grouped 3", 2, 6, 7, 9, 9, 3, 3, 3, 1, 1, 1, 1, 1, 1),
      makeCase("grouped 2 stride 2", 1, 8, 10, 9, 14, 2, 3, 3, 2, 1, 1, 1, 1, 1),
      makeCase("4x4 patches", 2, 3, 12, 12, 11, 1, 4, 4, 4, 1, 0, 0, 0, 0),
      makeCase("wide kernel 1x5", 1, 2, 1, 19, 7, 1, 1, 5, 1, 1, 0, 2, 0, 2),
      makeCase("chunked columns", 1, 64, 30, 29, 20, 1, 3, 3, 1, 1, 1, 1, 1, 1),
      makeCase("chunked 1x1 direct", 3, 300, 23, 24, 70, 1, 1, 1, 1, 1, 0, 0, 0, 0),
      makeCase("small plane many channels", 1, 96, 3, 3, 130, 1, 3, 3, 1, 1, 1, 1, 1, 1),
  };
}

std::vector<ConvCase> depthwiseCases() {
  return {
      makeCase("dw 3x3 s1", 2, 5, 9, 13, 5, 5, 3, 3, 1, 1, 1, 1, 1, 1),
      makeCase("dw 3x3 s2", 1, 7, 15, 14, 7, 7, 3, 3, 2, 1, 1, 1, 1, 1),
      makeCase("dw 3x3 s2 asymmetric pads", 1, 4, 16, 16, 4, 4, 3, 3, 2, 1, 0, 0, 1, 1),
      makeCase("dw 5x5 s2", 1, 3, 17, 19, 3, 3, 5, 5, 2, 1, 2, 2, 2, 2),
      makeCase("dw 5x5 s1", 1, 2, 9, 21, 2, 2, 5, 5, 1, 1, 2, 2, 2, 2),
      makeCase("dw 2x3 s1", 1, 3, 6, 10, 3, 3, 2, 3, 1, 1, 0, 1, 1, 1),
      makeCase("dw 3x3 dilation 2", 1, 3, 11, 12, 3, 3, 3, 3, 1, 2, 2, 2, 2, 2),
      makeCase("dw multiplier 2", 2, 3, 8, 7, 6, 3, 3, 3, 1, 1, 1, 1, 1, 1),
      makeCase("dw 4x2 s3", 1, 2, 13, 11, 2, 2, 4, 2, 3, 1, 1, 0, 2, 1),
      makeCase("dw kernel wider than input", 1, 2, 2, 2, 2, 2, 3, 3, 1, 1, 1, 1, 1, 1),
      makeCase("dw 7x7 one row", 1, 3, 1, 40, 3, 3, 1, 7, 1, 1, 0, 3, 0, 3),
      makeCase("dw wide rows", 1, 2, 5, 67, 2, 2, 3, 3, 1, 1, 1, 1, 1, 1),
  };
}

TEST(ConvGemm, MatchesDirectConvolution) {
  ThreadPool twoThreads(2);
  for (const ConvCase &c : gemmCases()) {
    for (EpilogueMode mode : kModes) {
      checkCase(c, &runGemmConv, mode, nullptr);
      checkCase(c, &runGemmConv, mode, &twoThreads);
    }
  }
}

TEST(ConvGemm, BatchedSplitsItemsOverThreads) {
  // Eight images of a chunked layer: enough items that the plan splits them over threads.
  ConvCase c = makeCase("batched", 8, 16, 20, 20, 24, 1, 3, 3, 1, 1, 1, 1, 1, 1);
  const ConvGemmPlan plan = planConvGemm(c.shape, 2);
  EXPECT_TRUE(plan.splitItems);
  EXPECT_EQ(plan.slots, 2);
  ThreadPool twoThreads(2);
  checkCase(c, &runGemmConv, EpilogueMode::BiasResidualClip, &twoThreads);
}

TEST(ConvGemm, OneItemLetsTheGemmSplit) {
  // One image, one small plane: nothing to split but the product itself.
  ConvCase c = makeCase("one item", 1, 64, 7, 7, 96, 1, 3, 3, 1, 1, 1, 1, 1, 1);
  const ConvGemmPlan plan = planConvGemm(c.shape, 2);
  EXPECT_FALSE(plan.splitItems);
  ThreadPool twoThreads(2);
  checkCase(c, &runGemmConv, EpilogueMode::BiasRelu, &twoThreads);
}

TEST(ConvGemm, PlanReadsOneByOneInputDirectly) {
  EXPECT_TRUE(planConvGemm(makeCase("", 1, 8, 5, 5, 8, 1, 1, 1, 1, 1, 0, 0, 0, 0).shape, 1).readsInputDirectly);
  EXPECT_FALSE(planConvGemm(makeCase("", 1, 8, 5, 5, 8, 1, 1, 1, 2, 1, 0, 0, 0, 0).shape, 1).readsInputDirectly);
  EXPECT_FALSE(planConvGemm(makeCase("", 1, 8, 5, 5, 8, 1, 1, 1, 1, 1, 1, 1, 1, 1).shape, 1).readsInputDirectly);
  EXPECT_FALSE(planConvGemm(makeCase("", 1, 8, 5, 5, 8, 1, 3, 3, 1, 1, 1, 1, 1, 1).shape, 1).readsInputDirectly);
}

TEST(DepthwiseConv, MatchesDirectConvolution) {
  ThreadPool twoThreads(2);
  for (const ConvCase &c : depthwiseCases()) {
    ASSERT_TRUE(isDepthwise(c.shape)) << c.name;
    for (EpilogueMode mode : kModes) {
      checkCase(c, &runDepthwiseConv, mode, nullptr);
      checkCase(c, &runDepthwiseConv, mode, &twoThreads);
    }
  }
}

TEST(DepthwiseConv, RecognizesOnlyOneChannelPerGroup) {
  EXPECT_TRUE(isDepthwise(makeCase("", 1, 4, 5, 5, 8, 4, 3, 3, 1, 1, 1, 1, 1, 1).shape));
  EXPECT_FALSE(isDepthwise(makeCase("", 1, 4, 5, 5, 4, 2, 3, 3, 1, 1, 1, 1, 1, 1).shape));
  EXPECT_FALSE(isDepthwise(makeCase("", 1, 1, 5, 5, 4, 1, 3, 3, 1, 1, 1, 1, 1, 1).shape));
}

}  // namespace
}  // namespace tessel::cpu
