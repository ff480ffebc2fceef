// One cpu CompiledModel for every input shape: a model with symbolic dims compiles once, plans each
// shape on first use (its shape computations folded for that shape) and gives what a static
// compile for that shape gives; plans are cached; feeds that break the declared dims fail clearly;
// the dynamic artifact round-trips.
#include <gtest/gtest.h>

#include <filesystem>
#include <random>

#include <fmt/format.h>

#include "common/run_tool.h"
#include "frontend/onnx/exporter.h"
#include "ir/npy.h"
#include "ir/parser.h"
#include "ir/specialize.h"
#include "runtime/session.h"
#include "runtime/target_registry.h"
#include "targets/ref/interpreter.h"

namespace tessel {
namespace {

std::string denseFloats(size_t count, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> uniform(-0.5f, 0.5f);
  std::string text;
  for (size_t i = 0; i < count; ++i) text += fmt::format("{}{:.4f}", i ? ", " : "", uniform(rng));
  return text;
}

// Two inputs that share N and S, a constant-weight MatMul, and the shape computation PyTorch
// exports for `y.view(n, s, 4, 8)`: Shape -> Gather -> Unsqueeze -> Concat -> Reshape.
std::string transformerLikeModel() {
  return fmt::format(R"(
model opset(ai.onnx=17) ir_version=8 {{
func @main(%x: f32[N,S,16], %y: f32[N,S,16]) -> (%out: f32[N,4,S,8]) {{
  const %w = dense<f32[16,32]: {}>
  const %zero = dense<i64[]: 0>
  const %one = dense<i64[]: 1>
  const %axes = dense<i64[1]: 0>
  const %heads = dense<i64[1]: 4>
  const %width = dense<i64[1]: 8>
  %a = Add(%x, %y)
  %m = MatMul(%a, %w)
  %s = Shape(%a)
  %n = Gather(%s, %zero) {{axis = 0}}
  %q = Gather(%s, %one) {{axis = 0}}
  %nu = Unsqueeze(%n, %axes)
  %qu = Unsqueeze(%q, %axes)
  %shape = Concat(%nu, %qu, %heads, %width) {{axis = 0}}
  %r = Reshape(%m, %shape)
  %t = Transpose(%r) {{perm = [0, 2, 1, 3]}}
  %out = Relu(%t)
  return %out
}}
}}
)",
                     denseFloats(16 * 32, 1));
}

// An image model with symbolic batch and image size.
std::string convModel() {
  return fmt::format(R"(
model opset(ai.onnx=17) ir_version=8 {{
func @main(%image: f32[N,3,H,W]) -> (%out: f32[N,8,1,1]) {{
  const %w = dense<f32[8,3,3,3]: {}>
  const %b = dense<f32[8]: {}>
  %c = Conv(%image, %w, %b) {{pads = [1, 1, 1, 1]}}
  %r = Relu(%c)
  %out = GlobalAveragePool(%r)
  return %out
}}
}}
)",
                     denseFloats(8 * 27, 2), denseFloats(8, 3));
}

Model parse(const std::string &text) {
  auto model = parseModel(text, "dynamic.tsl.txt");
  EXPECT_TRUE(model.ok()) << model.diag().str();
  return std::move(model).value();
}

Tensor randomTensor(const std::vector<int64_t> &sizes, uint32_t seed) {
  Tensor t(DType::Float32, sizes);
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal;
  for (float &v : t.span<float>()) v = normal(rng);
  return t;
}

std::unique_ptr<CompiledModel> compileFor(const std::string &target, Model model, TargetOptions options = {}) {
  auto impl = findTarget(target);
  EXPECT_TRUE(impl.ok());
  options.threads = 2;
  auto compiled = (*impl)->compile(std::move(model), options);
  EXPECT_TRUE(compiled.ok()) << compiled.diag().str();
  return compiled.ok() ? std::move(compiled).value() : nullptr;
}

