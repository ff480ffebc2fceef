// The elementwise family on the cpu target against the reference interpreter (-O0, so each op is
// lowered as written): every unary op, Pow's constant-exponent forms, and the binary ops over the
// broadcast forms (same shape, scalar either side, trailing and leading blocks, both sides
// broadcast, rank-changing), at ragged sizes and one and two threads; Where with a bool condition.
// Uncovered forms (a runtime Clip bound, an i64 Add) must fall back, not fail; bad shapes give a
// located error.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <map>
#include <memory>
#include <string>

#include "../cpu_test_util.h"
#include "targets/cpu/step.h"

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
    check(
        fmt::format("model opset(ai.onnx=17) ir_version=8 {{\n"
                    "func @main(%x: f32[5,41]) -> (%y: ?) {{\n"
                    "  const %h = dense<f32[]: 0.5>\n"
                    "  %a = Abs(%x)\n  %p = Add(%a, %h)\n  %y = {}(%p)\n  return %y\n}}\n}}\n",
                    op));
  }
}

TEST(CpuElementwise, Clip) {
  check(
      "model opset(ai.onnx=17) ir_version=8 {\nfunc @main(%x: f32[6,19]) -> (%y: ?) {\n"
      "  const %lo = dense<f32[]: -0.25>\n  const %hi = dense<f32[]: 0.5>\n"
      "  %y = Clip(%x, %lo, %hi)\n  return %y\n}\n}\n");
  check(
      "model opset(ai.onnx=17) ir_version=8 {\nfunc @main(%x: f32[6,19]) -> (%y: ?) {\n"
      "  const %hi = dense<f32[]: 0.5>\n  %y = Clip(%x, _, %hi)\n  return %y\n}\n}\n");
  check(
      "model opset(ai.onnx=6) ir_version=3 {\nfunc @main(%x: f32[6,19]) -> (%y: ?) {\n"
      "  %y = Clip(%x) {max = 0.3, min = -0.1}\n  return %y\n}\n}\n");
  // A bound known only at run time is the reference kernel's.
  check(
      "model opset(ai.onnx=17) ir_version=8 {\nfunc @main(%x: f32[6,19], %lo: f32[]) -> (%y: ?) {\n"
      "  %y = Clip(%x, %lo)\n  return %y\n}\n}\n",
      2, /*requireNoFallback=*/false);
}

TEST(CpuElementwise, PowConstantExponents) {
  for (const char *exponent : {"2", "3", "1", "0.5", "1.5"}) {
    check(
        fmt::format("model opset(ai.onnx=17) ir_version=8 {{\n"
                    "func @main(%x: f32[7,23]) -> (%y: ?) {{\n"
                    "  const %e = dense<f32[]: {}>\n  %a = Abs(%x)\n  %y = Pow(%a, %e)\n  return %y\n}}\n}}\n",
                    exponent));
  }
  // A run-time exponent: the generic binary loop.
  check(
      "model opset(ai.onnx=17) ir_version=8 {\nfunc @main(%x: f32[4,9], %e: f32[9]) -> (%y: ?) {\n"
      "  %a = Abs(%x)\n  %y = Pow(%a, %e)\n  return %y\n}\n}\n");
}

TEST(CpuElementwise, BinaryBroadcastForms) {
  const std::pair<const char *, const char *> shapes[] = {
      {"[2,5,37]", "[2,5,37]"},    // Same shape.
      {"[2,5,37]", "[]"},          // Scalar right.
      {"[1]", "[3,33]"},           // Scalar left.
      {"[2,3,77]", "[77]"},        // Trailing block, [B,S,768] + [768].
      {"[2,6,5,7]", "[1,6,1,1]"},  // Channel, [B,C,H,W] * [1,C,1,1].
      {"[6,1,1]", "[2,6,5,7]"},    // Channel on the left, lower rank.
      {"[5,1]", "[1,9]"},          // Both sides broadcast: outer product.
      {"[3,1,17]", "[4,17]"},      // Rank change in the middle.
      {"[0,4]", "[4]"},            // Empty.
      {"[40000]", "[40000]"},      // Long enough to split one row over ranges.
      {"[3,20000]", "[20000]"},    // Ranges that start mid-row.
  };
  for (const char *op : {"Add", "Sub", "Mul", "Div", "Max", "Min"}) {
    for (const auto &[a, b] : shapes) check(binaryModel(op, a, b));
  }
  check(binaryModel("Add", "[2,3,77]", "[77]"), 1);
}

