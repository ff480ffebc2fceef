// Control flow on the cpu target: If branches planned once as nested cpu plans (nested Ifs too),
// Ifs whose condition folds once shapes are static inlined away, Loop and Scan bodies planned once
// and run per iteration, the reasons a subgraph stays on the reference interpreter, and the
// artifact round trip of a model with nested plans. Every case is checked against the reference
// interpreter (Ifs with both values of the condition, Loops with several trip counts).
#include <gtest/gtest.h>

#include <filesystem>

#include "ir/parser.h"
#include "targets/cpu/cpu_test_util.h"
#include "targets/cpu/executable.h"

namespace tessel::cpu {
namespace {

// The branches read outer values (%y, the weight %w, the inner condition %d); the then branch
// holds another If, so its plan holds a nested plan of its own.
const std::string kNestedIf = R"(
model opset(ai.onnx=13) ir_version=8 {
func @main(%x: f32[4,6], %c: bool[], %d: bool[]) -> (%out: f32[4,8]) {
)" + testing::constant("w", {6, 8}, 3) + R"(
  %y = Relu(%x)
  %out = If(%c) {
    else_branch = func @else() -> (%e: f32[4,8]) {
      %m = MatMul(%y, %w)
      %e = Neg(%m)
      return %e
    },
    then_branch = func @then() -> (%t: f32[4,8]) {
      %a = Abs(%y)
      %t = If(%d) {
        else_branch = func @inner_else() -> (%ie: f32[4,8]) {
          %ie = MatMul(%a, %w)
          return %ie
        },
        then_branch = func @inner_then() -> (%it: f32[4,8]) {
          %p = MatMul(%x, %w)
          %it = Sigmoid(%p)
          return %it
        }
      }
      return %t
    }
  }
  return %out
}
}
)";

// torch's `if x.dim() == 2: x = x.squeeze(0)`: the condition folds once %x's shape is static.
constexpr const char *kShapeIf = R"(
model opset(ai.onnx=13) ir_version=8 {
func @main(%x: f32[1,6]) -> (%out: ?) {
  const %two = dense<i64[]: 2>
  const %axes = dense<i64[1]: 0>
  %s = Shape(%x)
  %rank = Size(%s)
  %is2 = Equal(%rank, %two)
  %sq = If(%is2) {
    else_branch = func @keep() -> (%k: ?) {
      %k = Identity(%x)
      return %k
    },
    then_branch = func @squeeze() -> (%q: ?) {
      %q = Squeeze(%x, %axes)
      return %q
    }
  }
  %out = Sigmoid(%sq)
  return %out
}
}
)";

// The then branch returns NonZero's output, whose shape is known only at run time.
constexpr const char *kDynamicBranch = R"(
model opset(ai.onnx=13) ir_version=8 {
func @main(%x: f32[4,6], %c: bool[]) -> (%out: ?) {
  %out = If(%c) {
    else_branch = func @else() -> (%e: ?) {
      %e = NonZero(%x)
      return %e
    },
    then_branch = func @then() -> (%t: ?) {
      %t = NonZero(%x)
      return %t
    }
  }
  return %out
}
}
)";

// A Loop over a carried value with a trip count fed at run time (0, 1 or 2 from the random
// feeds), reading the outer %x; and one with a constant trip count whose scan output stacks.
constexpr const char *kLoops = R"(
model opset(ai.onnx=13) ir_version=8 {
func @main(%x: f32[4,6], %m: i64[]) -> (%v: ?, %w: ?, %rows: ?) {
  const %three = dense<i64[]: 3>
  %v = Loop(%m, _, %x) {
    body = func @body(%i: i64[], %c: bool[], %acc: f32[4,6]) -> (%co: bool[], %next: f32[4,6]) {
      %co = Identity(%c)
      %s = Sigmoid(%acc)
      %next = Add(%s, %x)
      return %co, %next
    }
  }
  %w, %rows = Loop(%three, _, %x) {
    body = func @scan_body(%i2: i64[], %c2: bool[], %acc2: f32[4,6]) -> (%co2: bool[], %next2: f32[4,6], %row: f32[4,6]) {
      %co2 = Identity(%c2)
      %t = Tanh(%acc2)
      %next2 = Mul(%t, %x)
      %row = Abs(%next2)
      return %co2, %next2, %row
    }
  }
  return %v, %w, %rows
}
}
)";

