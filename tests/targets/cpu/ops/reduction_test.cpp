// ReduceSum, ReduceMean, ReduceMax and ReduceMin on the cpu target against the reference
// interpreter: innermost, outermost and middle runs of axes (rows and column accumulation),
// keepdims both ways, axes as an attribute and as a constant input, all axes, empty axes with
// noop_with_empty_axes, size-1 dims between reduced ones, ragged sizes and one and two threads;
// two separate runs of axes fall back; a bad axis is an error.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <string>

#include "../cpu_test_util.h"

namespace tessel::cpu {
namespace {

using testing::CpuCheck;
using testing::expectCpuMatchesReference;

void check(const std::string &text, int threads = 2, bool requireNoFallback = true) {
  SCOPED_TRACE(text);
  CpuCheck options;
  options.threads = threads;
  options.requireNoFallback = requireNoFallback;
  expectCpuMatchesReference(text, options);
}

std::string reduceModel(const std::string &op, const std::string &type, const std::string &attributes) {
  return fmt::format(
      "model opset(ai.onnx=11) ir_version=8 {{\n"
      "func @main(%x: f32{}) -> (%y: ?) {{\n  %y = {}(%x){}\n  return %y\n}}\n}}\n",
      type, op, attributes.empty() ? "" : " {" + attributes + "}");
}

TEST(CpuReduce, AxisForms) {
  for (const char *op : {"ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin"}) {
    check(reduceModel(op, "[3,5,37]", "axes = [2]"));
    check(reduceModel(op, "[3,5,37]", "axes = [-1], keepdims = 0"), 1);
    check(reduceModel(op, "[3,5,37]", "axes = [1, 2]"));
    check(reduceModel(op, "[3,5,37]", "axes = [0]"));
    check(reduceModel(op, "[3,5,37]", "axes = [0, 1], keepdims = 0"));
    check(reduceModel(op, "[3,5,37]", "axes = [1]"));
    check(reduceModel(op, "[3,1,5,37]", "axes = [1, 2]"));
    check(reduceModel(op, "[4,3,1300]", "axes = [1]"));  // Columns past one block.
    check(reduceModel(op, "[3,5,37]", ""));              // Every axis.
    check(reduceModel(op, "[128,768]", "axes = [1]"));
    check(reduceModel(op, "[3,5,37]", "axes = [0, 2]"), 2, /*requireNoFallback=*/false);
  }
}

TEST(CpuReduce, AxesAsConstantInput) {
  check(
      "model opset(ai.onnx=13) ir_version=8 {\nfunc @main(%x: f32[4,6,9]) -> (%y: ?) {\n"
      "  const %axes = dense<i64[1]: 1>\n  %y = ReduceSum(%x, %axes) {keepdims = 0}\n  return %y\n}\n}\n");
  check(
      "model opset(ai.onnx=13) ir_version=8 {\nfunc @main(%x: f32[4,6,9]) -> (%y: ?) {\n"
      "  const %axes = dense<i64[0]>\n  %y = ReduceSum(%x, %axes) {noop_with_empty_axes = 1}\n  return %y\n}\n}\n");
}

TEST(CpuReduce, BadAxisIsAnError) {
  std::string text = reduceModel("ReduceSum", "[3,5]", "axes = [2]");
  text.replace(text.find("(%y: ?)"), 7, "(%y: f32[3,5])");  // Typed: -O0 infers nothing.
  auto parsed = parseModel(text, "test.tsl.txt");
  ASSERT_TRUE(parsed.ok());
  auto executable = compileCpu(std::move(*parsed), {0, 1});
  // The op's inference rejects the axis, so the node is left to the reference kernel, which
  // reports it when the node runs.
  ASSERT_TRUE(executable.ok()) << executable.diag().str();
  auto outputs = (*executable)->run({{"x", Tensor(DType::Float32, {3, 5})}});
  ASSERT_FALSE(outputs.ok());
  EXPECT_NE(outputs.diag().str().find("ReduceSum"), std::string::npos) << outputs.diag().str();
}

}  // namespace
}  // namespace tessel::cpu
