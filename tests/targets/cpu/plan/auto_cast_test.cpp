// --auto-cast on the cpu target: a conv + linear model planned with bf16 products matches the
// reference with the same casts (both operands of every cast product rounded to bf16) tightly,
// moves measurably but little from f32, keeps f32 kernels where the plan does not cast (a product
// of many rows on a host whose bf16 dot product is slow), and an artifact keeps its decisions.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <string>

#include "ir/parser.h"
#include "targets/cpu/cpu_test_util.h"
#include "targets/cpu/executable.h"
#include "targets/cpu/kernels/gemm.h"
#include "targets/cpu/plan.h"
#include "targets/ref/cast_check.h"
#include "targets/ref/interpreter.h"

namespace tessel::cpu {
namespace {

// Conv (NHWC on the GEMM, 36 output pixels per image, Cin 8 so pairs fit) then a linear layer of
// `batch` rows.
std::string model(int batch) {
  return "model opset(ai.onnx=13) ir_version=8 {\nfunc @main(%x: f32[" + std::to_string(batch) +
         ",8,6,6]) -> (%y: f32[" + std::to_string(batch) + ",10]) {\n" + testing::constant("w", {16, 8, 3, 3}, 3) +
         testing::constant("b", {16}, 5) + testing::constant("fc", {576, 10}, 7) +
         R"(  %c = Conv(%x, %w, %b) {pads = [1, 1, 1, 1]}
  %r = Relu(%c)
  %f = Flatten(%r) {axis = 1}
  %y = MatMul(%f, %fc)
  return %y
}
}
)";
}

const GemmKernel *bf16Kernel() { return selectedGemmKernel(GemmOperands::Bf16); }

struct CastRun {
  std::unique_ptr<CpuExecutable> plan;
  NamedValues outputs;
};

CastRun compileAndRun(const std::string &text, const NamedValues &feeds, bool castEverywhere) {
  auto parsed = parseModel(text, "auto_cast.tsl.txt");
  EXPECT_TRUE(parsed.ok()) << parsed.diag().str();
  auto plan = compileCpu(std::move(*parsed), {3, 2, GemmOperands::Bf16, castEverywhere});
  EXPECT_TRUE(plan.ok()) << plan.diag().str();
  auto outputs = (*plan)->run(feeds);
  EXPECT_TRUE(outputs.ok()) << outputs.diag().str();
  return {std::move(*plan), std::move(*outputs)};
}

TEST(AutoCast, MatchesTheReferenceWithTheSameCasts) {
  if (bf16Kernel() == nullptr) GTEST_SKIP() << "no bf16 variant on this host";
  const std::string text = model(2);
  auto parsed = parseModel(text, "auto_cast.tsl.txt");
  ASSERT_TRUE(parsed.ok());
  const NamedValues feeds = testing::randomFeeds(*parsed, 11);
  auto f32 = ReferenceInterpreter(*parsed).run(feeds);
  ASSERT_TRUE(f32.ok()) << f32.diag().str();

  CastRun run = compileAndRun(text, feeds, /*castEverywhere=*/true);
  const CpuPlanSummary &summary = run.plan->summary();
  EXPECT_EQ(summary.bf16Nodes.size(), 2u);  // The conv and the linear layer.
  EXPECT_EQ(summary.castableSteps, 2);

  const std::set<std::string> cast(summary.bf16Nodes.begin(), summary.bf16Nodes.end());
  auto rounded = [&](size_t, const Node &node) {
    return cast.count(node.name()) ? std::vector<size_t>{0, 1} : std::vector<size_t>{};
  };
  auto reference = ref::roundingReference(run.plan->model(), rounded, DType::BFloat16);
  ASSERT_TRUE(reference.ok()) << reference.diag().str();
  EXPECT_EQ(reference->roundedValues, 4);  // X, W, the flattened activations, FC.
  auto want = ReferenceInterpreter(*reference->model).run(feeds);
  ASSERT_TRUE(want.ok()) << want.diag().str();

  const Tensor &got = run.outputs[0].second.tensor();
  // Same casts: only the order of the float32 sums differs.
  const ref::OutputError same = ref::compareOutput(got, (*want)[0].second.tensor(), {1e-5, 1e-5});
  EXPECT_LE(same.ratio, 1.0) << "max abs error " << same.maxAbs;
  // The casts themselves move the result from f32 by about bf16's rounding, far more than the
  // sums' order does: a plan that skipped the rounding would fail the check above.
  const ref::OutputError drift = ref::compareOutput(got, (*f32)[0].second.tensor(), {});
  EXPECT_GT(drift.maxAbs, 100 * same.maxAbs + 1e-6);
  EXPECT_LT(drift.maxAbs, 2e-2 * drift.range);
  EXPECT_GT(ref::cosineSimilarity(got, (*f32)[0].second.tensor()), 0.999);
}

TEST(AutoCast, WhereBf16IsSlowOnlyFewRowProductsCast) {
  if (bf16Kernel() == nullptr) GTEST_SKIP() << "no bf16 variant on this host";
  auto parsed = parseModel(model(2), "auto_cast.tsl.txt");
  ASSERT_TRUE(parsed.ok());
  CastRun run = compileAndRun(model(2), testing::randomFeeds(*parsed, 11), /*castEverywhere=*/false);
  // The conv's GEMM has 72 rows (2 images x 36 pixels), the linear layer 2.
  ASSERT_EQ(run.plan->summary().bf16Nodes.size(), 1u);
  EXPECT_EQ(run.plan->summary().castableSteps, 2);
  for (const StepProfile &step : run.plan->profile()) {
    if (step.opType.find("MatMul") != std::string::npos) {
      EXPECT_NE(step.kernel.find("bf16"), std::string::npos) << step.kernel;
    }
    if (step.opType == "FusedConv") {
      EXPECT_EQ(step.kernel.find("bf16"), std::string::npos) << step.kernel;
    }
  }
}

TEST(AutoCast, AnArtifactKeepsItsDecisions) {
  if (bf16Kernel() == nullptr) GTEST_SKIP() << "no bf16 variant on this host";
  auto parsed = parseModel(model(2), "auto_cast.tsl.txt");
  ASSERT_TRUE(parsed.ok());
  const NamedValues feeds = testing::randomFeeds(*parsed, 11);
  CastRun run = compileAndRun(model(2), feeds, /*castEverywhere=*/false);
  const std::string path = (std::filesystem::temp_directory_path() / "tessel_auto_cast_test.tsl").string();
  ASSERT_TRUE(run.plan->save(path).ok());
  auto loaded = loadCpuArtifact(path, {});
  ASSERT_TRUE(loaded.ok()) << loaded.diag().str();
  EXPECT_EQ((*loaded)->summary().bf16Nodes, run.plan->summary().bf16Nodes);
  auto outputs = (*loaded)->run(feeds);
  ASSERT_TRUE(outputs.ok()) << outputs.diag().str();
  const Tensor &a = (*outputs)[0].second.tensor(), &b = run.outputs[0].second.tensor();
  ASSERT_EQ(a.numel(), b.numel());
  for (int64_t i = 0; i < a.numel(); ++i) EXPECT_EQ(a.data<float>()[i], b.data<float>()[i]) << i;
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace tessel::cpu