double maxDifference(const Tensor &a, const Tensor &b) {
  EXPECT_EQ(a.sizes(), b.sizes());
  if (a.sizes() != b.sizes()) return 1e9;
  double worst = 0;
  for (int64_t i = 0; i < a.numel(); ++i) worst = std::max(worst, double(std::abs(a.data<float>()[i] - b.data<float>()[i])));
  return worst;
}

InputSizes sizesOf(const NamedValues &feeds) {
  InputSizes sizes;
  for (const auto &[name, value] : feeds) sizes.emplace_back(name, value.tensor().sizes());
  return sizes;
}

/// Outputs of one dynamic CompiledModel against a static compile for each shape and the reference.
void expectServesEveryShape(const std::string &text, const std::vector<NamedValues> &feedSets) {
  auto dynamic = compileFor("cpu", parse(text));
  ASSERT_NE(dynamic, nullptr);
  for (const NamedValues &feeds : feedSets) {
    const std::string shape = formatSizes(feeds[0].second.tensor().sizes());
    auto got = dynamic->run(feeds);
    ASSERT_TRUE(got.ok()) << shape << ": " << got.diag().str();

    Model fixed = parse(text);
    ASSERT_TRUE(specializeInputs(fixed, sizesOf(feeds), 0).ok());
    auto staticModel = compileFor("cpu", std::move(fixed));
    ASSERT_NE(staticModel, nullptr);
    auto want = staticModel->run(feeds);
    ASSERT_TRUE(want.ok()) << want.diag().str();
    Model reference = parse(text);
    auto golden = ReferenceInterpreter(reference).run(feeds);
    ASSERT_TRUE(golden.ok()) << golden.diag().str();

    EXPECT_LE(maxDifference((*got)[0].second.tensor(), (*want)[0].second.tensor()), 1e-6) << shape;
    EXPECT_LE(maxDifference((*got)[0].second.tensor(), (*golden)[0].second.tensor()), 1e-4) << shape;
    // The shape computation folded for this shape: nothing of it runs.
    for (const OpTime &step : dynamic->opProfile()) {
      EXPECT_TRUE(step.opType != "Shape" && step.opType != "Gather" && step.opType != "Concat") << shape << ": " << step.node;
    }
    EXPECT_EQ(dynamic->planStats().fallbackSteps, 0) << shape;
  }
}

NamedValues pair(int64_t n, int64_t s, uint32_t seed) {
  return {{"x", randomTensor({n, s, 16}, seed)}, {"y", randomTensor({n, s, 16}, seed + 1)}};
}

TEST(DynamicShapes, OneModelServesEverySequenceLikeStaticCompiles) {
  expectServesEveryShape(transformerLikeModel(), {pair(1, 4, 10), pair(2, 7, 20), pair(3, 1, 30), pair(1, 4, 40)});
}

TEST(DynamicShapes, OneModelServesEveryImageSizeLikeStaticCompiles) {
  expectServesEveryShape(convModel(), {{{"image", randomTensor({1, 3, 8, 8}, 1)}},
                                       {{"image", randomTensor({3, 3, 12, 10}, 2)}},
                                       {{"image", randomTensor({2, 3, 5, 16}, 3)}}});
}

TEST(DynamicShapes, PlansAreCachedByShapeAndShareTheWeights) {
  auto dynamic = compileFor("cpu", parse(transformerLikeModel()));
  ASSERT_NE(dynamic, nullptr);
  EXPECT_EQ(dynamic->planStats().shapePlans, 0);
  ASSERT_TRUE(dynamic->run(pair(1, 4, 1)).ok());
  const size_t packed = dynamic->planStats().constantBytes;
  EXPECT_GT(packed, 16u * 32u * sizeof(float) - 1);
  ASSERT_TRUE(dynamic->run(pair(2, 9, 2)).ok());
  EXPECT_EQ(dynamic->planStats().shapePlans, 2);
  EXPECT_EQ(dynamic->planStats().shapePlanHits, 0);
  // The second shape packed nothing new: its plan reads the first one's packed weights.
  EXPECT_EQ(dynamic->planStats().constantBytes, packed);
  ASSERT_TRUE(dynamic->run(pair(1, 4, 3)).ok());
  ASSERT_TRUE(dynamic->run(pair(2, 9, 4)).ok());
  EXPECT_EQ(dynamic->planStats().shapePlans, 2);
  EXPECT_EQ(dynamic->planStats().shapePlanHits, 2);
  EXPECT_GT(dynamic->planStats().lastShapePlanMs, 0);
}

