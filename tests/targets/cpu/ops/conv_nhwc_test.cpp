// Channels-last tessel FusedConv on the cpu target against the reference interpreter: the implicit
// GEMM reading the input in place (1x1, KxK, strides, dilations, asymmetric pads, channel counts
// that are not multiples of the vector width) and the gathered path of few-channel stems, with
// bias, residual and activations, on one and two threads.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include <fmt/format.h>

#include "../cpu_test_util.h"

namespace tessel::cpu {
namespace {

using testing::constant;
using testing::CpuCheck;
using testing::expectCpuMatchesReference;

struct NhwcConv {
  std::vector<int64_t> x;  // [N, H, W, C]
  std::vector<int64_t> w;  // [M, C, KH, KW]
  std::vector<int64_t> y;  // [N, OH, OW, M]
  std::string attributes;  // Without braces; channels_last is added.
  bool bias = true;
  bool residual = false;
};

std::string sizesText(const std::vector<int64_t> &sizes) { return fmt::format("[{}]", fmt::join(sizes, ",")); }

std::string modelText(const NhwcConv &c) {
  std::string inputs = fmt::format("%x: f32{}", sizesText(c.x));
  if (c.residual) inputs += fmt::format(", %z: f32{}", sizesText(c.y));
  std::string body = constant("w", c.w, uint32_t(c.w[0] * 7 + c.w[1]));
  std::string args = "%x, %w";
  if (c.bias) {
    body += constant("b", {c.w[0]}, uint32_t(c.w[0]));
    args += ", %b";
  } else if (c.residual) {
    args += ", _";
  }
  if (c.residual) args += ", %z";
  const std::string attributes = c.attributes.empty() ? "channels_last = 1" : c.attributes + ", channels_last = 1";
  return fmt::format(
      "model opset(ai.onnx=17, tessel=1) ir_version=8 {{\n"
      "func @main({}) -> (%y: f32{}) {{\n{}  %y = tessel.FusedConv({}) {{{}}}\n  return %y\n}}\n}}\n",
      inputs, sizesText(c.y), body, args, attributes);
}

void check(const NhwcConv &c) {
  for (int threads : {1, 2}) {
    SCOPED_TRACE(::testing::Message() << threads << " threads\n" << modelText(c).substr(0, 400));
    CpuCheck options;
    options.threads = threads;
    expectCpuMatchesReference(modelText(c), options);
  }
}

TEST(CpuConvNhwc, PointwiseReadsTheInputInPlace) {
  check({{2, 7, 9, 16}, {24, 16, 1, 1}, {2, 7, 9, 24}, ""});
  check({{1, 5, 6, 40}, {70, 40, 1, 1}, {1, 5, 6, 70}, "activation = \"Relu\"", false});
  // Strided 1x1 (a ResNet downsample): rows skip pixels.
  check({{2, 9, 8, 32}, {13, 32, 1, 1}, {2, 5, 4, 13}, "strides = [2, 2]"});
}

TEST(CpuConvNhwc, WindowsWithPadsStridesAndDilations) {
  check({{2, 9, 10, 17}, {33, 17, 3, 3}, {2, 9, 10, 33}, "pads = [1, 1, 1, 1]"});
  check({{1, 11, 9, 16}, {20, 16, 3, 3}, {1, 6, 5, 20}, "pads = [1, 1, 1, 1], strides = [2, 2]"});
  check({{2, 12, 11, 24}, {8, 24, 3, 2}, {2, 11, 11, 8}, "pads = [2, 0, 1, 1], dilations = [2, 1]"});
  // K blocks split inside one tap when the channels exceed the GEMM's K block.
  check({{1, 5, 5, 600}, {40, 600, 3, 3}, {1, 3, 3, 40}, ""});
}

TEST(CpuConvNhwc, FewChannelStemsAreGathered) {
  check({{2, 16, 15, 3}, {20, 3, 7, 7}, {2, 8, 8, 20}, "pads = [3, 3, 3, 3], strides = [2, 2]"});
  check({{1, 13, 12, 3}, {32, 3, 3, 3}, {1, 7, 6, 32},
         "pads = [1, 1, 1, 1], strides = [2, 2], activation = \"Clip\", activation_params = [0.0, 6.0]"});
  check({{1, 10, 9, 5}, {7, 5, 3, 3}, {1, 6, 5, 7}, "dilations = [2, 2]", false});
}

TEST(CpuConvNhwc, Epilogues) {
  NhwcConv c{{2, 6, 7, 16}, {16, 16, 3, 3}, {2, 6, 7, 16}, "pads = [1, 1, 1, 1], activation = \"Relu\""};
  c.residual = true;
  check(c);
  c.bias = false;
  c.attributes = "pads = [1, 1, 1, 1], activation = \"Sigmoid\"";
  check(c);
  NhwcConv stem{{1, 9, 9, 3}, {16, 3, 3, 3}, {1, 9, 9, 16}, "pads = [1, 1, 1, 1], activation = \"Silu\""};
  stem.residual = true;
  check(stem);
}

// X is also the residual and dies at the conv: the output must not be planned over it, since every
// output pixel reads a window of X.
TEST(CpuConvNhwc, ResidualThatIsAlsoTheInputIsNotOverwritten) {
  const std::string text =
      "model opset(ai.onnx=17, tessel=1) ir_version=8 {\n"
      "func @main(%x: f32[2,6,7,16]) -> (%y: f32[2,6,7,16]) {\n" +
      constant("w", {16, 16, 3, 3}, 2) + constant("b", {16}, 3) +
      "  %r = Relu(%x)\n"
      "  %y = tessel.FusedConv(%r, %w, %b, %r) {pads = [1, 1, 1, 1], channels_last = 1}\n"
      "  return %y\n}\n}\n";
  expectCpuMatchesReference(text, CpuCheck{});
}

TEST(CpuConvNhwc, ChannelsLastNeedsRankFour) {
  const std::string text =
      "model opset(ai.onnx=17, tessel=1) ir_version=8 {\n"
      "func @main(%x: f32[1,9,4]) -> (%y: ?) {\n" +
      constant("w", {5, 4, 3}, 1) +
      "  %y = tessel.FusedConv(%x, %w) {channels_last = 1}\n"
      "  return %y\n}\n}\n";
  auto parsed = parseModel(text, "nhwc.tsl.txt");
  ASSERT_TRUE(parsed.ok()) << parsed.diag().str();
  const NamedValues feeds = testing::randomFeeds(*parsed, 1);
  // The output's shape is unknown before running, so the node may run its reference kernel: then
  // the run fails instead of the compile, with the same message.
  auto executable = compileCpu(std::move(*parsed), {0, 1});
  std::string message = executable.ok() ? "" : executable.diag().str();
  if (executable.ok()) {
    auto outputs = (*executable)->run(feeds);
    ASSERT_FALSE(outputs.ok());
    message = outputs.diag().str();
  }
  EXPECT_NE(message.find("channels_last"), std::string::npos) << message;
  EXPECT_NE(message.find("FusedConv"), std::string::npos) << message;
}

}  // namespace
}  // namespace tessel::cpu
