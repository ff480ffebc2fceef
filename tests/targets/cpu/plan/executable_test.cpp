// The cpu plan end to end: reference fallbacks (dynamic shapes, control flow), the artifact round
// trip, bad feeds, and the bundled example against the reference target.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "frontend/onnx/importer.h"
#include "ir/parser.h"
#include "ir/specialize.h"
#include "targets/cpu/cpu_test_util.h"
#include "targets/cpu/executable.h"

namespace tessel::cpu {
namespace {

using testing::CpuCheck;
using testing::expectCpuMatchesReference;

// Every value here has a static shape except NonZero's output, which runs on the reference kernel
// with the plan around it; If runs subgraphs that read an outer value, as nested plans.
constexpr const char *kMixedModel = R"(
model opset(ai.onnx=13) ir_version=8 {
func @main(%x: f32[4,6], %c: bool[]) -> (%y: f32[4,6], %nz: ?, %picked: ?) {
  %r = Relu(%x)
  %s = Sigmoid(%r)
  %y = Add(%s, %x)
  %nz = NonZero(%r)
  %picked = If(%c) {
    else_branch = func @else() -> (%k: f32[4,6]) {
      %k = Neg(%y)
      return %k
    },
    then_branch = func @then() -> (%t: f32[4,6]) {
      %t = Abs(%y)
      return %t
    }
  }
  return %y, %nz, %picked
}
}
)";

TEST(CpuExecutable, FallbacksForDynamicShapesAndControlFlowMatchReference) {
  CpuCheck check;
  check.requireNoFallback = false;
  expectCpuMatchesReference(kMixedModel, check);
  check.optLevel = 3;
  expectCpuMatchesReference(kMixedModel, check);
}

TEST(CpuExecutable, ReportsWhyANodeFallsBack) {
  auto model = parseModel(kMixedModel, "mixed.tsl.txt");
  ASSERT_TRUE(model.ok()) << model.diag().str();
  auto plan = compileCpu(std::move(*model), {0, 1});
  ASSERT_TRUE(plan.ok()) << plan.diag().str();
  std::string all;
  for (const std::string &line : (*plan)->summary().fallbacks) all += line + "\n";
  EXPECT_NE(all.find("(NonZero): a value has no static shape"), std::string::npos) << all;
  EXPECT_EQ(all.find("(If)"), std::string::npos) << all;
}

TEST(CpuExecutable, RejectsFeedsOfOtherShapesAndUnknownNames) {
  auto model = parseModel(kMixedModel, "mixed.tsl.txt");
  ASSERT_TRUE(model.ok());
  auto plan = compileCpu(std::move(*model), {0, 1});
  ASSERT_TRUE(plan.ok()) << plan.diag().str();
  NamedValues wrongShape = {{"x", Tensor(DType::Float32, {4, 5})}, {"c", Tensor(DType::Bool, {})}};
  auto result = (*plan)->run(wrongShape);
  ASSERT_FALSE(result.ok());
  EXPECT_NE(result.diag().str().find("input 'x' was compiled for f32[4,6]; got tensor f32[4,5]"), std::string::npos)
      << result.diag().str();
  NamedValues unknown = {{"x", Tensor(DType::Float32, {4, 6})}, {"c", Tensor(DType::Bool, {})}, {"z", Tensor(DType::Float32, {1})}};
  result = (*plan)->run(unknown);
  ASSERT_FALSE(result.ok());
  EXPECT_NE(result.diag().str().find("no input named 'z'"), std::string::npos);
}

TEST(CpuExecutable, RequiresStaticInputShapes) {
  auto model = parseModel(R"(
model opset(ai.onnx=13) ir_version=8 {
func @main(%x: f32[batch,6]) -> (%y: ?) {
  %y = Relu(%x)
  return %y
}
}
)", "dynamic.tsl.txt");
  ASSERT_TRUE(model.ok());
  auto plan = compileCpu(*model, {0, 1});
  ASSERT_FALSE(plan.ok());
  EXPECT_NE(plan.diag().str().find("input 'x' has shape [batch,6]"), std::string::npos) << plan.diag().str();
  ASSERT_TRUE(specializeInputs(*model, {}, 3).ok());
  plan = compileCpu(std::move(*model), {0, 1});
  ASSERT_TRUE(plan.ok()) << plan.diag().str();
  auto out = (*plan)->run({{"x", Tensor(DType::Float32, {3, 6})}});
  ASSERT_TRUE(out.ok()) << out.diag().str();
  EXPECT_EQ((*out)[0].second.tensor().sizes(), (std::vector<int64_t>{3, 6}));
}

TEST(CpuExecutable, ArtifactRoundTripGivesTheSameOutputs) {
  const std::string example = std::string(TESSEL_SOURCE_DIR) + "/examples/small_cnn.onnx";
  auto model = importOnnxFile(example);
  ASSERT_TRUE(model.ok()) << model.diag().str();
  ASSERT_TRUE(specializeInputs(*model, {}, 2).ok());
  auto plan = compileCpu(std::move(*model), {3, 2});
  ASSERT_TRUE(plan.ok()) << plan.diag().str();
  NamedValues feeds = testing::randomFeeds((*plan)->model(), 5);
  auto before = (*plan)->run(feeds);
  ASSERT_TRUE(before.ok()) << before.diag().str();

  const std::string path = (std::filesystem::temp_directory_path() / "tessel_small_cnn_test.tsl").string();
  ASSERT_TRUE((*plan)->save(path).ok());
  EXPECT_TRUE(isCpuArtifact(path));
  EXPECT_FALSE(isCpuArtifact(example));
  auto loaded = loadCpuArtifact(path, {3, 1});
  ASSERT_TRUE(loaded.ok()) << loaded.diag().str();
  EXPECT_EQ((*loaded)->summary().steps, (*plan)->summary().steps);
  auto after = (*loaded)->run(feeds);
  ASSERT_TRUE(after.ok()) << after.diag().str();
  ASSERT_EQ(after->size(), before->size());
  for (size_t i = 0; i < before->size(); ++i) {
    const Tensor &a = (*before)[i].second.tensor(), &b = (*after)[i].second.tensor();
    ASSERT_EQ(a.sizes(), b.sizes());
    EXPECT_EQ(0, std::memcmp(a.rawData(), b.rawData(), a.numBytes())) << "output " << i;
  }
  std::filesystem::remove(path);
}

TEST(CpuExecutable, TruncatedArtifactIsAnError) {
  const std::string path = (std::filesystem::temp_directory_path() / "tessel_truncated_test.tsl").string();
  {
    std::ofstream out(path, std::ios::binary);
    out << "TSLCPU01" << std::string(16, '\xff');
  }
  auto loaded = loadCpuArtifact(path, {});
  ASSERT_FALSE(loaded.ok());
  EXPECT_NE(loaded.diag().str().find("truncated"), std::string::npos) << loaded.diag().str();
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace tessel::cpu
