// -O3 must not change what a model computes beyond rounding: the reference target's outputs before
// and after the pipeline agree to 1e-5 relative, for the ONNX suite's models (PyTorch-exported,
// node and simple) and for small hand-written models of each fusion (where the fused op must
// also appear).
#include <gtest/gtest.h>
#include <fmt/format.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

#include <onnx/onnx_pb.h>

#include "frontend/onnx/importer.h"
#include "frontend/onnx/tensor_proto.h"
#include "ir/parser.h"
#include "ops/reference/helpers.h"
#include "passes/pipelines.h"
#include "targets/ref/interpreter.h"

namespace tessel {
namespace {

namespace fs = std::filesystem;

constexpr double kRelTol = 1e-5;
constexpr double kAbsTol = 1e-6;  // For values that round to about zero.

/// "" when `a` and `b` agree (floats to kRelTol, others exactly), else the first difference.
std::string compareTensors(const Tensor &a, const Tensor &b) {
  if (a.dtype() != b.dtype() || a.sizes() != b.sizes()) {
    return fmt::format("{}{} vs {}{}", dtypeName(a.dtype()), formatSizes(a.sizes()), dtypeName(b.dtype()),
                       formatSizes(b.sizes()));
  }
  if (a.dtype() == DType::String) return "";
  std::vector<double> x = ref::toDoubles(a), y = ref::toDoubles(b);
  const double rel = isFloatingPoint(a.dtype()) ? kRelTol : 0.0, abs = isFloatingPoint(a.dtype()) ? kAbsTol : 0.0;
  for (size_t i = 0; i < x.size(); ++i) {
    if (std::isnan(x[i]) && std::isnan(y[i])) continue;
    if (x[i] == y[i]) continue;
    if (std::abs(x[i] - y[i]) <= abs + rel * std::max(std::abs(x[i]), std::abs(y[i]))) continue;
    return fmt::format("element {}: {} before, {} after", i, x[i], y[i]);
  }
  return "";
}

Expected<bool> optimize(Model &model) {
  PassManager manager;
  TESSEL_RETURN_IF_ERROR(addOptimizationPipeline(manager, 3));
  return manager.run(model);
}

/// The tensor inputs of test_data_set_0, bound in order to the inputs without initializers.
std::optional<NamedValues> readFeeds(const fs::path &caseDir, const Graph &graph) {
  std::vector<Value *> feedable;
  for (Value *input : graph.inputs()) {
    if (!input->hasInitializer()) feedable.push_back(input);
  }
  NamedValues feeds;
  for (size_t i = 0;; ++i) {
    fs::path file = caseDir / "test_data_set_0" / ("input_" + std::to_string(i) + ".pb");
    if (!fs::exists(file)) break;
    if (i >= feedable.size() || !feedable[i]->type().isTensor()) return std::nullopt;
    std::ifstream in(file, std::ios::binary);
    std::stringstream bytes;
    bytes << in.rdbuf();
    onnx::TensorProto proto;
    if (!proto.ParseFromString(bytes.str())) return std::nullopt;
    auto tensor = onnx_frontend::tensorFromProto(proto, ".");
    if (!tensor.ok()) return std::nullopt;
    feeds.emplace_back(feedable[i]->name(), RuntimeValue(std::move(tensor).value()));
  }
  return feeds;
}

TEST(O3Numerics, OnnxSuiteOutputsAgreeBeforeAndAfter) {
  int compared = 0, fused = 0;
  for (const char *suite : {"pytorch-converted", "pytorch-operator", "node", "simple"}) {
    fs::path root = fs::path("/usr/share/libonnx-testdata/data") / suite;
    if (!fs::exists(root)) GTEST_SKIP() << root << " is not installed";
    std::vector<fs::path> cases;
    for (const auto &entry : fs::directory_iterator(root)) cases.push_back(entry.path());
    std::sort(cases.begin(), cases.end());
    for (const fs::path &dir : cases) {
      auto original = importOnnxFile((dir / "model.onnx").string());
      auto optimized = importOnnxFile((dir / "model.onnx").string());
      if (!original.ok() || !optimized.ok()) continue;
      std::optional<NamedValues> feeds = readFeeds(dir, *original->graph);
      if (!feeds) continue;
      auto before = ReferenceInterpreter(*original).run(*feeds);
      if (!before.ok()) continue;  // Not supported on ref: nothing to compare against.
      auto ran = optimize(*optimized);
      ASSERT_TRUE(ran.ok()) << dir << ": " << ran.diag().str();
      if (optimized->opsetFor("tessel") > 0) ++fused;
      auto after = ReferenceInterpreter(*optimized).run(*feeds);
      ASSERT_TRUE(after.ok()) << dir << ": " << after.diag().str();
      ASSERT_EQ(before->size(), after->size()) << dir;
      for (size_t i = 0; i < before->size(); ++i) {
        EXPECT_EQ((*before)[i].first, (*after)[i].first) << dir << ": output " << i << " was renamed";
        const RuntimeValue &a = (*before)[i].second, &b = (*after)[i].second;
        EXPECT_EQ(a.describe(), b.describe()) << dir << ": output " << i;
        std::vector<std::pair<const Tensor *, const Tensor *>> pairs;
        if (a.isTensor() && b.isTensor()) pairs.emplace_back(&a.tensor(), &b.tensor());
        if (a.isSequence() && b.isSequence() && a.sequence().size() == b.sequence().size()) {
          for (size_t j = 0; j < a.sequence().size(); ++j) pairs.emplace_back(&a.sequence()[j], &b.sequence()[j]);
        }
        for (const auto &[x, y] : pairs) {
          EXPECT_EQ(compareTensors(*x, *y), "") << dir << ": output " << i << " differs after -O3";
        }
      }
      ++compared;
    }
  }
  EXPECT_GT(compared, 500);
  std::printf("compared %d models; -O3 made tessel ops in %d\n", compared, fused);
}

// ---- Hand-written models, one per fusion ----

/// `const %name = dense<f32[sizes]: ...>` with deterministic values in [lo, hi].
std::string constant(const std::string &name, const std::vector<int64_t> &sizes, unsigned seed, double lo = -1,
                     double hi = 1) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> dist(lo, hi);
  std::vector<std::string> values;
  for (int64_t i = 0; i < numElements(sizes); ++i) values.push_back(fmt::format("{:.6g}", dist(rng)));
  std::vector<std::string> dims;
  for (int64_t s : sizes) dims.push_back(std::to_string(s));
  return fmt::format("  const %{} = dense<f32[{}]: {}>\n", name, fmt::join(dims, ","), fmt::join(values, ", "));
}

/// Random feeds for every graph input without an initializer (floats in [-2, 2], bools).
NamedValues randomFeeds(const Graph &graph, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> dist(-2.0, 2.0);
  NamedValues feeds;
  for (const Value *input : graph.inputs()) {
    if (input->hasInitializer()) continue;
    std::vector<int64_t> sizes = *input->type().shape().sizes();
    std::vector<double> values(static_cast<size_t>(numElements(sizes)));
    for (double &v : values) v = input->type().dtype() == DType::Bool ? static_cast<double>(rng() % 2) : dist(rng);
    feeds.emplace_back(input->name(), RuntimeValue(ref::fromDoubles(input->type().dtype(), sizes, values)));
  }
  return feeds;
}

int countOps(const Graph &graph, const std::string &opType) {
  int count = 0;
  for (const auto &node : graph.nodes()) count += node->opType() == opType ? 1 : 0;
  return count;
}

/// Runs `text` before and after -O3, expects `fusedOp` in the result and the outputs to agree.
void expectFusionKeepsNumerics(const std::string &text, const std::string &fusedOp, int expectedCount = 1) {
  auto original = parseModel(text, "fusion");
  ASSERT_TRUE(original.ok()) << original.diag().str() << "\n" << text;
  auto optimized = parseModel(text, "fusion");
  ASSERT_TRUE(optimized.ok());
  auto ran = optimize(*optimized);
  ASSERT_TRUE(ran.ok()) << ran.diag().str();
  EXPECT_EQ(countOps(*optimized->graph, fusedOp), expectedCount) << fusedOp << " expected after -O3 in\n" << text;
  for (unsigned seed : {1u, 2u}) {
    NamedValues feeds = randomFeeds(*original->graph, seed);
    auto before = ReferenceInterpreter(*original).run(feeds);
    ASSERT_TRUE(before.ok()) << before.diag().str();
    auto after = ReferenceInterpreter(*optimized).run(feeds);
    ASSERT_TRUE(after.ok()) << after.diag().str();
    ASSERT_EQ(before->size(), after->size());
    for (size_t i = 0; i < before->size(); ++i) {
      EXPECT_EQ((*before)[i].first, (*after)[i].first);
      EXPECT_EQ(compareTensors((*before)[i].second.tensor(), (*after)[i].second.tensor()), "")
          << fusedOp << ": output " << i;
    }
  }
}

TEST(O3Numerics, BatchNormFoldsIntoConvAndRelu) {
  std::string text = "model opset(ai.onnx=13) ir_version=8 {\nfunc @main(%x: f32[2,3,5,7]) -> (%y: ?) {\n";
  text += constant("w", {4, 3, 3, 3}, 1) + constant("b", {4}, 2) + constant("scale", {4}, 3, 0.5, 2) +
          constant("shift", {4}, 4) + constant("mean", {4}, 5) + constant("var", {4}, 6, 0.1, 3);
  text += "  %c = Conv(%x, %w, %b) {pads = [1, 0, 1, 2], strides = [2, 1]}\n"
          "  %n = BatchNormalization(%c, %scale, %shift, %mean, %var) {epsilon = 0.001}\n"
          "  %y = Relu(%n)\n  return %y\n}\n}\n";
  expectFusionKeepsNumerics(text, "FusedConv");
}

TEST(O3Numerics, ConvEpilogueWithChannelBiasResidualAndSilu) {
  std::string text =
      "model opset(ai.onnx=13) ir_version=8 {\nfunc @main(%x: f32[1,4,6,5], %z: f32[1,6,6,5]) -> (%y: ?) {\n";
  text += constant("w", {6, 2, 3, 3}, 7) + constant("cb", {1, 6, 1, 1}, 8);
  text += "  %c = Conv(%x, %w) {group = 2, pads = [1, 1, 1, 1]}\n  %s = Add(%c, %cb)\n  %r = Add(%z, %s)\n"
          "  %g = Sigmoid(%r)\n  %y = Mul(%g, %r)\n  return %y\n}\n}\n";
  expectFusionKeepsNumerics(text, "FusedConv");
}

TEST(O3Numerics, MatMulEpiloguesAndGemm) {
  std::string text = "model opset(ai.onnx=13) ir_version=8 {\nfunc @main(%a: f32[2,3,7], %z: f32[2,3,5], %g: "
                     "f32[4,7]) -> (%y: ?, %u: ?) {\n";
  text += constant("w", {7, 5}, 9) + constant("b", {5}, 10) + constant("wt", {6, 7}, 11) + constant("c", {6}, 12);
  text += "  const %lo = dense<f32[]: -0.5>\n  const %hi = dense<f32[]: 0.75>\n"
          "  %m = MatMul(%a, %w)\n  %s = Add(%m, %b)\n  %r = Add(%s, %z)\n  %y = Tanh(%r)\n"
          "  %gm = Gemm(%g, %wt, %c) {transB = 1}\n  %u = Clip(%gm, %lo, %hi)\n  return %y, %u\n}\n}\n";
  expectFusionKeepsNumerics(text, "FusedMatMul", 2);
}

TEST(O3Numerics, GeluFormsBecomeGeluAndFuseIntoMatMul) {
  std::string text = "model opset(ai.onnx=13) ir_version=8 {\nfunc @main(%a: f32[3,6], %x: f32[5,3]) -> (%y: ?, %t: "
                     "?) {\n";
  text += constant("w", {6, 4}, 13);
  text += "  const %sqrt2 = dense<f32[]: 1.4142135>\n  const %one = dense<f32[]: 1>\n"
          "  const %half = dense<f32[]: 0.5>\n  const %three = dense<f32[]: 3>\n"
          "  const %c = dense<f32[]: 0.044715>\n  const %k = dense<f32[]: 0.7978845608>\n"
          "  %m = MatMul(%a, %w)\n  %d = Div(%m, %sqrt2)\n  %e = Erf(%d)\n  %p = Add(%e, %one)\n"
          "  %h = Mul(%m, %half)\n  %y = Mul(%h, %p)\n"
          "  %cube = Pow(%x, %three)\n  %cc = Mul(%cube, %c)\n  %in = Add(%x, %cc)\n  %arg = Mul(%in, %k)\n"
          "  %th = Tanh(%arg)\n  %tp = Add(%th, %one)\n  %xh = Mul(%x, %half)\n  %t = Mul(%xh, %tp)\n"
          "  return %y, %t\n}\n}\n";
  expectFusionKeepsNumerics(text, "Gelu", 1);  // The erf one became FusedMatMul's activation.
  expectFusionKeepsNumerics(text, "FusedMatMul", 1);
}

TEST(O3Numerics, LayerNormAndSoftmaxRecognized) {
  std::string text = "model opset(ai.onnx=13) ir_version=8 {\nfunc @main(%x: f32[2,5,9]) -> (%y: ?, %s: ?) {\n";
  text += constant("g", {9}, 14) + constant("b", {9}, 15);
  text += "  %mean = ReduceMean(%x) {axes = [-1]}\n  %d = Sub(%x, %mean)\n  const %two = dense<f32[]: 2>\n"
          "  %sq = Pow(%d, %two)\n  %var = ReduceMean(%sq) {axes = [-1]}\n  const %eps = dense<f32[]: 1e-05>\n"
          "  %ve = Add(%var, %eps)\n  %std = Sqrt(%ve)\n  %n = Div(%d, %std)\n  %sc = Mul(%n, %g)\n"
          "  %y = Add(%sc, %b)\n"
          "  %mx = ReduceMax(%x) {axes = [-1]}\n  %sub = Sub(%x, %mx)\n  %ex = Exp(%sub)\n"
          "  const %axes = dense<i64[1]: -1>\n  %sum = ReduceSum(%ex, %axes)\n  %s = Div(%ex, %sum)\n"
          "  return %y, %s\n}\n}\n";
  expectFusionKeepsNumerics(text, "LayerNormalization");
  expectFusionKeepsNumerics(text, "Softmax");
}

TEST(O3Numerics, BertAndCausalAttentionRecognized) {
  // BERT: [B,S,H,D] projections, Transpose(0,2,1,3) for Q and V, the fused (0,2,3,1) for K.
  std::string text = "model opset(ai.onnx=13) ir_version=8 {\nfunc @main(%qr: f32[2,5,3,4], %kr: f32[2,5,3,4], %vr: "
                     "f32[2,5,3,6], %mask: f32[2,1,1,5]) -> (%y: ?) {\n"
                     "  %q = Transpose(%qr) {perm = [0, 2, 1, 3]}\n  %kt = Transpose(%kr) {perm = [0, 2, 3, 1]}\n"
                     "  %v = Transpose(%vr) {perm = [0, 2, 1, 3]}\n  %s = MatMul(%q, %kt)\n"
                     "  const %sqrtd = dense<f32[]: 2>\n  %sd = Div(%s, %sqrtd)\n  %sm = Add(%sd, %mask)\n"
                     "  %p = Softmax(%sm) {axis = -1}\n  %y = MatMul(%p, %v)\n  return %y\n}\n}\n";
  expectFusionKeepsNumerics(text, "Attention");
  // GPT-2: causal Where over Sq = 3 queries and Sk = 4 keys (a cached key first).
  std::string causal = "model opset(ai.onnx=13) ir_version=8 {\nfunc @main(%q: f32[1,2,3,4], %k: f32[1,2,4,4], %v: "
                       "f32[1,2,4,3]) -> (%y: ?) {\n"
                       "  %kt = Transpose(%k) {perm = [0, 1, 3, 2]}\n  %s = MatMul(%q, %kt)\n"
                       "  const %d = dense<f32[]: 0.5>\n  %sd = Mul(%s, %d)\n"
                       "  const %tri = dense<bool[1,1,3,4]: true, true, false, false, true, true, true, false, true, "
                       "true, true, true>\n"
                       "  const %neg = dense<f32[]: -3.4028235e+38>\n  %sw = Where(%tri, %sd, %neg)\n"
                       "  %p = Softmax(%sw) {axis = -1}\n  %y = MatMul(%p, %v)\n  return %y\n}\n}\n";
  expectFusionKeepsNumerics(causal, "Attention");
}

TEST(O3Numerics, RankThreeAttentionRecognized) {
  // ViT (PyTorch's MultiheadAttention): [S,B*H,D] projections, Transpose(1,0,2) for Q and V, the
  // fused (1,2,0) for K, Q divided before the score MatMul.
  std::string vit = "model opset(ai.onnx=13) ir_version=8 {\nfunc @main(%qr: f32[5,6,4], %kr: f32[5,6,4], %vr: "
                    "f32[5,6,3]) -> (%y: ?) {\n"
                    "  %q = Transpose(%qr) {perm = [1, 0, 2]}\n  %kt = Transpose(%kr) {perm = [1, 2, 0]}\n"
                    "  %v = Transpose(%vr) {perm = [1, 0, 2]}\n  const %sqrtd = dense<f32[]: 2>\n"
                    "  %qs = Div(%q, %sqrtd)\n  %s = MatMul(%qs, %kt)\n"
                    "  %p = Softmax(%s) {axis = -1}\n  %y = MatMul(%p, %v)\n  return %y\n}\n}\n";
  expectFusionKeepsNumerics(vit, "Attention");
  // [B*H,S,D] heads: scores multiplied, causal Where over Sq = 3 and Sk = 4, a rank-3 additive mask.
  std::string masked = "model opset(ai.onnx=13) ir_version=8 {\nfunc @main(%q: f32[2,3,4], %k: f32[2,4,4], %v: "
                       "f32[2,4,3], %mask: f32[2,3,4]) -> (%y: ?) {\n"
                       "  %kt = Transpose(%k) {perm = [0, 2, 1]}\n  %s = MatMul(%q, %kt)\n"
                       "  const %d = dense<f32[]: 0.5>\n  %sd = Mul(%s, %d)\n"
                       "  const %tri = dense<bool[3,4]: true, true, false, false, true, true, true, false, true, "
                       "true, true, true>\n"
                       "  const %neg = dense<f32[]: -10000>\n  %sw = Where(%tri, %sd, %neg)\n  %sm = Add(%sw, %mask)\n"
                       "  %p = Softmax(%sm) {axis = -1}\n  %y = MatMul(%p, %v)\n  return %y\n}\n}\n";
  expectFusionKeepsNumerics(masked, "Attention");
}

/// The decomposed layer norm of `x` over its last axis as PyTorch exports it, ending in `out`.
std::string layerNorm(const std::string &x, const std::string &out, const std::string &g, const std::string &b) {
  return fmt::format(
      "  %{0}_mean = ReduceMean(%{0}) {{axes = [-1]}}\n  %{0}_d = Sub(%{0}, %{0}_mean)\n"
      "  %{0}_sq = Pow(%{0}_d, %two)\n  %{0}_var = ReduceMean(%{0}_sq) {{axes = [-1]}}\n"
      "  %{0}_ve = Add(%{0}_var, %eps)\n  %{0}_std = Sqrt(%{0}_ve)\n  %{0}_n = Div(%{0}_d, %{0}_std)\n"
      "  %{0}_sc = Mul(%{0}_n, %{2})\n  %{1} = Add(%{0}_sc, %{3})\n",
      x, out, g, b);
}

TEST(O3Numerics, BertEncoderLayerFusesEndToEnd) {
  // hidden 8 = 2 heads x 4; the projections are MatMul + bias, the FFN uses the erf GELU.
  std::string text = "model opset(ai.onnx=13) ir_version=8 {\nfunc @main(%x: f32[2,5,8], %mask: f32[2,1,1,5]) -> "
                     "(%out: ?) {\n";
  unsigned seed = 20;
  for (const char *name : {"wq", "wk", "wv", "wo"}) text += constant(name, {8, 8}, seed++, -0.5, 0.5);
  for (const char *name : {"bq", "bk", "bv", "bo", "b2", "g1", "c1", "g2", "c2"}) text += constant(name, {8}, seed++);
  text += constant("w1", {8, 12}, seed++, -0.5, 0.5);
  text += constant("b1", {12}, seed++);
  text += constant("w2", {12, 8}, seed++, -0.5, 0.5);
  text += "  const %heads = dense<i64[4]: 2, 5, 2, 4>\n  const %hidden = dense<i64[3]: 2, 5, 8>\n"
          "  const %two = dense<f32[]: 2>\n  const %eps = dense<f32[]: 1e-12>\n"
          "  const %sqrt2 = dense<f32[]: 1.4142135>\n  const %one = dense<f32[]: 1>\n"
          "  const %half = dense<f32[]: 0.5>\n";
  for (const char *p : {"q", "k", "v"}) {
    text += fmt::format("  %{0}m = MatMul(%x, %w{0})\n  %{0}b = Add(%{0}m, %b{0})\n  %{0}r = Reshape(%{0}b, %heads)\n",
                        p);
  }
  text += "  %q = Transpose(%qr) {perm = [0, 2, 1, 3]}\n  %kt = Transpose(%kr) {perm = [0, 2, 3, 1]}\n"
          "  %v = Transpose(%vr) {perm = [0, 2, 1, 3]}\n  %s = MatMul(%q, %kt)\n  %sd = Div(%s, %two)\n"
          "  %sm = Add(%sd, %mask)\n  %p = Softmax(%sm) {axis = -1}\n  %ctx = MatMul(%p, %v)\n"
          "  %ct = Transpose(%ctx) {perm = [0, 2, 1, 3]}\n  %cr = Reshape(%ct, %hidden)\n"
          "  %om = MatMul(%cr, %wo)\n  %ob = Add(%om, %bo)\n  %res1 = Add(%ob, %x)\n";
  text += layerNorm("res1", "ln1", "g1", "c1");
  text += "  %f1 = MatMul(%ln1, %w1)\n  %f1b = Add(%f1, %b1)\n  %gd = Div(%f1b, %sqrt2)\n  %ge = Erf(%gd)\n"
          "  %gp = Add(%ge, %one)\n  %gh = Mul(%f1b, %half)\n  %gelu = Mul(%gh, %gp)\n"
          "  %f2 = MatMul(%gelu, %w2)\n  %f2b = Add(%f2, %b2)\n  %res2 = Add(%f2b, %ln1)\n";
  text += layerNorm("res2", "out", "g2", "c2");
  text += "  return %out\n}\n}\n";
  expectFusionKeepsNumerics(text, "Attention");
  expectFusionKeepsNumerics(text, "LayerNormalization", 2);
  expectFusionKeepsNumerics(text, "FusedMatMul", 6);
}

TEST(O3Numerics, ElementwiseChainsFuse) {
  std::string text = "model opset(ai.onnx=13) ir_version=8 {\nfunc @main(%x: f32[3,4,5], %b: f32[5], %c: bool[3,4,5]) "
                     "-> (%y: ?) {\n"
                     "  const %half = dense<f32[]: 0.5>\n  const %zero = dense<f32[]: 0>\n"
                     "  %a = Add(%x, %b)\n  %m = Mul(%a, %half)\n  %e = Exp(%m)\n  %s = Sub(%e, %a)\n"
                     "  %w = Where(%c, %s, %zero)\n  %y = Abs(%w)\n  return %y\n}\n}\n";
  expectFusionKeepsNumerics(text, "FusedElementwise");
}

}  // namespace
}  // namespace tessel