TEST(DynamicShapes, SessionCompilesOnceForEveryShape) {
  auto session = Session::create(parse(transformerLikeModel()), "cpu");
  ASSERT_TRUE(session.ok()) << session.diag().str();
  for (int64_t s : {3, 5, 3}) ASSERT_TRUE((*session)->run(pair(1, s, uint32_t(s))).ok());
  EXPECT_EQ((*session)->planCount(), 1u);
  EXPECT_EQ((*session)->lastCompiled()->planStats().shapePlans, 2);
}

std::string runError(CompiledModel &model, const NamedValues &feeds) {
  auto result = model.run(feeds);
  EXPECT_FALSE(result.ok());
  return result.ok() ? "" : result.diag().str();
}

TEST(DynamicShapes, FeedsThatBreakTheDeclaredDimsFailNamingInputDimAndSizes) {
  TargetOptions options;
  options.dimRanges["S"] = DimRange{1, 8};
  auto dynamic = compileFor("cpu", parse(transformerLikeModel()), options);
  ASSERT_NE(dynamic, nullptr);
  EXPECT_TRUE(dynamic->run(pair(1, 8, 1)).ok());

  std::string error = runError(*dynamic, pair(1, 9, 2));
  EXPECT_NE(error.find("input 'x' dim 1 (S) is 9, outside the range S=1..8"), std::string::npos) << error;

  error = runError(*dynamic, {{"x", randomTensor({1, 4, 16}, 1)}, {"y", randomTensor({1, 5, 16}, 2)}});
  EXPECT_NE(error.find("input 'y' dim 1 (S) is 5, but input 'x' dim 1 gives S = 4"), std::string::npos) << error;

  error = runError(*dynamic, {{"x", randomTensor({1, 4, 16}, 1)}, {"y", randomTensor({2, 4, 16}, 2)}});
  EXPECT_NE(error.find("input 'y' dim 0 (N) is 2, but input 'x' dim 0 gives N = 1"), std::string::npos) << error;

  error = runError(*dynamic, {{"x", randomTensor({1, 4, 12}, 1)}, {"y", randomTensor({1, 4, 16}, 2)}});
  EXPECT_NE(error.find("input 'x' dim 2 is 16 (shape [N,S,16]); got 12"), std::string::npos) << error;

  error = runError(*dynamic, {{"x", randomTensor({4, 16}, 1)}, {"y", randomTensor({1, 4, 16}, 2)}});
  EXPECT_NE(error.find("input 'x' has rank 3 (shape [N,S,16]); got rank 2"), std::string::npos) << error;

  error = runError(*dynamic, {{"x", randomTensor({1, 4, 16}, 1)}});
  EXPECT_NE(error.find("input 'y'"), std::string::npos) << error;
  EXPECT_NE(error.find("was not given"), std::string::npos) << error;
  // None of the failed feeds made a plan.
  EXPECT_EQ(dynamic->planStats().shapePlans, 1);
}

TEST(DynamicShapes, ARangeForADimNoInputHasIsAnError) {
  TargetOptions options;
  options.dimRanges["seq"] = DimRange{1, 8};
  auto impl = findTarget("cpu");
  ASSERT_TRUE(impl.ok());
  auto compiled = (*impl)->compile(parse(transformerLikeModel()), options);
  ASSERT_FALSE(compiled.ok());
  EXPECT_NE(compiled.diag().str().find("no input has a dim named 'seq' (its symbolic dims: N, S)"), std::string::npos)
      << compiled.diag().str();
}

