// Every op of the registry is, for the cpu target, either lowered to a cpu kernel (a row of
// ops/defs/<family>.def), planned as nested cpu plans (If, Loop, Scan), or run on its reference
// kernel with the reason (a row of ops/reference_ops.def) — exactly one of these — so adding an
// op to src/ops/ops.def forces a decision here.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include <fmt/format.h>

#include "ir/parser.h"
#include "ops/registry.h"
#include "targets/cpu/executable.h"
#include "targets/cpu/step.h"

namespace tessel::cpu {
namespace {

/// control_flow.cpp plans these with nested cpu plans rather than through the lowering table.
bool hasNestedPlans(const OpInfo &op) {
  return op.domain.empty() && (op.name == "If" || op.name == "Loop" || op.name == "Scan");
}

TEST(CpuOpSupport, EveryRegisteredOpIsLoweredOrRunsTheReferenceWithAReason) {
  const OpDecisionProblems problems = checkOpDecisions(referenceOps(), [](const OpInfo &op) {
    return (findLowering(op.domain, op.name) != nullptr) + hasNestedPlans(op);
  });
  EXPECT_TRUE(problems.empty()) << "give each op a cpu lowering or a row in reference_ops.def:\n" << problems.str();
}

TEST(CpuOpSupport, AReferenceNodeCarriesItsReasonIntoThePlan) {
  auto model = parseModel(R"(model opset(ai.onnx=13) ir_version=8 {
func @main(%x: f32[4,8]) -> (%y: f32[4,8]) {
  %r = Relu(%x)
  %y = Hardmax(%r)
  return %y
}
})",
                          "<hardmax model>");
  ASSERT_TRUE(model.ok()) << model.diag().str();
  auto plan = compileCpu(std::move(*model), {0, 1});
  ASSERT_TRUE(plan.ok()) << plan.diag().str();
  const std::vector<std::string> &fallbacks = (*plan)->summary().fallbacks;
  ASSERT_EQ(fallbacks.size(), 1u);
  EXPECT_NE(fallbacks[0].find(fmt::format("(Hardmax): {}", referenceReason("", "Hardmax"))), std::string::npos)
      << fallbacks[0];
}

}  // namespace
}  // namespace tessel::cpu