TEST(CpuElementwise, Where) {
  check(
      "model opset(ai.onnx=17) ir_version=8 {\nfunc @main(%c: bool[3,1,19], %a: f32[4,19], %b: f32[]) -> (%y: ?) {\n"
      "  %y = Where(%c, %a, %b)\n  return %y\n}\n}\n");
  check(
      "model opset(ai.onnx=17) ir_version=8 {\nfunc @main(%c: bool[1030], %a: f32[1030], %b: f32[1030]) -> (%y: ?) {\n"
      "  %y = Where(%c, %a, %b)\n  return %y\n}\n}\n");
}

TEST(CpuElementwise, Cast) {
  // Floats scaled to [-50, 50] so integer results vary; integer feeds are in [0, 3).
  const std::pair<const char *, const char *> fromFloat[] = {{"7", "i64"}, {"6", "i32"}, {"9", "bool"}, {"1", "f32"}};
  for (const auto &[to, name] : fromFloat) {
    SCOPED_TRACE(name);
    check(
        fmt::format("model opset(ai.onnx=17) ir_version=8 {{\nfunc @main(%x: f32[3,37]) -> (%y: ?) {{\n"
                    "  const %k = dense<f32[]: 50>\n  %s = Mul(%x, %k)\n  %y = Cast(%s) {{to = {}}}\n"
                    "  return %y\n}}\n}}\n",
                    to));
  }
  const std::pair<const char *, const char *> toFloat[] = {{"bool", "1"}, {"i64", "1"}, {"i32", "7"}, {"i64", "6"}};
  for (const auto &[from, to] : toFloat) {
    check(
        fmt::format("model opset(ai.onnx=17) ir_version=8 {{\nfunc @main(%x: {}[5,33]) -> (%y: ?) {{\n"
                    "  %y = Cast(%x) {{to = {}}}\n  return %y\n}}\n}}\n",
                    from, to));
  }
}

TEST(CpuElementwise, UncoveredFallsBack) {
  check(
      "model opset(ai.onnx=17) ir_version=8 {\nfunc @main(%a: i64[4], %b: i64[4]) -> (%y: ?) {\n"
      "  %y = Add(%a, %b)\n  return %y\n}\n}\n",
      2, /*requireNoFallback=*/false);
}

TEST(CpuElementwise, ChainsInPlace) {
  // Each op's input dies at it, so the planner may run them in place.
  check(
      "model opset(ai.onnx=17) ir_version=8 {\nfunc @main(%x: f32[8,129], %b: f32[129]) -> (%y: ?) {\n"
      "  %a = Add(%x, %b)\n  %t = Tanh(%a)\n  %m = Mul(%t, %x)\n  %y = Sigmoid(%m)\n  return %y\n}\n}\n");
}

/// Constants packed into plain heap memory, for running a step outside a plan.
class HeapConstants final : public ConstantStore {
 public:
  Expected<const std::byte *> packed(const std::string &node, std::string_view key, size_t bytes,
                                     const std::function<void(std::byte *)> &fill) override {
    auto &buffer = buffers_[node + "/" + std::string(key)];
    buffer.resize(bytes + 64);
    std::byte *aligned = buffer.data() + (64 - reinterpret_cast<uintptr_t>(buffer.data()) % 64) % 64;
    fill(aligned);
    return static_cast<const std::byte *>(aligned);
  }

 private:
  std::map<std::string, std::vector<std::byte>> buffers_;
};

