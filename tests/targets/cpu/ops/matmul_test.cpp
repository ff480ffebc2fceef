// MatMul, Gemm and tessel FusedMatMul on the cpu target against the reference interpreter: runtime
// and constant (packed) operands, batch folding and batch broadcasting, 1-D operands, Gemm's
// transA/transB/alpha/beta and every C broadcast, every FusedMatMul epilogue, on one and two
// threads; the reference fallback for other dtypes and the diagnostics for a bad node.
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

std::string sizesText(const std::vector<int64_t> &sizes) { return fmt::format("[{}]", fmt::join(sizes, ",")); }

/// One operand: a graph input, or a constant when `constant` is set.
struct Operand {
  std::string name;
  std::vector<int64_t> sizes;
  bool constant = false;
};

/// A model with one node `%y = call` over `operands` (inputs or constants, in order) and Y of
/// `ySizes` (-O0 runs no shape inference, so the test states it).
std::string modelText(const std::vector<Operand> &operands, const std::string &call,
                      const std::vector<int64_t> &ySizes) {
  std::vector<std::string> inputs;
  std::string body;
  uint32_t seed = 1;
  for (const Operand &o : operands) {
    if (o.constant) {
      body += constant(o.name, o.sizes, seed++);
    } else {
      inputs.push_back(fmt::format("%{}: f32{}", o.name, sizesText(o.sizes)));
    }
  }
  return fmt::format(
      "model opset(ai.onnx=17, tessel=1) ir_version=8 {{\n"
      "func @main({}) -> (%y: {}) {{\n{}  %y = {}\n  return %y\n}}\n}}\n",
      fmt::join(inputs, ", "), "f32" + sizesText(ySizes), body, call);
}

void check(const std::vector<Operand> &operands, const std::string &call, const std::vector<int64_t> &ySizes,
           int threads = 2) {
  const std::string text = modelText(operands, call, ySizes);
  SCOPED_TRACE(::testing::Message() << "threads=" << threads << " " << call << " "
                                  << text.substr(0, std::min<size_t>(text.size(), 300)));
  CpuCheck options;
  options.threads = threads;
  expectCpuMatchesReference(text, options);
}

/// Checks on one and two threads.
void checkBoth(const std::vector<Operand> &operands, const std::string &call, const std::vector<int64_t> &ySizes) {
  check(operands, call, ySizes, 1);
  check(operands, call, ySizes, 2);
}

TEST(CpuMatMul, TwoDimensionalRuntimeOperands) {
  checkBoth({{"a", {37, 53}}, {"b", {53, 41}}}, "MatMul(%a, %b)", {37, 41});
  checkBoth({{"a", {1, 300}}, {"b", {300, 7}}}, "MatMul(%a, %b)", {1, 7});
}

TEST(CpuMatMul, ConstantWeightsArePacked) {
  // A [batch, seq, hidden] times constant weights: one folded product over batch x seq rows;
  // K = 600 crosses the GEMM's K blocks.
  checkBoth({{"a", {2, 19, 600}}, {"w", {600, 45}, true}}, "MatMul(%a, %w)", {2, 19, 45});
  checkBoth({{"a", {5, 33}}, {"w", {33, 70}, true}}, "MatMul(%a, %w)", {5, 70});
}

TEST(CpuMatMul, ConstantLeftOperand) {
  checkBoth({{"w", {13, 30}, true}, {"b", {30, 17}}}, "MatMul(%w, %b)", {13, 17});
}

TEST(CpuMatMul, BatchBroadcasting) {
  checkBoth({{"a", {3, 1, 7, 20}}, {"b", {4, 20, 9}}}, "MatMul(%a, %b)", {3, 4, 7, 9});
  checkBoth({{"a", {3, 1, 7, 20}}, {"b", {4, 20, 9}, true}}, "MatMul(%a, %b)", {3, 4, 7, 9});
  // A broadcast against a batched B: no folding.
  checkBoth({{"a", {7, 20}}, {"b", {5, 20, 9}}}, "MatMul(%a, %b)", {5, 7, 9});
  // Attention-shaped: many small products side by side.
  checkBoth({{"q", {1, 6, 16, 8}}, {"k", {1, 6, 8, 16}}}, "MatMul(%q, %k)", {1, 6, 16, 16});
}

TEST(CpuMatMul, OneDimensionalOperands) {
  checkBoth({{"a", {20}}, {"b", {20, 9}}}, "MatMul(%a, %b)", {9});
  checkBoth({{"a", {2, 7, 20}}, {"b", {20}}}, "MatMul(%a, %b)", {2, 7});
  checkBoth({{"a", {20}}, {"b", {20}}}, "MatMul(%a, %b)", {});
  checkBoth({{"a", {20}}, {"b", {3, 20, 4}, true}}, "MatMul(%a, %b)", {3, 4});
}

TEST(CpuGemm, Transposes) {
  for (const int transA : {0, 1}) {
    for (const int transB : {0, 1}) {
      const std::vector<int64_t> a = transA ? std::vector<int64_t>{23, 11} : std::vector<int64_t>{11, 23};
      const std::vector<int64_t> b = transB ? std::vector<int64_t>{37, 23} : std::vector<int64_t>{23, 37};
      const std::string call = fmt::format("Gemm(%a, %b) {{transA = {}, transB = {}}}", transA, transB);
      for (const bool constB : {false, true}) {
        for (const bool constA : {false, true}) {
          if (constA && constB) continue;
          check({{"a", a, constA}, {"b", b, constB}}, call, {11, 37});
        }
      }
    }
  }
}

