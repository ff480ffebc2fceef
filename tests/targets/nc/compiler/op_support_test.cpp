// Every op of the registry is, for the accelerator, either lowered (a row of some
// emit_<family>.cpp) or host-only with its reason (a row of compiler/host_ops.def) — never both,
// never neither — so adding an op to src/ops/ops.def forces a decision here. A host-only node's
// reason reaches the compile report.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include <fmt/format.h>

#include "ir/parser.h"
#include "ops/registry.h"
#include "targets/nc/compiler/executable.h"
#include "targets/nc/compiler/lowering.h"

namespace tessel::nc::compiler {
namespace {

TEST(NcOpSupport, EveryRegisteredOpIsLoweredOrHostOnlyWithAReason) {
  const OpDecisionProblems problems =
      checkOpDecisions(hostOnlyOps(), [](const OpInfo &op) { return findOpLowering(op.domain, op.name) != nullptr; });
  EXPECT_TRUE(problems.empty()) << "give each op a lowering or a row in host_ops.def:\n" << problems.str();
}

TEST(NcOpSupport, AHostOnlyNodeCarriesItsReasonIntoTheReport) {
  auto model = parseModel(R"(model opset(ai.onnx=13) ir_version=8 {
func @main(%x: f32[4,8]) -> (%y: f32[4,8]) {
  %r = Relu(%x)
  %y = Hardmax(%r)
  return %y
}
})",
                          "<hardmax model>");
  ASSERT_TRUE(model.ok()) << model.diag().str();
  auto exe = compileNc(std::move(*model), NcCompileOptions{});
  ASSERT_TRUE(exe.ok()) << exe.diag().str();
  const std::string report = (*exe)->report();
  const std::string reason(hostOnlyReason("", "Hardmax"));
  ASSERT_FALSE(reason.empty());
  EXPECT_NE(report.find(fmt::format("(Hardmax): {}", reason)), std::string::npos) << report;
  EXPECT_EQ(report.find("(Relu)"), std::string::npos) << "the Relu runs on the device:\n" << report;
}

}  // namespace
}  // namespace tessel::nc::compiler