/// Lowers the single node of a model (whose output type is written out) with its cpu lowering,
/// runs the step on seeded feeds and compares it with the reference interpreter. Checks the
/// lowering directly, independent of the planner.
void expectStepMatchesReference(const std::string &text, int threads = 2) {
  SCOPED_TRACE(text);
  auto parsed = parseModel(text, "test.tsl.txt");
  ASSERT_TRUE(parsed.ok()) << parsed.diag().str();
  const Model &model = *parsed;
  NamedValues feeds = testing::randomFeeds(model, 7);
  auto expected = ReferenceInterpreter(model).run(feeds);
  ASSERT_TRUE(expected.ok()) << expected.diag().str();
  ASSERT_EQ(model.graph->nodes().size(), 1u);
  const Node &node = *model.graph->nodes().front();
  HeapConstants constants;
  LowerContext ctx(node, model.opsetFor(node.domain()), constants, threads);
  LowerFn lower = findLowering(node.domain(), node.opType());
  ASSERT_NE(lower, nullptr);
  auto step = lower(ctx);
  ASSERT_TRUE(step.ok()) << step.diag().str();
  ASSERT_NE(*step, nullptr) << "the lowering did not cover the node";
  std::vector<const void *> inputs;
  for (const Value *input : node.inputs()) {
    const void *data = nullptr;
    for (const auto &[name, value] : feeds) {
      if (name == input->name()) data = value.tensor().rawData();
    }
    if (data == nullptr && input->hasInitializer()) data = input->initializer().rawData();
    ASSERT_NE(data, nullptr) << input->name();
    inputs.push_back(data);
  }
  Tensor out(ctx.outputDType(0), ctx.outputSizes(0));
  std::vector<void *> outputs = {out.rawData()};
  std::vector<std::byte> scratch((*step)->scratchBytes() + 64);
  ThreadPool pool(threads);
  StepIo io{inputs, outputs, scratch.data(), &pool};
  ASSERT_TRUE((*step)->run(io).ok());
  const Tensor &want = (*expected)[0].second.tensor();
  ASSERT_EQ(out.sizes(), want.sizes());
  int reported = 0;
  for (int64_t i = 0; i < want.numel(); ++i) {
    const double w = want.data<float>()[i], g = out.data<float>()[i];
    if (std::fabs(g - w) <= 1e-5 + 1e-4 * std::fabs(w)) continue;
    if (reported++ < 5) ADD_FAILURE() << (*step)->kernelName() << " element " << i << ": cpu " << g << ", ref " << w;
  }
}

TEST(CpuElementwise, TesselGelu) {
  for (const char *approximate : {"none", "tanh"}) {
    check(
        fmt::format("model opset(ai.onnx=17, tessel=1) ir_version=8 {{\n"
                    "func @main(%x: f32[3,257]) -> (%y: f32[3,257]) {{\n"
                    "  %y = tessel.Gelu(%x) {{approximate = \"{}\"}}\n  return %y\n}}\n}}\n",
                    approximate));
  }
}

/// A FusedElementwise of output type `yType` over inputs `params` ("%x: f32[..], ...") with
/// `body` lines.
std::string fusedModel(const std::string &yType, const std::string &params, const std::string &args,
                       const std::string &bodyLines) {
  return fmt::format(
      "model opset(ai.onnx=17, tessel=1) ir_version=8 {{\n"
      "func @main({0}) -> (%y: {3}) {{\n"
      "  %y = tessel.FusedElementwise({1}) {{\n"
      "    body = func @body({0}) -> (%r: ?) {{\n{2}"
      "      return %r\n    }}\n  }}\n  return %y\n}}\n}}\n",
      params, args, bodyLines, yType);
}