TEST(CpuGemm, AlphaBetaAndCBroadcasts) {
  const int64_t m = 9, k = 14, n = 21;
  const std::vector<std::vector<int64_t>> cShapes = {{n}, {1, n}, {m, 1}, {m, n}, {1}, {}, {1, 1}};
  for (const std::vector<int64_t> &c : cShapes) {
    for (const bool constC : {false, true}) {
      for (const bool constB : {false, true}) {
        for (const auto &[alpha, beta] : {std::pair{1.0f, 1.0f}, std::pair{0.5f, 1.0f}, std::pair{1.0f, -2.0f},
                                          std::pair{1.5f, 0.25f}}) {
          const std::string call = fmt::format("Gemm(%a, %b, %c) {{alpha = {}, beta = {}, transB = 1}}", alpha, beta);
          check({{"a", {m, k}}, {"b", {n, k}, constB}, {"c", c, constC}}, call, {m, n});
        }
      }
    }
  }
  // No C, alpha only.
  check({{"a", {m, k}}, {"b", {k, n}}}, "Gemm(%a, %b) {alpha = 3.0}", {m, n});
  // A linear layer across cache blocks on both threads.
  checkBoth({{"a", {70, 300}}, {"b", {130, 300}, true}, {"c", {130}, true}}, "Gemm(%a, %b, %c) {transB = 1}", {70, 130});
}

TEST(CpuFusedMatMul, Epilogues) {
  const std::vector<std::string> activations = {
      "",
      "activation = \"Relu\"",
      "activation = \"Clip\", activation_params = [-0.25, 0.5]",
      "activation = \"Sigmoid\"",
      "activation = \"Tanh\"",
      "activation = \"Silu\"",
      "activation = \"Gelu\"",
      "activation = \"GeluTanh\"",
      "activation = \"LeakyRelu\", activation_params = [0.1]",
  };
  for (const std::string &activation : activations) {
    const std::string attributes = activation.empty() ? "" : " {" + activation + "}";
    check({{"a", {2, 11, 40}}, {"w", {40, 35}, true}, {"bias", {35}, true}, {"z", {2, 11, 35}}},
          "tessel.FusedMatMul(%a, %w, %bias, %z)" + attributes, {2, 11, 35});
  }
  checkBoth({{"a", {3, 40}}, {"w", {40, 35}}, {"bias", {35}}}, "tessel.FusedMatMul(%a, %w, %bias) {activation = \"Relu\"}",
            {3, 35});
  checkBoth({{"a", {2, 5, 9, 16}}, {"b", {2, 5, 16, 12}}, {"z", {2, 5, 9, 12}}},
            "tessel.FusedMatMul(%a, %b, _, %z) {activation = \"Gelu\"}", {2, 5, 9, 12});
}

TEST(CpuMatMul, OtherDtypesFallBack) {
  const std::string text =
      "model opset(ai.onnx=17) ir_version=8 {\n"
      "func @main(%a: f64[3, 4], %b: f64[4, 5]) -> (%y: f64[3, 5]) {\n  %y = MatMul(%a, %b)\n  return %y\n}\n}\n";
  auto model = parseModel(text, "test.tsl.txt");
  ASSERT_TRUE(model.ok()) << model.diag().str();
  auto executable = compileCpu(std::move(*model), {0, 1});
  ASSERT_TRUE(executable.ok()) << executable.diag().str();
  EXPECT_EQ((*executable)->summary().fallbacks.size(), 1u);
}

TEST(CpuFusedMatMul, BadActivationIsADiagnostic) {
  const std::string text = modelText({{"a", {3, 4}}, {"b", {4, 5}}},
                                     "tessel.FusedMatMul(%a, %b) {activation = \"Clip\", activation_params = [1.0]}",
                                     {3, 5});
  auto model = parseModel(text, "test.tsl.txt");
  ASSERT_TRUE(model.ok()) << model.diag().str();
  auto executable = compileCpu(std::move(*model), {0, 1});
  ASSERT_FALSE(executable.ok());
  EXPECT_NE(executable.diag().str().find("FusedMatMul"), std::string::npos) << executable.diag().str();
}

/// Compiling `text` fails with a diagnostic that names `op`; or, where the op's own shape inference
/// already rejects the node (so it is left to the reference kernel), running it does.
void expectDiagnostic(const std::string &text, const std::string &op) {
  auto model = parseModel(text, "test.tsl.txt");
  ASSERT_TRUE(model.ok()) << model.diag().str();
  NamedValues feeds = testing::randomFeeds(*model, 1);
  auto executable = compileCpu(std::move(*model), {0, 1});
  if (!executable.ok()) {
    EXPECT_NE(executable.diag().str().find(op), std::string::npos) << executable.diag().str();
    return;
  }
  auto outputs = (*executable)->run(feeds);
  ASSERT_FALSE(outputs.ok()) << text;
  EXPECT_NE(outputs.diag().str().find(op), std::string::npos) << outputs.diag().str();
}

TEST(CpuMatMul, BadShapesAreDiagnostics) {
  expectDiagnostic(modelText({{"a", {3, 4}}, {"b", {5, 6}}}, "MatMul(%a, %b)", {3, 6}), "MatMul");
  expectDiagnostic(modelText({{"a", {2, 3, 4}}, {"b", {3, 4, 6}}}, "MatMul(%a, %b)", {2, 3, 6}), "MatMul");
  expectDiagnostic(modelText({{"a", {3, 4}}, {"b", {4, 6}}, {"c", {2, 6}}}, "Gemm(%a, %b, %c)", {3, 6}), "Gemm");
  expectDiagnostic(modelText({{"a", {3, 4}}, {"b", {4, 6}}, {"bias", {5}}}, "tessel.FusedMatMul(%a, %b, %bias)", {3, 6}),
                   "FusedMatMul");
}

}  // namespace
}  // namespace tessel::cpu