namespace tessel {
namespace {

/// Runs a one-output model on random feeds with the reference target.
Expected<NamedValues> runText(const std::string &text) {
  auto model = parseModel(text, "fused");
  if (!model.ok()) return model.diag();
  return ReferenceInterpreter(*model).run(randomFeeds(*model->graph, 3));
}

TEST(FusedOpReference, BadAttributesAndShapesAreDiagnosticsNamingTheOp) {
  auto badActivation = runText(
      "model opset(ai.onnx=13, tessel=1) ir_version=8 {\nfunc @main(%a: f32[2,3], %b: f32[3,4]) -> (%y: ?) {\n"
      "  %y = tessel.FusedMatMul(%a, %b) {activation = \"Swish\"}\n  return %y\n}\n}\n");
  ASSERT_FALSE(badActivation.ok());
  EXPECT_NE(badActivation.diag().str().find("FusedMatMul"), std::string::npos) << badActivation.diag().str();
  auto badBias = runText(
      "model opset(ai.onnx=13, tessel=1) ir_version=8 {\nfunc @main(%a: f32[2,3], %b: f32[3,4], %c: f32[3]) -> (%y: "
      "?) {\n  %y = tessel.FusedMatMul(%a, %b, %c)\n  return %y\n}\n}\n");
  ASSERT_FALSE(badBias.ok());
  EXPECT_NE(badBias.diag().str().find("Bias"), std::string::npos) << badBias.diag().str();
  auto badRank = runText(
      "model opset(ai.onnx=13, tessel=1) ir_version=8 {\nfunc @main(%q: f32[2,3,4], %k: f32[2,3,4], %v: f32[2,3,4]) "
      "-> (%y: ?) {\n  %y = tessel.Attention(%q, %k, %v)\n  return %y\n}\n}\n");
  ASSERT_FALSE(badRank.ok());
  EXPECT_NE(badRank.diag().str().find("Attention"), std::string::npos) << badRank.diag().str();
}

TEST(FusedOpReference, AttentionMatchesSoftmaxOfScaledScores) {
  // One head, Sq = 1, Sk = 2, D = 1: scores [q*k0, q*k1] * scale, causal masks nothing at the last
  // query row (j <= i + Sk - Sq).
  auto model = parseModel(
      "model opset(ai.onnx=13, tessel=1) ir_version=8 {\nfunc @main() -> (%y: ?) {\n"
      "  const %q = dense<f32[1,1,1,1]: 2>\n  const %k = dense<f32[1,1,2,1]: 1, -1>\n"
      "  const %v = dense<f32[1,1,2,2]: 1, 10, 3, 30>\n"
      "  %y = tessel.Attention(%q, %k, %v) {causal = 1}\n  return %y\n}\n}\n",
      "attention");
  ASSERT_TRUE(model.ok()) << model.diag().str();
  auto out = ReferenceInterpreter(*model).run({});
  ASSERT_TRUE(out.ok()) << out.diag().str();
  const double p0 = 1.0 / (1.0 + std::exp(-4.0));  // softmax([2, -2]) with scale 1/sqrt(1).
  const Tensor &y = (*out)[0].second.tensor();
  ASSERT_EQ(y.sizes(), (std::vector<int64_t>{1, 1, 1, 2}));
  EXPECT_NEAR(y.data<float>()[0], p0 * 1 + (1 - p0) * 3, 1e-6);
  EXPECT_NEAR(y.data<float>()[1], p0 * 10 + (1 - p0) * 30, 1e-5);
}

}  // namespace
}  // namespace tessel
