// MaxPool, AveragePool, GlobalAveragePool and GlobalMaxPool on the cpu target against the
// reference interpreter: odd sizes, asymmetric pads, strides, dilations, ceil_mode, auto_pad,
// count_include_pad, 1-D windows, one and two threads; MaxPool with an Indices output falls back.
#include <gtest/gtest.h>

#include <string>

#include <fmt/format.h>

#include "../cpu_test_util.h"

namespace tessel::cpu {
namespace {

using testing::CpuCheck;
using testing::expectCpuMatchesReference;

void checkPool(const std::string &op, const std::string &xType, const std::string &attributes, int threads = 2,
               bool requireNoFallback = true) {
  const std::string text = fmt::format(
      "model opset(ai.onnx=17) ir_version=8 {{\n"
      "func @main(%x: f32{}) -> (%y: ?) {{\n  %y = {}(%x){}\n  return %y\n}}\n}}\n",
      xType, op, attributes.empty() ? "" : " {" + attributes + "}");
  SCOPED_TRACE(text);
  CpuCheck options;
  options.threads = threads;
  options.requireNoFallback = requireNoFallback;
  expectCpuMatchesReference(text, options);
}

TEST(CpuPool, MaxPool) {
  checkPool("MaxPool", "[1,4,17,19]", "kernel_shape = [3, 3], pads = [1, 1, 1, 1], strides = [2, 2]");
  checkPool("MaxPool", "[2,3,9,11]", "kernel_shape = [2, 2], strides = [2, 2], ceil_mode = 1", 1);
  checkPool("MaxPool", "[1,2,10,13]", "kernel_shape = [3, 3], pads = [0, 2, 1, 0], strides = [2, 1]");
  checkPool("MaxPool", "[1,2,12,11]", "kernel_shape = [3, 3], dilations = [2, 2], pads = [2, 2, 2, 2]");
  checkPool("MaxPool", "[1,3,9,8]", "auto_pad = \"SAME_UPPER\", kernel_shape = [3, 3], strides = [2, 2]");
  checkPool("MaxPool", "[2,3,21]", "kernel_shape = [3], pads = [1, 1], strides = [2]");
}

TEST(CpuPool, AveragePool) {
  checkPool("AveragePool", "[1,4,17,19]", "kernel_shape = [3, 3], pads = [1, 1, 1, 1], strides = [2, 2]");
  checkPool("AveragePool", "[1,4,17,19]",
            "count_include_pad = 1, kernel_shape = [3, 3], pads = [1, 1, 1, 1], strides = [2, 2]", 1);
  checkPool("AveragePool", "[2,3,10,13]",
            "ceil_mode = 1, kernel_shape = [3, 3], pads = [1, 1, 1, 1], strides = [2, 2]");
  checkPool("AveragePool", "[2,3,10,13]",
            "ceil_mode = 1, count_include_pad = 1, kernel_shape = [3, 3], pads = [1, 0, 1, 0], strides = [2, 2]");
  checkPool("AveragePool", "[1,2,14,16]", "kernel_shape = [5, 4], pads = [2, 1, 2, 3], strides = [3, 3]");
  checkPool("AveragePool", "[1,2,12,11]", "kernel_shape = [2, 3], pads = [1, 0, 0, 1]");
  checkPool("AveragePool", "[2,3,21]", "kernel_shape = [4], strides = [3], count_include_pad = 1, pads = [1, 2]");
}

TEST(CpuPool, GlobalPools) {
  for (const char *op : {"GlobalAveragePool", "GlobalMaxPool"}) {
    checkPool(op, "[2,64,7,7]", "");
    checkPool(op, "[1,5,56,57]", "", 1);
    checkPool(op, "[3,4,19]", "");
    checkPool(op, "[1,3,2,3,4]", "");
  }
}

TEST(CpuPool, MaxPoolIndicesFallBack) {
  const char *text = R"(model opset(ai.onnx=17) ir_version=8 {
func @main(%x: f32[1,2,6,7]) -> (%y: ?, %i: ?) {
  %y, %i = MaxPool(%x) {kernel_shape = [2, 2], storage_order = 1}
  return %y, %i
}
}
)";
  CpuCheck options;
  options.requireNoFallback = false;
  expectCpuMatchesReference(text, options);
}

TEST(CpuPool, PadsAsLargeAsTheKernelAreADiagnostic) {
  auto parsed = parseModel(R"(model opset(ai.onnx=17) ir_version=8 {
func @main(%x: f32[1,1,4,4]) -> (%y: f32[1,1,6,6]) {
  %y = MaxPool(%x) {kernel_shape = [2, 2], pads = [2, 2, 2, 2]}
  return %y
}
}
)", "bad.tsl.txt");
  ASSERT_TRUE(parsed.ok()) << parsed.diag().str();
  auto executable = compileCpu(std::move(*parsed), {0, 1});
  // The op's inference rejects the pads, so the node is left to the reference kernel, which
  // reports them when the node runs.
  ASSERT_TRUE(executable.ok()) << executable.diag().str();
  auto outputs = (*executable)->run({{"x", Tensor(DType::Float32, {1, 1, 4, 4})}});
  ASSERT_FALSE(outputs.ok());
  EXPECT_NE(outputs.diag().str().find("MaxPool"), std::string::npos) << outputs.diag().str();
}

}  // namespace
}  // namespace tessel::cpu
