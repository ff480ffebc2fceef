// Conv and tessel FusedConv on the cpu target against the reference interpreter: the GEMM path
// (1x1 direct, im2col with pads, strides, dilations, groups, auto_pad, 1-D) and the depthwise
// path, with and without bias, every FusedConv epilogue (residual, Relu, Clip), on one and two
// threads; the fallbacks (non-constant W, 3-D) and the diagnostics for a bad node.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "../cpu_test_util.h"

namespace tessel::cpu {
namespace {

using testing::constant;
using testing::CpuCheck;
using testing::expectCpuMatchesReference;

struct ConvModel {
  std::vector<int64_t> x;       // [N, C, spatial...]
  std::vector<int64_t> w;       // [M, C/group, k...]
  bool bias = true;
  std::string attributes;       // Conv's, without braces.
  std::string op = "Conv";      // Or "tessel.FusedConv".
  std::string fusedAttributes;  // activation and activation_params, FusedConv only.
  bool residual = false;        // FusedConv's Z, a second graph input of Y's shape.
  std::vector<int64_t> y;       // Y's sizes, when declared (Z's shape; FusedConv's output).
};

ConvModel convModel(std::vector<int64_t> x, std::vector<int64_t> w, bool bias, std::string attributes) {
  ConvModel m;
  m.x = std::move(x);
  m.w = std::move(w);
  m.bias = bias;
  m.attributes = std::move(attributes);
  return m;
}

/// The same as a tessel FusedConv with `activation` (its attributes, possibly empty).
ConvModel fusedModel(ConvModel m, std::string activation) {
  m.op = "tessel.FusedConv";
  m.fusedAttributes = std::move(activation);
  return m;
}

std::string sizesText(const std::vector<int64_t> &sizes) { return fmt::format("[{}]", fmt::join(sizes, ",")); }

std::string modelText(const ConvModel &m) {
  std::string inputs = fmt::format("%x: f32{}", sizesText(m.x));
  if (m.residual) inputs += fmt::format(", %z: f32{}", sizesText(m.y));
  std::string body = constant("w", m.w, uint32_t(m.w[0] * 7 + m.w[1]));
  std::string args = "%x, %w";
  if (m.bias) {
    body += constant("b", {m.w[0]}, uint32_t(m.w[0]));
    args += ", %b";
  } else if (m.residual) {
    args += ", _";  // An omitted optional input.
  }
  if (m.residual) args += ", %z";
  std::string attributes = m.attributes;
  if (!m.fusedAttributes.empty()) attributes += (attributes.empty() ? "" : ", ") + m.fusedAttributes;
  return fmt::format(
      "model opset(ai.onnx=17, tessel=1) ir_version=8 {{\n"
      "func @main({}) -> (%y: {}) {{\n{}  %y = {}({}) {{{}}}\n  return %y\n}}\n}}\n",
      inputs, m.y.empty() ? "?" : "f32" + sizesText(m.y), body, m.op, args, attributes);
}

void check(const ConvModel &m, int threads = 2) {
  SCOPED_TRACE(modelText(m).substr(0, 400));
  CpuCheck options;
  options.threads = threads;
  expectCpuMatchesReference(modelText(m), options);
}

TEST(CpuConv, OneByOne) {
  check(convModel({2, 16, 7, 9}, {24, 16, 1, 1}, true, ""));
  check(convModel({1, 8, 6, 5}, {13, 8, 1, 1}, false, "strides = [2, 2]"), 1);
}

TEST(CpuConv, ThreeByThreePadsAndStrides) {
  check(convModel({1, 5, 13, 11}, {19, 5, 3, 3}, true, "pads = [1, 1, 1, 1]"));
  check(convModel({2, 4, 12, 15}, {7, 4, 3, 3}, true, "pads = [0, 1, 1, 0], strides = [2, 2]"), 1);
  check(convModel({1, 3, 11, 10}, {6, 3, 3, 3}, false, "dilations = [2, 2], pads = [2, 2, 2, 2]"));
  check(convModel({1, 3, 9, 8}, {5, 3, 3, 3}, true, "auto_pad = \"SAME_UPPER\", strides = [2, 2]"));
}

TEST(CpuConv, StemAndPatches) {
  check(convModel({1, 3, 33, 31}, {8, 3, 7, 7}, true, "pads = [3, 3, 3, 3], strides = [2, 2]"));
  check(convModel({2, 3, 32, 32}, {12, 3, 16, 16}, true, "strides = [16, 16]"));
}

TEST(CpuConv, Groups) {
  check(convModel({2, 6, 7, 9}, {9, 2, 3, 3}, true, "group = 3, pads = [1, 1, 1, 1]"));
  check(convModel({1, 8, 10, 9}, {4, 4, 1, 1}, false, "group = 2"));
}

TEST(CpuConv, Depthwise) {
  check(convModel({2, 6, 9, 13}, {6, 1, 3, 3}, true, "group = 6, pads = [1, 1, 1, 1]"));
  check(convModel({1, 5, 15, 14}, {5, 1, 3, 3}, true, "group = 5, pads = [1, 1, 1, 1], strides = [2, 2]"), 1);
  check(convModel({1, 3, 8, 7}, {6, 1, 5, 5}, false, "group = 3, pads = [2, 1, 2, 3]"));
}

TEST(CpuConv, OneDimensional) {
  check(convModel({2, 4, 23}, {6, 4, 3}, true, "pads = [1, 2], strides = [2]"));
  check(convModel({1, 4, 17}, {4, 1, 5}, true, "group = 4, pads = [2, 2]"));
}

TEST(CpuFusedConv, EpiloguesOnBothPaths) {
  const char *relu = "activation = \"Relu\"";
  const char *clip = "activation = \"Clip\", activation_params = [0.0, 0.5]";
  for (const char *activation : {relu, clip, ""}) {
    ConvModel gemm = fusedModel(convModel({1, 4, 9, 10}, {11, 4, 3, 3}, true, "pads = [1, 1, 1, 1]"), activation);
    gemm.y = {1, 11, 9, 10};
    check(gemm);
    gemm.residual = true;
    check(gemm);
    gemm.bias = false;
    check(gemm, 1);
    ConvModel depthwise = fusedModel(
        convModel({2, 5, 8, 9}, {5, 1, 3, 3}, true, "group = 5, pads = [1, 1, 1, 1], strides = [2, 2]"), activation);
    depthwise.y = {2, 5, 4, 5};
    check(depthwise);
    depthwise.residual = true;
    check(depthwise);
  }
}

/// Compiles `text` at -O3 and counts its FusedConv nodes after the passes.
int fusedConvsAtO3(const std::string &text) {
  auto parsed = parseModel(text, "o3.tsl.txt");
  EXPECT_TRUE(parsed.ok()) << parsed.diag().str();
  if (!parsed.ok()) return -1;
  auto executable = compileCpu(std::move(*parsed), {3, 2});
  EXPECT_TRUE(executable.ok()) << executable.diag().str();
  if (!executable.ok()) return -1;
  int count = 0;
  for (const auto &node : (*executable)->model().graph->nodes()) count += node->opType() == "FusedConv" ? 1 : 0;
  return count;
}

TEST(CpuFusedConv, FromThePassesAtO3) {
  // A residual block's tail (conv, bias, Add of the block input, Relu) and a MobileNetV2
  // depthwise conv with Relu6 (Clip 0..6): fuse-epilogues makes each one FusedConv.
  const std::string residual =
      "model opset(ai.onnx=17) ir_version=8 {\n"
      "func @main(%x: f32[2,8,9,9]) -> (%y: ?) {\n" +
      constant("w", {8, 8, 3, 3}, 3) + constant("b", {8}, 4) +
      "  %c = Conv(%x, %w, %b) {pads = [1, 1, 1, 1]}\n"
      "  %s = Add(%c, %x)\n"
      "  %y = Relu(%s)\n"
      "  return %y\n}\n}\n";
  const std::string depthwise =
      "model opset(ai.onnx=17) ir_version=8 {\n"
      "func @main(%x: f32[1,6,11,10]) -> (%y: ?) {\n" +
      constant("w", {6, 1, 3, 3}, 5) + constant("b", {6}, 6) +
      "  %c = Conv(%x, %w, %b) {group = 6, pads = [1, 1, 1, 1], strides = [2, 2]}\n"
      "  %y = Clip(%c, %lo, %hi)\n"
      "  return %y\n}\n}\n";
  const std::string depthwiseWithBounds = [&] {
    std::string text = depthwise;
    const std::string bounds = "  const %lo = dense<f32[]: 0>\n  const %hi = dense<f32[]: 6>\n";
    return text.insert(text.find("  %c = "), bounds);
  }();
  for (const std::string &text : {residual, depthwiseWithBounds}) {
    SCOPED_TRACE(text.substr(0, 300));
    CpuCheck options;
    options.optLevel = 3;
    expectCpuMatchesReference(text, options);
    EXPECT_EQ(fusedConvsAtO3(text), 1);
  }
}

TEST(CpuConv, BiasFedAtRunTime) {
  // Only W is packed; B is read from its buffer when the step runs.
  const std::string text = "model opset(ai.onnx=17) ir_version=8 {\n"
                           "func @main(%x: f32[1,4,7,6], %b: f32[5]) -> (%y: ?) {\n" +
                           constant("w", {5, 4, 3, 3}, 9) +
                           "  %y = Conv(%x, %w, %b) {pads = [1, 1, 1, 1]}\n"
                           "  return %y\n}\n}\n";
  expectCpuMatchesReference(text);
}

TEST(CpuConv, NonConstantWeightsFallBack) {
  const char *text = R"(model opset(ai.onnx=17) ir_version=8 {
func @main(%x: f32[1,2,5,5], %w: f32[3,2,3,3]) -> (%y: ?) {
  %y = Conv(%x, %w)
  return %y
}
}
)";
  CpuCheck options;
  options.requireNoFallback = false;
  expectCpuMatchesReference(text, options);
}

TEST(CpuConv, BadGroupIsADiagnostic) {
  // Six channels in four groups; the output type is declared, as shape inference would reject it.
  ConvModel m = convModel({1, 6, 5, 5}, {4, 3, 3, 3}, false, "group = 4");
  m.y = {1, 4, 3, 3};
  auto parsed = parseModel(modelText(m), "bad.tsl.txt");
  ASSERT_TRUE(parsed.ok()) << parsed.diag().str();
  auto executable = compileCpu(std::move(*parsed), {0, 1});
  ASSERT_FALSE(executable.ok());
  EXPECT_NE(executable.diag().str().find("Conv"), std::string::npos) << executable.diag().str();
}

}  // namespace
}  // namespace tessel::cpu