TEST(CpuFusedElementwise, ChainWithConstantsAndBroadcast) {
  expectStepMatchesReference(fusedModel("f32[2,3,77]", "%x: f32[2,3,77], %b: f32[77]", "%x, %b",
                                        "      const %half = dense<f32[]: 0.5>\n"
                                        "      %a = Add(%x, %b)\n      %m = Mul(%a, %half)\n      %r = Tanh(%m)\n"));
  // Ragged, several blocks, one thread.
  expectStepMatchesReference(fusedModel("f32[3,1001]", "%x: f32[3,1001], %b: f32[3,1]", "%x, %b",
                                        "      %a = Sub(%x, %b)\n      %e = Exp(%a)\n      %r = Div(%e, %b)\n"),
                             1);
}

TEST(CpuFusedElementwise, DagWithWhereAndReuse) {
  expectStepMatchesReference(fusedModel("f32[4,300]", "%x: f32[4,300], %c: bool[4,300]", "%x, %c",
                                        "      %s = Neg(%x)\n      %g = Sigmoid(%s)\n      %m = Mul(%s, %g)\n"
                                        "      const %zero = dense<f32[]: 0>\n      %r = Where(%c, %m, %zero)\n"));
  expectStepMatchesReference(fusedModel("f32[4,1,33]", "%x: f32[4,1,33], %c: bool[33], %z: f32[]", "%x, %c, %z",
                                        "      %m = Mul(%x, %x)\n      %r = Where(%c, %m, %z)\n"));
}

TEST(CpuFusedElementwise, EveryUnaryInABody) {
  std::string lines = "      %v0 = Tanh(%x)\n";
  int k = 0;
  for (const char *op :
       {"Relu", "Sigmoid", "Exp", "Neg", "Abs", "Erf", "HardSwish", "Softplus", "Sqrt", "Reciprocal", "Log"}) {
    // Sqrt, Reciprocal and Log see positive values: Exp's output or 1 + |.|.
    const bool positive = std::string(op) == "Sqrt" || std::string(op) == "Reciprocal" || std::string(op) == "Log";
    if (positive) {
      lines += fmt::format("      %p{0} = Exp(%v{0})\n      %v{1} = {2}(%p{0})\n", k, k + 1, op);
    } else {
      lines += fmt::format("      %v{} = {}(%v{})\n", k + 1, op, k);
    }
    ++k;
  }
  lines += fmt::format("      %l = LeakyRelu(%v{}) {{alpha = 0.3}}\n", k);
  lines += "      %h = HardSigmoid(%l)\n      const %lo = dense<f32[]: 0.1>\n      %c = Clip(%h, %lo)\n";
  lines += "      const %two = dense<f32[]: 2>\n      %q = Pow(%c, %two)\n      %g = tessel.Gelu(%q)\n";
  lines += "      %t = tessel.Gelu(%g) {approximate = \"tanh\"}\n      %mx = Max(%t, %x)\n      %r = Min(%mx, %lo)\n";
  expectStepMatchesReference(fusedModel("f32[5,67]", "%x: f32[5,67]", "%x", lines));
}

TEST(CpuFusedElementwise, ScalarOnlyResultIsSpread) {
  expectStepMatchesReference(fusedModel("f32[3,5]", "%x: f32[3,5], %s: f32[]", "%x, %s", "      %r = Exp(%s)\n"));
}

TEST(CpuFusedElementwise, UncoveredBodyFallsBack) {
  check(fusedModel("f32[3,5]", "%x: f32[3,5], %b: f32[3,5]", "%x, %b",
                   "      %g = Greater(%x, %b)\n      %r = Where(%g, %x, %b)\n"),
        2, /*requireNoFallback=*/false);
}

TEST(CpuFusedElementwise, FusedByThePipeline) {
  CpuCheck options;
  options.optLevel = 3;
  expectCpuMatchesReference(
      "model opset(ai.onnx=17) ir_version=8 {\nfunc @main(%x: f32[2,3,77], %b: f32[77]) -> (%y: ?) {\n"
      "  const %half = dense<f32[]: 0.5>\n  %a = Add(%x, %b)\n  %m = Mul(%a, %half)\n  %y = Tanh(%m)\n"
      "  return %y\n}\n}\n",
      options);
}

}  // namespace
}  // namespace tessel::cpu
