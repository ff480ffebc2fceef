// ConvTranspose on the cpu target (GEMM + col2im) against the reference interpreter: kernel equal
// to the stride (the decoders' 2x2 upsampling), overlapping taps, pads, output_padding,
// output_shape, dilations, groups, 1-D, with and without bias, on one and two threads; and the
// fallback for weights known only at run time.
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

std::string modelText(const std::vector<int64_t> &x, const std::vector<int64_t> &w, bool bias,
                      const std::string &attributes) {
  std::string body = constant("w", w, uint32_t(w[0] * 5 + w[1]));
  std::string args = "%x, %w";
  if (bias) {
    const int64_t group = attributes.find("group = 2") != std::string::npos ? 2 : 1;
    body += constant("b", {w[1] * group}, uint32_t(w[1]));
    args += ", %b";
  }
  return fmt::format(
      "model opset(ai.onnx=17) ir_version=8 {{\n"
      "func @main(%x: f32[{}]) -> (%y: ?) {{\n{}  %y = ConvTranspose({}) {{{}}}\n  return %y\n}}\n}}\n",
      fmt::join(x, ","), body, args, attributes);
}

void check(const std::vector<int64_t> &x, const std::vector<int64_t> &w, bool bias, const std::string &attributes,
           int threads = 2) {
  const std::string text = modelText(x, w, bias, attributes);
  SCOPED_TRACE(text.substr(0, 300));
  CpuCheck options;
  options.threads = threads;
  expectCpuMatchesReference(text, options);
}

TEST(CpuConvTranspose, KernelEqualsStride) {
  check({1, 24, 20, 20}, {24, 24, 2, 2}, true, "kernel_shape = [2, 2], strides = [2, 2]");
  check({2, 8, 7, 9}, {8, 1, 2, 2}, false, "strides = [2, 2]", 1);
}

TEST(CpuConvTranspose, OverlappingTapsPadsAndOutputPadding) {
  check({1, 6, 9, 8}, {6, 5, 3, 3}, true, "strides = [2, 2], pads = [1, 1, 1, 1], output_padding = [1, 1]");
  check({1, 4, 5, 7}, {4, 3, 4, 4}, true, "strides = [2, 2], pads = [1, 2, 1, 0]", 1);
  check({1, 3, 6, 6}, {3, 4, 3, 3}, false, "dilations = [2, 2]");
  check({1, 3, 5, 5}, {3, 2, 3, 3}, true, "strides = [2, 2], output_shape = [11, 12]");
  check({1, 3, 5, 6}, {3, 2, 3, 3}, true, "strides = [2, 2], auto_pad = \"SAME_UPPER\"");
}

TEST(CpuConvTranspose, GroupsAndOneDimensional) {
  check({2, 6, 5, 4}, {6, 3, 3, 3}, true, "group = 2, strides = [1, 2], pads = [1, 0, 1, 0]");
  check({1, 5, 17}, {5, 7, 4}, true, "strides = [2], pads = [1, 1]");
}

TEST(CpuConvTranspose, TallInputSpansSeveralChunks) {
  // 96 column rows x 200 pixels per input row: several row chunks accumulate into Y in turn.
  check({1, 8, 40, 200}, {8, 24, 2, 2}, true, "strides = [2, 2]");
  check({1, 8, 30, 150}, {8, 12, 3, 3}, true, "strides = [2, 2], pads = [1, 1, 1, 1]", 1);
}

TEST(CpuConvTranspose, RunTimeWeightsFallBack) {
  const std::string text =
      "model opset(ai.onnx=17) ir_version=8 {\n"
      "func @main(%x: f32[1,2,3,3], %w: f32[2,2,2,2]) -> (%y: ?) {\n"
      "  %y = ConvTranspose(%x, %w) {strides = [2, 2]}\n  return %y\n}\n}\n";
  CpuCheck options;
  options.requireNoFallback = false;
  expectCpuMatchesReference(text, options);
}

}  // namespace
}  // namespace tessel::cpu
