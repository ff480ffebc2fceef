// The elementwise family on the cpu target against the reference interpreter (-O0, so each op is
// lowered as written): every unary op, Pow's constant-exponent forms, and the binary ops over the
// broadcast forms (same shape, scalar either side, trailing and leading blocks, both sides
// broadcast, rank-changing), at ragged sizes and one and two threads; Where with a bool condition.
// Uncovered forms (a runtime Clip bound, an i64 Add) must fall back, not fail; bad shapes give a
// located error.
#include <gtest/gtest.h>

#include <string>

#include <fmt/format.h>

#include "../cpu_test_util.h"

namespace tessel::cpu {
namespace {

using testing::CpuCheck;
using testing::expectCpuMatchesReference;

std::string unaryModel(const std::string &op, const std::string &type, const std::string &attributes = "") {
  return fmt::format(
      "model opset(ai.onnx=17) ir_version=8 {{\n"
      "func @main(%x: f32{}) -> (%y: ?) {{\n  %y = {}(%x){}\n  return %y\n}}\n}}\n",
      type, op, attributes.empty() ? "" : " {" + attributes + "}");
}

std::string binaryModel(const std::string &op, const std::string &aType, const std::string &bType) {
  return fmt::format(
      "model opset(ai.onnx=17) ir_version=8 {{\n"
      "func @main(%a: f32{}, %b: f32{}) -> (%y: ?) {{\n  %y = {}(%a, %b)\n  return %y\n}}\n}}\n",
      aType, bType, op);
}

void check(const std::string &text, int threads = 2, bool requireNoFallback = true) {
  SCOPED_TRACE(text);
  CpuCheck options;
  options.threads = threads;
  options.requireNoFallback = requireNoFallback;
  expectCpuMatchesReference(text, options);
}

TEST(CpuElementwise, UnaryOps) {
  for (const char *op : {"Relu", "Sigmoid", "Tanh", "Exp", "Neg", "Abs", "Erf", "HardSwish", "Softplus"}) {
    check(unaryModel(op, "[3,37,5]"));
    check(unaryModel(op, "[70001]"), 1);  // Long enough to split over ranges.
  }
  check(unaryModel("LeakyRelu", "[4,33]", "alpha = 0.2"));
  check(unaryModel("LeakyRelu", "[4,33]"));
  check(unaryModel("HardSigmoid", "[4,33]", "alpha = 0.3, beta = 0.4"));
  check(unaryModel("HardSigmoid", "[4,33]"));
  check(unaryModel("Relu", "[0,5]"));
  check(unaryModel("Relu", "[]"));
}

TEST(CpuElementwise, UnaryOpsOnPositiveInputs) {
  // Log, Sqrt and Reciprocal see |x| + 0.5 so the reference has numbers to compare.
  for (const char *op : {"Log", "Sqrt", "Reciprocal"}) {
    check(fmt::format("model opset(ai.onnx=17) ir_version=8 {{\n"
                      "func @main(%x: f32[5,41]) -> (%y: ?) {{\n"
                      "  const %h = dense<f32[]: 0.5>\n"
                      "  %a = Abs(%x)\n  %p = Add(%a, %h)\n  %y = {}(%p)\n  return %y\n}}\n}}\n",
                      op));
  }
}

TEST(CpuElementwise, Clip) {
  check("model opset(ai.onnx=17) ir_version=8 {\nfunc @main(%x: f32[6,19]) -> (%y: ?) {\n"
        "  const %lo = dense<f32[]: -0.25>\n  const %hi = dense<f32[]: 0.5>\n"
        "  %y = Clip(%x, %lo, %hi)\n  return %y\n}\n}\n");
  check("model opset(ai.onnx=17) ir_version=8 {\nfunc @main(%x: f32[6,19]) -> (%y: ?) {\n"
        "  const %hi = dense<f32[]: 0.5>\n  %y = Clip(%x, _, %hi)\n  return %y\n}\n}\n");
  check("model opset(ai.onnx=6) ir_version=3 {\nfunc @main(%x: f32[6,19]) -> (%y: ?) {\n"
        "  %y = Clip(%x) {max = 0.3, min = -0.1}\n  return %y\n}\n}\n");
  // A bound known only at run time is the reference kernel's.
  check("model opset(ai.onnx=17) ir_version=8 {\nfunc @main(%x: f32[6,19], %lo: f32[]) -> (%y: ?) {\n"
        "  %y = Clip(%x, %lo)\n  return %y\n}\n}\n",
        2, /*requireNoFallback=*/false);
}

TEST(CpuElementwise, PowConstantExponents) {
  for (const char *exponent : {"2", "3", "1", "0.5", "1.5"}) {
    check(fmt::format("model opset(ai.onnx=17) ir_version=8 {{\n"
                      "func @main(%x: f32[7,23]) -> (%y: ?) {{\n"
                      "  const %e = dense<f32[]: {}>\n  %a = Abs(%x)\n  %y = Pow(%a, %e)\n  return %y\n}}\n}}\n",
                      exponent));
  }
  // A run-time exponent: the generic binary loop.
  check("model opset(ai.onnx=17) ir_version=8 {\nfunc @main(%x: f32[4,9], %e: f32[9]) -> (%y: ?) {\n"
        "  %a = Abs(%x)\n  %y = Pow(%a, %e)\n  return %y\n}\n}\n");
}

TEST(CpuElementwise, BinaryBroadcastForms) {
  const std::pair<const char *, const char *> shapes[] = {
      {"[2,5,37]", "[2,5,37]"},     // Same shape.
      {"[2,5,37]", "[]"},           // Scalar right.
      {"[1]", "[3,33]"},            // Scalar left.
      {"[2,3,77]", "[77]"},         // Trailing block, [B,S,768] + [768].
      {"[2,6,5,7]", "[1,6,1,1]"},   // Channel, [B,C,H,W] * [1,C,1,1].
      {"[6,1,1]", "[2,6,5,7]"},     // Channel on the left, lower rank.
      {"[5,1]", "[1,9]"},           // Both sides broadcast: outer product.
      {"[3,1,17]", "[4,17]"},       // Rank change in the middle.
      {"[0,4]", "[4]"},             // Empty.
      {"[40000]", "[40000]"},       // Long enough to split one row over ranges.
      {"[3,20000]", "[20000]"},     // Ranges that start mid-row.
  };
  for (const char *op : {"Add", "Sub", "Mul", "Div", "Max", "Min"}) {
    for (const auto &[a, b] : shapes) check(binaryModel(op, a, b));
  }
  check(binaryModel("Add", "[2,3,77]", "[77]"), 1);
}

TEST(CpuElementwise, Where) {
  check("model opset(ai.onnx=17) ir_version=8 {\nfunc @main(%c: bool[3,1,19], %a: f32[4,19], %b: f32[]) -> (%y: ?) {\n"
        "  %y = Where(%c, %a, %b)\n  return %y\n}\n}\n");
  check("model opset(ai.onnx=17) ir_version=8 {\nfunc @main(%c: bool[1030], %a: f32[1030], %b: f32[1030]) -> (%y: ?) {\n"
        "  %y = Where(%c, %a, %b)\n  return %y\n}\n}\n");
}

TEST(CpuElementwise, UncoveredFallsBack) {
  check("model opset(ai.onnx=17) ir_version=8 {\nfunc @main(%a: i64[4], %b: i64[4]) -> (%y: ?) {\n"
        "  %y = Add(%a, %b)\n  return %y\n}\n}\n",
        2, /*requireNoFallback=*/false);
}

TEST(CpuElementwise, ChainsInPlace) {
  // Each op's input dies at it, so the planner may run them in place.
  check("model opset(ai.onnx=17) ir_version=8 {\nfunc @main(%x: f32[8,129], %b: f32[129]) -> (%y: ?) {\n"
        "  %a = Add(%x, %b)\n  %t = Tanh(%a)\n  %m = Mul(%t, %x)\n  %y = Sigmoid(%m)\n  return %y\n}\n}\n");
}

}  // namespace
}  // namespace tessel::cpu
