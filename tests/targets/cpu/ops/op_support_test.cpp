// Every op of the registry is, for the cpu target, either lowered to a cpu kernel (a row of
// ops/defs/<family>.def), planned as nested cpu plans (If, Loop, Scan), or run on its reference
// kernel with the reason (a row of ops/reference_ops.def) — exactly one of these — so adding an
// op to src/ops/ops.def forces a decision here.
#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "ir/parser.h"
#include "ops/registry.h"
#include "targets/cpu/executable.h"
#include "targets/cpu/step.h"

namespace tessel::cpu {
namespace {

std::string key(std::string_view domain, std::string_view op) {
  return fmt::format("{}{}{}", domain, domain.empty() ? "" : "::", op);
}

/// control_flow.cpp plans these with nested cpu plans rather than through the lowering table.
bool hasNestedPlans(const OpInfo &op) {
  return op.domain.empty() && (op.name == "If" || op.name == "Loop" || op.name == "Scan");
}

TEST(CpuOpSupport, EveryRegisteredOpIsLoweredOrRunsTheReferenceWithAReason) {
  std::vector<std::string> none, twice;
  std::set<std::string> seen;
  for (const OpInfo &op : allOps()) {
    if (!seen.insert(key(op.domain, op.name)).second) continue;  // One row per opset range.
    const int decisions = (findLowering(op.domain, op.name) != nullptr) + hasNestedPlans(op) +
                          !referenceReason(op.domain, op.name).empty();
    if (decisions == 0) none.push_back(key(op.domain, op.name));
    if (decisions > 1) twice.push_back(key(op.domain, op.name));
  }
  EXPECT_TRUE(none.empty()) << "give these a cpu lowering or a row in reference_ops.def: "
                            << fmt::format("{}", fmt::join(none, ", "));
  EXPECT_TRUE(twice.empty()) << "decided twice: " << fmt::format("{}", fmt::join(twice, ", "));
}

TEST(CpuOpSupport, ReferenceRowsNameRegisteredOpsOnce) {
  std::set<std::string> rows;
  for (const ReferenceOp &row : referenceOps()) {
    EXPECT_NE(findOpAnyVersion(row.domain, row.opType), nullptr) << key(row.domain, row.opType) << " is no op";
    EXPECT_TRUE(rows.insert(key(row.domain, row.opType)).second) << key(row.domain, row.opType) << " twice";
    EXPECT_FALSE(row.reason.empty()) << key(row.domain, row.opType);
  }
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