// A Scan over two inputs along different axes (one reversed), stacking two outputs along
// different axes (one reversed), with a state carried through and an outer value read.
constexpr const char *kScan = R"(
model opset(ai.onnx=11) ir_version=8 {
func @main(%init: f32[3], %xs: f32[5,3], %ys: f32[3,5], %bias: f32[3]) -> (%final: ?, %first: ?, %second: ?) {
  %final, %first, %second = Scan(%init, %xs, %ys) {
    num_scan_inputs = 2, scan_input_axes = [0, -1], scan_input_directions = [0, 1],
    scan_output_axes = [0, 1], scan_output_directions = [1, 0],
    body = func @body(%s: f32[3], %x: f32[3], %y: f32[3]) -> (%next: f32[3], %o0: f32[3], %o1: f32[3]) {
      %a = Add(%s, %x)
      %b = Mul(%a, %y)
      %next = Tanh(%b)
      %o0 = Add(%next, %bias)
      %o1 = Sigmoid(%a)
      return %next, %o0, %o1
    }
  }
  return %final, %first, %second
}
}
)";

// The else branch is invalid (a perm of three axes for a 2-D value): the If must still plan, run
// the valid branch, and report the invalid one's error where it is taken.
constexpr const char *kInvalidBranch = R"(
model opset(ai.onnx=13) ir_version=8 {
func @main(%x: f32[2,3], %c: bool[]) -> (%out: f32[3,2]) {
  %out = If(%c) {
    else_branch = func @bad() -> (%e: f32[3,2]) {
      %e = Transpose(%x) {perm = [2, 1, 0]}
      return %e
    },
    then_branch = func @good() -> (%g: f32[3,2]) {
      %g = Transpose(%x) {perm = [1, 0]}
      return %g
    }
  }
  return %out
}
}
)";

std::unique_ptr<CpuExecutable> compileOrDie(std::string_view text, int optLevel) {
  auto model = parseModel(text, "if.tsl.txt");
  EXPECT_TRUE(model.ok()) << model.diag().str();
  auto plan = compileCpu(std::move(*model), {optLevel, 2});
  EXPECT_TRUE(plan.ok()) << plan.diag().str();
  return plan.ok() ? std::move(*plan) : nullptr;
}

std::string fallbacksOf(const CpuExecutable &plan) {
  std::string all;
  for (const std::string &line : plan.summary().fallbacks) all += line + "\n";
  return all;
}

NamedValues feedsWith(const Model &model, bool c, bool d) {
  NamedValues feeds = testing::randomFeeds(model, 7);
  for (auto &[name, value] : feeds) {
    if (name == "c" || name == "d") {
      Tensor flag(DType::Bool, {});
      flag.data<bool>()[0] = name == "c" ? c : d;
      value = RuntimeValue(flag);
    }
  }
  return feeds;
}

void expectSameAsReference(CpuExecutable &plan, std::string_view text, const NamedValues &feeds) {
  auto model = parseModel(text, "if.tsl.txt");
  ASSERT_TRUE(model.ok());
  auto want = ReferenceInterpreter(*model).run(feeds);
  ASSERT_TRUE(want.ok()) << want.diag().str();
  auto got = plan.run(feeds);
  ASSERT_TRUE(got.ok()) << got.diag().str();
  ASSERT_EQ(got->size(), want->size());
  for (size_t o = 0; o < want->size(); ++o) {
    const Tensor &w = (*want)[o].second.tensor();
    const Tensor &g = (*got)[o].second.tensor();
    ASSERT_EQ(g.sizes(), w.sizes());
    for (int64_t i = 0; i < w.numel(); ++i) {
      ASSERT_NEAR(g.data<float>()[i], w.data<float>()[i], 1e-5 + 1e-4 * std::fabs(w.data<float>()[i])) << "element " << i;
    }
  }
}

TEST(CpuControlFlow, NestedIfBranchesRunAsPlansAndMatchReference) {
  for (int optLevel : {0, 3}) {
    auto plan = compileOrDie(kNestedIf, optLevel);
    ASSERT_TRUE(plan);
    EXPECT_EQ(plan->summary().fallbackSteps, 0) << fallbacksOf(*plan);
    bool nestedMatMul = false;
    for (const StepProfile &step : plan->profile()) {
      if (step.node.find("out/then_branch/") == 0 && step.opType == "If") {
        EXPECT_EQ(step.kernel, "if (nested plans)");
      }
      nestedMatMul = nestedMatMul || (step.opType == "MatMul" || step.opType == "FusedMatMul");
    }
    EXPECT_TRUE(nestedMatMul);
    for (bool c : {true, false}) {
      for (bool d : {true, false}) {
        SCOPED_TRACE(fmt::format("-O{} c={} d={}", optLevel, c, d));
        expectSameAsReference(*plan, kNestedIf, feedsWith(plan->model(), c, d));
      }
    }
  }
}

