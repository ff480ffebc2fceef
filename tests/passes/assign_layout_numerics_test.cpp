// assign-layout must not change what a network computes: small CNNs (convolutions with bias,
// residual and activation, depthwise and dilated convolutions, max, average and global average
// pools, then Flatten and Gemm) run on the reference target before any pass and after -O3, whose
// channels-last ops and boundary Transposes must then agree to 1e-5 relative.
#include <gtest/gtest.h>
#include <fmt/format.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "ir/parser.h"
#include "ops/reference/helpers.h"
#include "passes/pipelines.h"
#include "targets/ref/interpreter.h"

namespace tessel {
namespace {

constexpr double kRelTol = 1e-5;
constexpr double kAbsTol = 1e-6;  // For values that round to about zero.

/// `const %name = dense<f32[sizes]: ...>` with deterministic values in [lo, hi].
std::string constant(const std::string &name, const std::vector<int64_t> &sizes, unsigned seed, double lo = -0.5,
                     double hi = 0.5) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> dist(lo, hi);
  std::vector<std::string> values;
  for (int64_t i = 0; i < numElements(sizes); ++i) values.push_back(fmt::format("{:.6g}", dist(rng)));
  return fmt::format("  const %{} = dense<f32[{}]: {}>\n", name, fmt::join(sizes, ","), fmt::join(values, ", "));
}

/// The same values as `constant`, as the output of a Constant node (as paddle2onnx writes weights).
std::string constantNode(const std::string &name, const std::vector<int64_t> &sizes, unsigned seed) {
  const std::string line = constant(name, sizes, seed);
  const size_t dense = line.find("dense<");
  return fmt::format("  %{} = Constant() {{value = {}}}\n", name, line.substr(dense, line.size() - dense - 1));
}

/// Floats in [-2, 2] for every graph input without an initializer.
NamedValues randomFeeds(const Graph &graph, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> dist(-2.0, 2.0);
  NamedValues feeds;
  for (const Value *input : graph.inputs()) {
    if (input->hasInitializer()) continue;
    std::vector<int64_t> sizes = *input->type().shape().sizes();
    std::vector<double> values(static_cast<size_t>(numElements(sizes)));
    for (double &v : values) v = dist(rng);
    feeds.emplace_back(input->name(), RuntimeValue(ref::fromDoubles(input->type().dtype(), sizes, values)));
  }
  return feeds;
}

/// "" when `a` and `b` agree to kRelTol, else the first difference.
std::string compareTensors(const Tensor &a, const Tensor &b) {
  if (a.dtype() != b.dtype() || a.sizes() != b.sizes()) {
    return fmt::format("{}{} vs {}{}", dtypeName(a.dtype()), formatSizes(a.sizes()), dtypeName(b.dtype()),
                       formatSizes(b.sizes()));
  }
  std::vector<double> x = ref::toDoubles(a), y = ref::toDoubles(b);
  for (size_t i = 0; i < x.size(); ++i) {
    if (std::abs(x[i] - y[i]) <= kAbsTol + kRelTol * std::max(std::abs(x[i]), std::abs(y[i]))) continue;
    return fmt::format("element {}: {} before, {} after", i, x[i], y[i]);
  }
  return "";
}

struct OpCounts {
  int channelsLast = 0;
  int transposes = 0;
};

OpCounts countOps(const Graph &graph) {
  OpCounts counts;
  for (const auto &node : graph.nodes()) {
    if (node->domain() == "tessel" && node->attrInt("channels_last", 0) == 1) ++counts.channelsLast;
    if (node->domain().empty() && node->opType() == "Transpose") ++counts.transposes;
  }
  return counts;
}

/// Runs `text` unoptimized and after -O3 on the same feeds; expects `expected` channels-last ops and
/// Transposes after -O3, and the outputs to agree.
void expectSameOutputsAfterO3(const std::string &text, OpCounts expected) {
  auto original = parseModel(text, "cnn");
  ASSERT_TRUE(original.ok()) << original.diag().str() << "\n" << text;
  auto optimized = parseModel(text, "cnn");
  ASSERT_TRUE(optimized.ok());
  PassManager manager;
  ASSERT_TRUE(addOptimizationPipeline(manager, 3).ok());
  auto ran = manager.run(*optimized);
  ASSERT_TRUE(ran.ok()) << ran.diag().str();
  const OpCounts counts = countOps(*optimized->graph);
  EXPECT_EQ(counts.channelsLast, expected.channelsLast) << "channels-last ops after -O3";
  EXPECT_EQ(counts.transposes, expected.transposes) << "Transposes after -O3";
  for (unsigned seed : {1u, 2u}) {
    NamedValues feeds = randomFeeds(*original->graph, seed);
    auto before = ReferenceInterpreter(*original).run(feeds);
    ASSERT_TRUE(before.ok()) << before.diag().str();
    auto after = ReferenceInterpreter(*optimized).run(feeds);
    ASSERT_TRUE(after.ok()) << after.diag().str();
    ASSERT_EQ(before->size(), after->size());
    for (size_t i = 0; i < before->size(); ++i) {
      EXPECT_EQ((*before)[i].first, (*after)[i].first);
      EXPECT_EQ(compareTensors((*before)[i].second.tensor(), (*after)[i].second.tensor()), "") << "output " << i;
    }
  }
}

TEST(AssignLayoutNumerics, ResidualCnnWithPoolsMatchesUnoptimized) {
  // Batch 2, 3 -> 17 channels, odd spatial sizes; stride 2 with asymmetric padding, a depthwise
  // conv, a 1x1 conv with a residual Add and Relu, a max pool, a dilated conv with a bias Add, an
  // average pool and a global average pool, then Flatten and Gemm.
  std::string text = "model opset(ai.onnx=13) ir_version=8 {\nfunc @main(%x: f32[2,3,11,9]) -> (%y: ?) {\n";
  text += constant("w0", {17, 3, 3, 3}, 1) + constant("b0", {17}, 2) + constant("wd", {17, 1, 3, 3}, 3) +
          constant("bd", {17}, 4) + constant("w1", {17, 17, 1, 1}, 5) + constant("w2", {17, 17, 3, 3}, 6, -0.2, 0.2) +
          constant("b2", {1, 17, 1, 1}, 7) + constant("wfc", {5, 17}, 8) + constant("bfc", {5}, 9);
  text +=
      "  %c0 = Conv(%x, %w0, %b0) {pads = [1, 0, 2, 1], strides = [2, 2]}\n"
      "  %r0 = Relu(%c0)\n"
      "  %d = Conv(%r0, %wd, %bd) {group = 17, pads = [1, 1, 1, 1]}\n"
      "  const %six = dense<f32[]: 6>\n  const %zero = dense<f32[]: 0>\n"
      "  %dc = Clip(%d, %zero, %six)\n"
      "  %c1 = Conv(%dc, %w1)\n"
      "  %s1 = Add(%c1, %r0)\n"
      "  %r1 = Relu(%s1)\n"
      "  %m = MaxPool(%r1) {kernel_shape = [3, 3], pads = [1, 1, 1, 1], strides = [2, 2]}\n"
      "  %c2 = Conv(%m, %w2) {dilations = [2, 2], pads = [2, 2, 2, 2]}\n"
      "  %s2 = Add(%c2, %b2)\n"
      "  %a = AveragePool(%s2) {kernel_shape = [2, 2], pads = [0, 0, 1, 1], count_include_pad = 0}\n"
      "  %g = GlobalAveragePool(%a)\n"
      "  %f = Flatten(%g)\n"
      "  %y = Gemm(%f, %wfc, %bfc) {transB = 1}\n"
      "  return %y\n}\n}\n";
  // 4 convs and 3 pools; a Transpose at the input and after the global average pool.
  expectSameOutputsAfterO3(text, {.channelsLast = 7, .transposes = 2});
}

TEST(AssignLayoutNumerics, RegionBoundariesAroundGroupedConvAndGraphOutputs) {
  // A grouped conv (group 3 of 6 channels) stays channels-first between two converted ones, and a
  // converted conv's output is also a graph output: the Transposes at those edges must be right.
  std::string text =
      "model opset(ai.onnx=13) ir_version=8 {\nfunc @main(%x: f32[1,5,7,6]) -> (%y: ?, %mid: ?) {\n";
  text += constant("w0", {6, 5, 3, 3}, 11) + constant("wg", {6, 2, 1, 1}, 12) + constant("w1", {4, 6, 3, 3}, 13) +
          constant("b1", {4}, 14);
  text +=
      "  %mid = Conv(%x, %w0) {pads = [1, 1, 1, 1]}\n"
      "  %g = Conv(%mid, %wg) {group = 3}\n"
      "  %c = Conv(%g, %w1, %b1) {strides = [2, 1]}\n"
      "  %y = Sigmoid(%c)\n"
      "  return %y, %mid\n}\n}\n";
  // In: x and g each transposed to NHWC; out: mid (graph output, read by the grouped conv) and y.
  expectSameOutputsAfterO3(text, {.channelsLast = 2, .transposes = 4});
}

TEST(AssignLayoutNumerics, PaddleStyleBlocksMatchUnoptimized) {
  // paddle2onnx's shapes: weights as Constant nodes, a learned scalar scale and shift after each
  // conv, HardSwish as x*Clip(x+3,0,6)/6, a depthwise conv, a squeeze-excite block (global average
  // pool, two 1x1 convs, HardSigmoid, Mul), then a ConvTranspose with a bias Add and a
  // BatchNormalization, and a nearest Resize.
  std::string text = "model opset(ai.onnx=11) ir_version=8 {\nfunc @main(%x: f32[1,3,12,10]) -> (%y: ?, %z: ?) {\n";
  text += constant("b0", {8}, 21) + constant("wd", {8, 1, 3, 3}, 22) + constant("we1", {4, 8, 1, 1}, 23) +
          constant("be1", {4}, 24) + constant("we2", {8, 4, 1, 1}, 25) + constant("be2", {8}, 26) +
          constant("wt", {8, 6, 2, 2}, 27) + constant("bt", {1, 6, 1, 1}, 28) + constant("bns", {6}, 29, 0.5, 1.5) +
          constant("bnb", {6}, 30) + constant("bnm", {6}, 31) + constant("bnv", {6}, 32, 0.5, 1.5);
  text += constantNode("w0", {8, 3, 3, 3}, 20);
  text +=
      "  const %s0 = dense<f32[1]: 0.9>\n  const %t0 = dense<f32[1]: 0.1>\n"
      "  const %s1 = dense<f32[1]: 1.1>\n  const %t1 = dense<f32[1]: -0.2>\n"
      "  const %three = dense<f32[]: 3>\n  const %zero = dense<f32[]: 0>\n  const %six = dense<f32[]: 6>\n"
      "  const %scales = dense<f32[4]: 1, 1, 2, 2>\n"
      "  %c0 = Conv(%x, %w0, %b0) {pads = [1, 1, 1, 1], strides = [2, 2]}\n"
      "  %m0 = Mul(%s0, %c0)\n  %a0 = Add(%m0, %t0)\n"
      "  %h1 = Add(%a0, %three)\n  %h2 = Clip(%h1, %zero, %six)\n  %h3 = Mul(%a0, %h2)\n  %h = Div(%h3, %six)\n"
      "  %m1 = Mul(%s1, %h)\n  %a1 = Add(%m1, %t1)\n"
      "  %d = Conv(%a1, %wd) {group = 8, pads = [1, 1, 1, 1]}\n"
      "  %g = GlobalAveragePool(%d)\n  %e1 = Conv(%g, %we1, %be1)\n  %r = Relu(%e1)\n"
      "  %e2 = Conv(%r, %we2, %be2)\n  %hs = HardSigmoid(%e2) {alpha = 0.2, beta = 0.5}\n  %se = Mul(%d, %hs)\n"
      "  %u = ConvTranspose(%se, %wt) {kernel_shape = [2, 2], strides = [2, 2]}\n  %ub = Add(%u, %bt)\n"
      "  %y = BatchNormalization(%ub, %bns, %bnb, %bnm, %bnv)\n"
      "  %z = Resize(%se, _, %scales) {mode = \"nearest\", coordinate_transformation_mode = \"asymmetric\", "
      "nearest_mode = \"floor\"}\n"
      "  return %y, %z\n}\n}\n";
  // 4 convs and the pool; a Transpose at the input, one back before the ConvTranspose, and one
  // after the (channels-last) Resize, whose output is a graph output.
  expectSameOutputsAfterO3(text, {.channelsLast = 5, .transposes = 3});
}

TEST(AssignLayoutNumerics, Tf2onnxMaxFeatureMapMatchesUnoptimized) {
  // tf2onnx's speech embedding: Conv + LeakyRelu, a Max with a one-element constant, a Max of two
  // conv outputs, a max pool, and an NHWC input reshaped to NCHW.
  std::string text = "model opset(ai.onnx=13) ir_version=8 {\nfunc @main(%x: f32[1,2,9,8]) -> (%y: ?) {\n";
  text += constant("w1", {6, 2, 3, 3}, 41) + constant("b1", {6}, 42) + constant("w2", {6, 2, 3, 3}, 43) +
          constant("w3", {5, 6, 1, 3}, 44) + constant("b3", {5}, 45);
  text +=
      "  const %floor = dense<f32[1,1,1,1]: -0.4>\n"
      "  %c1 = Conv(%x, %w1, %b1) {pads = [1, 1, 1, 1]}\n  %l1 = LeakyRelu(%c1) {alpha = 0.2}\n"
      "  %m1 = Max(%l1, %floor)\n"
      "  %c2 = Conv(%x, %w2) {pads = [1, 1, 1, 1]}\n  %f = Max(%m1, %c2)\n"
      "  %p = MaxPool(%f) {kernel_shape = [2, 2], strides = [2, 2]}\n"
      "  %c3 = Conv(%p, %w3, %b3) {pads = [0, 1, 0, 1]}\n  %y = LeakyRelu(%c3) {alpha = 0.2}\n"
      "  return %y\n}\n}\n";
  expectSameOutputsAfterO3(text, {.channelsLast = 4, .transposes = 2});
}

}  // namespace
}  // namespace tessel
