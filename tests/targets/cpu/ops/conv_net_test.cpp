// Conv-net blocks as exporters write them, through the whole -O3 pipeline on the cpu target against
// the reference interpreter on the unoptimized graph: the fused HardSwish / HardSigmoid / LeakyRelu
// epilogues on the channels-last GEMM and depthwise paths, elementwise ops and pools between
// channels-last convs, the scales folded into the weights (after a conv, and before an unpadded
// one), ConvTranspose after a folded BatchNormalization, and Resize.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "../cpu_test_util.h"

namespace tessel::cpu {
namespace {

using testing::constant;
using testing::CpuCheck;
using testing::expectCpuMatchesReference;

CpuCheck o3(int threads) {
  CpuCheck check;
  check.optLevel = 3;
  check.threads = threads;
  return check;
}

TEST(CpuConvNet, PaddleBlocksWithHardSwishSqueezeExciteAndDecoder) {
  std::string text = "model opset(ai.onnx=11) ir_version=8 {\nfunc @main(%x: f32[1,3,24,20]) -> (%y: ?, %z: ?) {\n";
  text += constant("w0", {16, 3, 3, 3}, 1) + constant("b0", {16}, 2) + constant("wd", {16, 1, 3, 3}, 3) +
          constant("we1", {8, 16, 1, 1}, 4) + constant("be1", {8}, 5) + constant("we2", {16, 8, 1, 1}, 6) +
          constant("be2", {16}, 7) + constant("w1", {40, 16, 1, 1}, 8) + constant("wt", {40, 12, 2, 2}, 9) +
          constant("bt", {1, 12, 1, 1}, 10) + constant("bns", {12}, 11) + constant("bnb", {12}, 12) +
          constant("bnm", {12}, 13);
  text +=
      "  const %bnv = dense<f32[12]: 1, 0.5, 2, 1.5, 1, 0.8, 1.2, 0.9, 1, 1.1, 0.7, 1.3>\n"
      "  const %s0 = dense<f32[1]: 0.9>\n  const %t0 = dense<f32[1]: 0.1>\n"
      "  const %s1 = dense<f32[1]: 1.1>\n  const %t1 = dense<f32[1]: -0.2>\n"
      "  const %three = dense<f32[]: 3>\n  const %zero = dense<f32[]: 0>\n  const %six = dense<f32[]: 6>\n"
      "  const %scales = dense<f32[4]: 1, 1, 2, 2>\n"
      "  %c0 = Conv(%x, %w0, %b0) {pads = [1, 1, 1, 1], strides = [2, 2]}\n"
      "  %m0 = Mul(%s0, %c0)\n  %a0 = Add(%m0, %t0)\n"
      "  %h1 = Add(%a0, %three)\n  %h2 = Clip(%h1, %zero, %six)\n  %h3 = Mul(%a0, %h2)\n  %h = Div(%h3, %six)\n"
      "  %m1 = Mul(%s1, %h)\n  %a1 = Add(%m1, %t1)\n"
      "  %d = Conv(%a1, %wd) {group = 16, pads = [1, 1, 1, 1]}\n"
      "  %dh1 = Add(%d, %three)\n  %dh2 = Clip(%dh1, %zero, %six)\n  %dh3 = Mul(%d, %dh2)\n  %dh = Div(%dh3, %six)\n"
      "  %g = GlobalAveragePool(%dh)\n  %e1 = Conv(%g, %we1, %be1)\n  %r = Relu(%e1)\n"
      "  %e2 = Conv(%r, %we2, %be2)\n  %hs = HardSigmoid(%e2) {alpha = 0.2, beta = 0.5}\n  %se = Mul(%dh, %hs)\n"
      "  %sm = Mul(%s1, %se)\n  %sa = Add(%sm, %t1)\n  %c1 = Conv(%sa, %w1)\n"
      "  %u = ConvTranspose(%c1, %wt) {kernel_shape = [2, 2], strides = [2, 2]}\n  %ub = Add(%u, %bt)\n"
      "  %bn = BatchNormalization(%ub, %bns, %bnb, %bnm, %bnv)\n  %y = Relu(%bn)\n"
      "  %z = Resize(%c1, _, %scales) {mode = \"nearest\", coordinate_transformation_mode = \"asymmetric\", "
      "nearest_mode = \"floor\"}\n"
      "  return %y, %z\n}\n}\n";
  SCOPED_TRACE(text);
  expectCpuMatchesReference(text, o3(2));
  expectCpuMatchesReference(text, o3(1));
}

TEST(CpuConvNet, Tf2onnxLeakyReluMaxFeatureMapAndPool) {
  std::string text = "model opset(ai.onnx=13) ir_version=8 {\nfunc @main(%x: f32[1,1,30,16]) -> (%y: ?) {\n";
  text += constant("w1", {24, 1, 3, 3}, 21) + constant("b1", {24}, 22) + constant("w2", {24, 24, 1, 3}, 23) +
          constant("w3", {24, 24, 3, 1}, 24) + constant("w4", {40, 24, 1, 3}, 25) + constant("b4", {40}, 26);
  text +=
      "  const %floor = dense<f32[1,1,1,1]: -0.4>\n"
      "  %c1 = Conv(%x, %w1, %b1) {pads = [0, 1, 0, 1]}\n  %l1 = LeakyRelu(%c1) {alpha = 0.2}\n"
      "  %m1 = Max(%l1, %floor)\n"
      "  %c2 = Conv(%m1, %w2) {pads = [0, 1, 0, 1]}\n  %c3 = Conv(%m1, %w3) {pads = [1, 0, 1, 0]}\n"
      "  %f = Max(%c2, %c3)\n"
      "  %p = MaxPool(%f) {kernel_shape = [2, 2], strides = [2, 2]}\n"
      "  %c4 = Conv(%p, %w4, %b4) {pads = [0, 1, 0, 1]}\n  %l4 = LeakyRelu(%c4) {alpha = 0.2}\n"
      "  %y = Max(%l4, %floor)\n"
      "  return %y\n}\n}\n";
  SCOPED_TRACE(text);
  expectCpuMatchesReference(text, o3(2));
}

}  // namespace
}  // namespace tessel::cpu