TEST(DynamicShapes, TheArtifactRoundTripsAndKeepsPlanning) {
  const std::string path = (std::filesystem::temp_directory_path() / "tessel_dynamic_shapes_test.tsl").string();
  TargetOptions options;
  options.dimRanges["S"] = DimRange{1, 64};
  auto dynamic = compileFor("cpu", parse(transformerLikeModel()), options);
  ASSERT_NE(dynamic, nullptr);
  auto first = dynamic->run(pair(1, 6, 1));
  ASSERT_TRUE(first.ok()) << first.diag().str();
  ASSERT_TRUE(dynamic->save(path).ok());

  TargetOptions loadOptions;
  loadOptions.threads = 2;
  auto loaded = loadArtifact(path, loadOptions);
  ASSERT_TRUE(loaded.ok()) << loaded.diag().str();
  CompiledModel &model = *loaded->second;
  for (const NamedValues &feeds : {pair(1, 6, 1), pair(2, 3, 5)}) {
    auto got = model.run(feeds);
    ASSERT_TRUE(got.ok()) << got.diag().str();
    auto want = dynamic->run(feeds);
    ASSERT_TRUE(want.ok());
    EXPECT_LE(maxDifference((*got)[0].second.tensor(), (*want)[0].second.tensor()), 1e-6);
  }
  EXPECT_EQ(model.planStats().shapePlans, 2);
  // The ranges travel with the artifact.
  std::string error = runError(model, pair(1, 65, 1));
  EXPECT_NE(error.find("outside the range S=1..64"), std::string::npos) << error;
  std::filesystem::remove(path);
}

TEST(DynamicShapes, CommandLineCompilesWithoutShapeAndRunsSeveralShapes) {
  const auto dir = std::filesystem::temp_directory_path() / "tessel_dynamic_shapes_cli";
  std::filesystem::create_directories(dir);
  auto model = parse(transformerLikeModel());
  ASSERT_TRUE(exportOnnxFile(model, (dir / "model.onnx").string()).ok());
  const std::string artifact = (dir / "model.tsl").string();
  auto compiled = testing::runTool(fmt::format("compile {} --target cpu --dim S=1..32 -o {}", (dir / "model.onnx").string(), artifact));
  ASSERT_EQ(compiled.exitCode, 0) << compiled.output;
  for (int s : {3, 17}) {
    auto ran = testing::runTool(fmt::format("run {} --dim N=2 --dim S={}", artifact, s));
    EXPECT_EQ(ran.exitCode, 0) << ran.output;
    EXPECT_NE(ran.output.find(fmt::format("out: tensor f32[2,4,{},8]", s)), std::string::npos) << ran.output;
  }
  auto outside = testing::runTool(fmt::format("run {} --dim S=33", artifact));
  EXPECT_EQ(outside.exitCode, 1) << outside.output;
  EXPECT_NE(outside.output.find("dim 1 (S) is 33, outside the range S=1..32"), std::string::npos) << outside.output;
  auto badRange = testing::runTool(fmt::format("compile {} --target cpu --dim S=9..2", (dir / "model.onnx").string()));
  EXPECT_EQ(badRange.exitCode, 1) << badRange.output;
  EXPECT_NE(badRange.output.find("--dim 'S=9..2': the low bound 9 is above the high bound 2"), std::string::npos)
      << badRange.output;
  // --shape still specializes: that artifact serves its one shape.
  auto fixed = testing::runTool(fmt::format("compile {} --target cpu --shape x=1,5,16 --shape y=1,5,16 -o {}",
                                            (dir / "model.onnx").string(), artifact));
  ASSERT_EQ(fixed.exitCode, 0) << fixed.output;
  const std::string longer = (dir / "x.npy").string();
  ASSERT_TRUE(writeNpy(longer, randomTensor({1, 6, 16}, 1)).ok());
  auto wrong = testing::runTool(fmt::format("run {} --input x={}", artifact, longer));
  EXPECT_EQ(wrong.exitCode, 1) << wrong.output;
  EXPECT_NE(wrong.output.find("input 'x' was compiled for f32[1,5,16]"), std::string::npos) << wrong.output;
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace tessel