TEST(CpuControlFlow, AnIfWhoseConditionFoldsIsInlined) {
  // From -O1, where shapes fold (-O0 runs the ops as written).
  for (int optLevel : {1, 3}) {
    auto plan = compileOrDie(kShapeIf, optLevel);
    ASSERT_TRUE(plan);
    EXPECT_EQ(plan->summary().fallbackSteps, 0) << fallbacksOf(*plan);
    for (const auto &node : plan->model().graph->nodes()) EXPECT_NE(node->opType(), "If");
    expectSameAsReference(*plan, kShapeIf, testing::randomFeeds(plan->model(), 3));
  }
}

TEST(CpuControlFlow, ABranchWithoutStaticShapesRunsOnTheReferenceWithItsReason) {
  auto plan = compileOrDie(kDynamicBranch, 0);
  ASSERT_TRUE(plan);
  EXPECT_NE(fallbacksOf(*plan).find("(If)"), std::string::npos) << fallbacksOf(*plan);
  auto model = parseModel(kDynamicBranch, "if.tsl.txt");
  ASSERT_TRUE(model.ok());
  for (bool c : {true, false}) {
    NamedValues feeds = feedsWith(*model, c, false);
    auto want = ReferenceInterpreter(*model).run(feeds);
    auto got = plan->run(feeds);
    ASSERT_TRUE(want.ok() && got.ok());
    const Tensor &w = (*want)[0].second.tensor(), &g = (*got)[0].second.tensor();
    ASSERT_EQ(g.sizes(), w.sizes());
    EXPECT_EQ(0, std::memcmp(g.rawData(), w.rawData(), w.numBytes()));
  }
}

TEST(CpuControlFlow, LoopBodiesRunAsPlansAndMatchReference) {
  for (int optLevel : {0, 3}) {
    auto plan = compileOrDie(kLoops, optLevel);
    ASSERT_TRUE(plan);
    EXPECT_EQ(plan->summary().fallbackSteps, 0) << fallbacksOf(*plan);
    for (int64_t trips : {0, 1, 2, 5}) {
      SCOPED_TRACE(fmt::format("-O{} M={}", optLevel, trips));
      NamedValues feeds = testing::randomFeeds(plan->model(), 5);
      for (auto &[name, value] : feeds) {
        if (name == "m") value = RuntimeValue(Tensor::scalar<int64_t>(trips));
      }
      expectSameAsReference(*plan, kLoops, feeds);
    }
  }
}

TEST(CpuControlFlow, ScanBodiesRunAsPlansAndMatchReference) {
  for (int optLevel : {0, 3}) {
    auto plan = compileOrDie(kScan, optLevel);
    ASSERT_TRUE(plan);
    EXPECT_EQ(plan->summary().fallbackSteps, 0) << fallbacksOf(*plan);
    SCOPED_TRACE(fmt::format("-O{}", optLevel));
    expectSameAsReference(*plan, kScan, testing::randomFeeds(plan->model(), 9));
  }
}

TEST(CpuControlFlow, AnInvalidBranchFailsOnlyWhereTaken) {
  auto plan = compileOrDie(kInvalidBranch, 0);
  ASSERT_TRUE(plan);
  auto model = parseModel(kInvalidBranch, "if.tsl.txt");
  ASSERT_TRUE(model.ok());
  expectSameAsReference(*plan, kInvalidBranch, feedsWith(*model, true, false));
  auto failed = plan->run(feedsWith(*model, false, false));
  ASSERT_FALSE(failed.ok());
  EXPECT_NE(failed.diag().str().find("Transpose"), std::string::npos) << failed.diag().str();
}

TEST(CpuControlFlow, ArtifactWithNestedPlansRoundTrips) {
  auto plan = compileOrDie(kNestedIf, 3);
  ASSERT_TRUE(plan);
  const std::string path = (std::filesystem::temp_directory_path() / "tessel_nested_if_test.tsl").string();
  ASSERT_TRUE(plan->save(path).ok());
  auto loaded = loadCpuArtifact(path, {3, 2});
  ASSERT_TRUE(loaded.ok()) << loaded.diag().str();
  EXPECT_EQ((*loaded)->summary().fallbackSteps, 0) << fallbacksOf(**loaded);
  for (bool c : {true, false}) {
    for (bool d : {true, false}) expectSameAsReference(**loaded, kNestedIf, feedsWith(plan->model(), c, d));
  }
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace tessel::cpu
