// Convolutions and pools on the accelerator, whole small models checked against the reference: the
// dense implicit GEMM (3x3 with pads, 1x1, strides, several channel tiles, several PSUM chunks per
// image, several images per chunk), FusedConv epilogues (bias, residual, Relu, Clip, HardSwish,
// HardSigmoid), the folded stem (top and bottom edge rows), depthwise stencils, MaxPool, AveragePool,
// GlobalAveragePool, and the host fallback of a grouped convolution.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "targets/nc/compiler/nc_model_check.h"

namespace tessel::nc::compiler {
namespace {

std::string sizesText(const std::vector<int64_t> &sizes) { return fmt::format("[{}]", fmt::join(sizes, ",")); }

/// One convolution node: X [N, C, H, W], W [M, C / group, KH, KW], and its attributes.
struct ConvCase {
  std::vector<int64_t> x, w;
  int64_t stride = 1, pad = 0, group = 1;
  bool bias = true;
  bool residual = false;       // FusedConv's Z, a graph input of Y's shape.
  std::string activation;      // FusedConv's activation attributes, e.g. `activation = "Relu"`.
  bool fused = false;          // tessel.FusedConv rather than Conv.

  std::vector<int64_t> y() const {
    auto out = [&](int64_t in, int64_t k) { return (in + 2 * pad - k) / stride + 1; };
    return {x[0], w[0], out(x[2], w[2]), out(x[3], w[3])};
  }
};

std::string convModel(const ConvCase &c) {
  std::string inputs = fmt::format("%x: f32{}", sizesText(c.x));
  if (c.residual) inputs += fmt::format(", %z: f32{}", sizesText(c.y()));
  // Weights scaled by 1/sqrt(fan-in) keep outputs near [-1, 1], where the bf16 operands' rounding
  // stays inside the tolerance.
  const float scale = 1.0f / std::sqrt(static_cast<float>(c.w[1] * c.w[2] * c.w[3]));
  std::string body = fmt::format("  const %w = {}\n", denseText(c.w, 11, scale));
  std::string args = "%x, %w";
  if (c.bias) {
    body += fmt::format("  const %b = {}\n", denseText({c.w[0]}, 12, 0.5f));
    args += ", %b";
  } else if (c.residual) {
    args += ", _";
  }
  if (c.residual) args += ", %z";
  std::string attributes = fmt::format("strides = [{0}, {0}], pads = [{1}, {1}, {1}, {1}]", c.stride, c.pad);
  if (c.group != 1) attributes += fmt::format(", group = {}", c.group);
  if (!c.activation.empty()) attributes += ", " + c.activation;
  return fmt::format(
      "model opset(ai.onnx=17, tessel=1) ir_version=8 {{\n"
      "func @main({}) -> (%y: f32{}) {{\n{}  %y = {}({}) {{{}}}\n  return %y\n}}\n}}\n",
      inputs, sizesText(c.y()), body, c.fused || c.residual || !c.activation.empty() ? "tessel.FusedConv" : "Conv",
      args, attributes);
}

/// Checks `ir` on nc-v2 (and nc-v3 when asked); every node on the device unless `hostNodes` says.
void expectMatches(const std::string &ir, int hostNodes = 0, bool alsoV3 = false) {
  SCOPED_TRACE(ir.substr(0, 300));
  std::vector<std::string> targets = {"nc-v2"};
  if (alsoV3) targets.push_back("nc-v3");
  for (const std::string &target : targets) {
    NcCompileOptions options;
    options.target = target;
    auto check = checkModelOnNc(ir, options);
    ASSERT_TRUE(check.ok()) << target << ": " << check.diag().str();
    EXPECT_LE(check->maxErrorRatio, 1.0) << target << ": " << check->worst;
    EXPECT_EQ(check->hostNodes, hostNodes) << target;
    EXPECT_GT(check->simulatedUs, 0.0) << target;
  }
}

ConvCase conv(std::vector<int64_t> x, std::vector<int64_t> w, int64_t stride, int64_t pad) {
  ConvCase c;
  c.x = std::move(x);
  c.w = std::move(w);
  c.stride = stride;
  c.pad = pad;
  return c;
}

TEST(ConvLowering, Dense3x3Stride1Pad1) { expectMatches(convModel(conv({1, 16, 12, 12}, {32, 16, 3, 3}, 1, 1)), 0, true); }

TEST(ConvLowering, OneByOneSeveralImagesPerChunk) {
  ConvCase c = conv({3, 24, 7, 9}, {40, 24, 1, 1}, 1, 0);
  c.bias = false;
  expectMatches(convModel(c));
}

TEST(ConvLowering, Stride2) {
  expectMatches(convModel(conv({1, 32, 15, 15}, {48, 32, 3, 3}, 2, 1)));
  expectMatches(convModel(conv({1, 32, 14, 14}, {64, 32, 1, 1}, 2, 0)));  // ResNet's downsample shortcut.
}

TEST(ConvLowering, FusedResidualRelu) {
  ConvCase c = conv({2, 32, 10, 10}, {32, 32, 3, 3}, 1, 1);
  c.residual = true;
  c.activation = R"(activation = "Relu")";
  expectMatches(convModel(c));
  c.bias = false;  // Residual without a bias: an omitted optional input.
  expectMatches(convModel(c));
}

TEST(ConvLowering, SeveralChannelTiles) {
  // Cin 160 and Cout 200: two contraction tiles and two output tiles, the last of each ragged.
  ConvCase c = conv({1, 160, 8, 8}, {200, 160, 3, 3}, 1, 1);
  c.activation = R"(activation = "Relu")";
  expectMatches(convModel(c));
}

TEST(ConvLowering, SpatialChunks) {
  // 32x32 outputs: 1024 positions, two PSUM banks per image; the padded copy in several bands.
  expectMatches(convModel(conv({1, 8, 32, 32}, {16, 8, 3, 3}, 1, 1)));
}

TEST(ConvLowering, FoldedStem) {
  // ResNet's stem shape, smaller: 3 channels, 7x7 stride 2 pad 3. Rows 0 and 1 miss leading tap
  // rows (the reversed tile), the last row trailing ones.
  ConvCase c = conv({1, 3, 32, 32}, {16, 3, 7, 7}, 2, 3);
  c.activation = R"(activation = "Relu")";
  expectMatches(convModel(c), 0, true);
  // Two images and several row bands of 64-wide rows.
  expectMatches(convModel(conv({2, 3, 64, 64}, {24, 3, 7, 7}, 2, 3)));
  // MobileNetV2's stem: 3x3 stride 2 pad 1.
  expectMatches(convModel(conv({1, 3, 32, 32}, {32, 3, 3, 3}, 2, 1)));
}

TEST(ConvLowering, DepthwiseClip) {
  for (int64_t stride : {1, 2}) {
    ConvCase c = conv({1, 32, 14, 14}, {32, 1, 3, 3}, stride, 1);
    c.group = 32;
    c.activation = R"(activation = "Clip", activation_params = [0.0, 6.0])";
    expectMatches(convModel(c), 0, stride == 1);
  }
  // 144 channels (two partition blocks), 48x48 images: more than one stencil chunk per image.
  ConvCase c = conv({1, 144, 48, 48}, {144, 1, 3, 3}, 1, 1);
  c.group = 144;
  c.fused = true;
  expectMatches(convModel(c));
  // 2x2 with pad 1: no tap's window is inside X for every output, so the sum starts from zeros.
  ConvCase even = conv({1, 8, 7, 7}, {8, 1, 2, 2}, 1, 1);
  even.group = 8;
  expectMatches(convModel(even));
}

TEST(ConvLowering, HardSwishAndHardSigmoidEpilogues) {
  // MobileNetV3 and PP-OCR's blocks: HardSwish after a dense conv, HardSigmoid after a depthwise one.
  ConvCase dense = conv({1, 16, 12, 12}, {32, 16, 3, 3}, 1, 1);
  dense.activation = R"(activation = "HardSwish")";
  expectMatches(convModel(dense));
  ConvCase depthwise = conv({1, 32, 14, 14}, {32, 1, 3, 3}, 2, 1);
  depthwise.group = 32;
  depthwise.activation = R"(activation = "HardSigmoid", activation_params = [0.2, 0.5])";
  expectMatches(convModel(depthwise));
}

TEST(ConvLowering, GroupedConvRunsOnHost) {
  ConvCase c = conv({1, 16, 8, 8}, {16, 8, 3, 3}, 1, 1);
  c.group = 2;
  auto check = checkModelOnNc(convModel(c));
  ASSERT_TRUE(check.ok()) << check.diag().str();
  EXPECT_LE(check->maxErrorRatio, 1.0) << check->worst;
  EXPECT_GT(check->hostNodes, 0);
}

std::string poolModel(const std::vector<int64_t> &x, const std::vector<int64_t> &y, const std::string &op) {
  return fmt::format(
      "model opset(ai.onnx=17, tessel=1) ir_version=8 {{\n"
      "func @main(%x: f32{}) -> (%y: f32{}) {{\n  %y = {}\n  return %y\n}}\n}}\n",
      sizesText(x), sizesText(y), op);
}

TEST(PoolLowering, MaxPool3x3Stride2Pad1) {
  // 15x15 -> 8x8: edge outputs have windows cut by the padding on every side.
  expectMatches(
      poolModel({1, 16, 15, 15}, {1, 16, 8, 8}, "MaxPool(%x) {kernel_shape = [3, 3], strides = [2, 2], pads = [1, 1, 1, 1]}"),
      0, true);
  // ResNet's, with 136 channels (two blocks) and two images.
  expectMatches(
      poolModel({2, 136, 24, 24}, {2, 136, 12, 12}, "MaxPool(%x) {kernel_shape = [3, 3], strides = [2, 2], pads = [1, 1, 1, 1]}"));
}

TEST(PoolLowering, MaxPoolWithoutAnInsideTap) {
  // 2x2 with pad 1: every tap misses an edge, so the max starts from -inf.
  expectMatches(poolModel({1, 8, 5, 5}, {1, 8, 6, 6}, "MaxPool(%x) {kernel_shape = [2, 2], pads = [1, 1, 1, 1]}"));
}

TEST(PoolLowering, AveragePoolPadding) {
  for (int countIncludePad : {0, 1})
    expectMatches(poolModel({1, 8, 9, 9}, {1, 8, 9, 9},
                            fmt::format("AveragePool(%x) {{kernel_shape = [3, 3], pads = [1, 1, 1, 1], "
                                        "count_include_pad = {}}}",
                                        countIncludePad)));
  expectMatches(poolModel({2, 8, 8, 8}, {2, 8, 4, 4}, "AveragePool(%x) {kernel_shape = [2, 2], strides = [2, 2]}"));
}

TEST(PoolLowering, GlobalAveragePool) {
  expectMatches(poolModel({2, 160, 7, 7}, {2, 160, 1, 1}, "GlobalAveragePool(%x)"), 0, true);
}

TEST(PoolLowering, RejectsCeilMode) {
  auto check = checkModelOnNc(
      poolModel({1, 8, 8, 8}, {1, 8, 4, 4}, "MaxPool(%x) {kernel_shape = [3, 3], strides = [2, 2], ceil_mode = 1}"));
  ASSERT_TRUE(check.ok()) << check.diag().str();
  EXPECT_LE(check->maxErrorRatio, 1.0) << check->worst;
  EXPECT_GT(check->hostNodes, 0);
}

}  // namespace
}  // namespace tessel::nc::compiler
