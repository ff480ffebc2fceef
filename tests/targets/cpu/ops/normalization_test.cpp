// Softmax, LogSoftmax and LayerNormalization on the cpu target against the reference interpreter:
// every axis (innermost rows and strided columns), the opset < 13 coerce-to-2D form, ragged row
// lengths, one and two threads; LayerNormalization with and without B, Scale with leading 1s, and
// the forms that must fall back (Mean output used, Scale broadcasting inside a row); tessel
// RMSNormalization.
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

std::string softmaxModel(const std::string &op, int opset, const std::string &type, const std::string &axis) {
  return fmt::format(
      "model opset(ai.onnx={}) ir_version=8 {{\n"
      "func @main(%x: f32{}) -> (%y: ?) {{\n  %y = {}(%x){}\n  return %y\n}}\n}}\n",
      opset, type, op, axis.empty() ? "" : " {axis = " + axis + "}");
}

TEST(CpuSoftmax, EveryAxis) {
  for (const char *op : {"Softmax", "LogSoftmax"}) {
    check(softmaxModel(op, 13, "[3,5,37]", ""));
    check(softmaxModel(op, 13, "[3,5,37]", "-1"), 1);
    check(softmaxModel(op, 13, "[3,5,37]", "1"));
    check(softmaxModel(op, 13, "[3,5,37]", "0"));
    check(softmaxModel(op, 13, "[2,7,130]", "1"));  // More columns than one block.
    check(softmaxModel(op, 13, "[64,1000]", ""));   // Enough rows to split over ranges.
    check(softmaxModel(op, 13, "[1]", ""));
    check(softmaxModel(op, 13, "[4,0]", ""));
  }
}

TEST(CpuSoftmax, CoerceTo2DBeforeOpset13) {
  for (const char *op : {"Softmax", "LogSoftmax"}) {
    check(softmaxModel(op, 11, "[3,5,7]", ""));  // Default axis 1: rows of 35.
    check(softmaxModel(op, 11, "[3,5,7]", "0"));
    check(softmaxModel(op, 11, "[3,5,7]", "2"));
  }
}

TEST(CpuSoftmax, BadAxisIsAnError) {
  std::string text = softmaxModel("Softmax", 13, "[3,5]", "2");
  text.replace(text.find("(%y: ?)"), 7, "(%y: f32[3,5])");
  auto parsed = parseModel(text, "test.tsl.txt");
  ASSERT_TRUE(parsed.ok());
  auto executable = compileCpu(std::move(*parsed), {0, 1});
  // The op's inference rejects the axis, so the reference kernel runs the node and reports it.
  ASSERT_TRUE(executable.ok()) << executable.diag().str();
  auto outputs = (*executable)->run({{"x", Tensor(DType::Float32, {3, 5})}});
  ASSERT_FALSE(outputs.ok());
  EXPECT_NE(outputs.diag().str().find("Softmax"), std::string::npos) << outputs.diag().str();
}

std::string layerNormModel(const std::string &xType, const std::string &scaleType, const std::string &biasType,
                           const std::string &attributes, const std::string &domain = "") {
  const bool bias = !biasType.empty();
  return fmt::format(
      "model opset(ai.onnx=17, tessel=1) ir_version=8 {{\n"
      "func @main(%x: f32{}, %s: f32{}{}) -> (%y: ?) {{\n  %y = {}LayerNormalization(%x, %s{}){}\n  return "
      "%y\n}}\n}}\n",
      xType, scaleType, bias ? ", %b: f32" + biasType : "", domain, bias ? ", %b" : "",
      attributes.empty() ? "" : " {" + attributes + "}");
}

TEST(CpuLayerNorm, Forms) {
  check(layerNormModel("[4,7,768]", "[768]", "[768]", ""));
  check(layerNormModel("[4,7,768]", "[768]", "[768]", ""), 1);
  check(layerNormModel("[5,37]", "[37]", "", "epsilon = 0.001"));
  check(layerNormModel("[3,5,37]", "[5,37]", "[5,37]", "axis = 1"));
  // B over only the last axis broadcasts inside a row: the reference's.
  check(layerNormModel("[3,5,37]", "[1,5,37]", "[1,37]", "axis = -2"), 2, /*requireNoFallback=*/false);
  check(layerNormModel("[3,5,17]", "[1,17]", "[17]", ""));
  check(layerNormModel("[6,1]", "[1]", "[1]", ""));
  check(layerNormModel("[130,33]", "[33]", "[33]", ""));
}

TEST(CpuLayerNorm, TesselDomain) {
  // Shape inference does not know the tessel ops: the output type is written out.
  auto typed = [](std::string text, const std::string &yType) {
    text.replace(text.find("(%y: ?)"), 7, "(%y: f32" + yType + ")");
    return text;
  };
  check(typed(layerNormModel("[4,7,768]", "[768]", "[768]", "", "tessel."), "[4,7,768]"));
  check(typed(layerNormModel("[3,5,37]", "[5,37]", "", "axis = 1, epsilon = 0.01", "tessel."), "[3,5,37]"));
}

// tessel RMSNormalization (what recognize-layer-norm makes of Llama's RMSNorm): one and two
// threads, a row longer than several vectors, several trailing axes, and Scale with leading 1s.
TEST(CpuRmsNorm, TesselDomain) {
  auto model = [](const std::string &xType, const std::string &scaleType, const std::string &attributes) {
    return fmt::format(
        "model opset(ai.onnx=17, tessel=1) ir_version=8 {{\n"
        "func @main(%x: f32{0}, %s: f32{1}) -> (%y: f32{0}) {{\n"
        "  %y = tessel.RMSNormalization(%x, %s){2}\n  return %y\n}}\n}}\n",
        xType, scaleType, attributes.empty() ? "" : " {" + attributes + "}");
  };
  check(model("[1,5,256]", "[256]", "axis = -1, epsilon = 1e-05"));
  check(model("[1,5,256]", "[256]", "axis = -1, epsilon = 1e-05"), 1);
  check(model("[130,33]", "[33]", ""));
  check(model("[3,5,37]", "[1,5,37]", "axis = 1, epsilon = 0.01"));
}

TEST(CpuLayerNorm, StatisticsOutputsFallBack) {
  check(
      "model opset(ai.onnx=17) ir_version=8 {\n"
      "func @main(%x: f32[4,9], %s: f32[9]) -> (%y: ?, %m: ?) {\n"
      "  %y, %m = LayerNormalization(%x, %s)\n  return %y, %m\n}\n}\n",
      2, /*requireNoFallback=*/false);
}

}  // namespace
}  // namespace tessel::cpu
