// Every op of the registry is, for the accelerator, either lowered (a row of some
// emit_<family>.cpp) or host-only with its reason (a row of compiler/host_ops.def) — never both,
// never neither — so adding an op to src/ops/ops.def forces a decision here. A host-only node's
// reason reaches the compile report.
#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "ir/parser.h"
#include "ops/registry.h"
#include "targets/nc/compiler/executable.h"
#include "targets/nc/compiler/lowering.h"

namespace tessel::nc::compiler {
namespace {

std::string key(std::string_view domain, std::string_view op) {
  return fmt::format("{}{}{}", domain, domain.empty() ? "" : "::", op);
}

TEST(NcOpSupport, EveryRegisteredOpIsLoweredOrHostOnlyWithAReason) {
  std::vector<std::string> neither, both;
  std::set<std::string> seen;
  for (const OpInfo &op : allOps()) {
    if (!seen.insert(key(op.domain, op.name)).second) continue;  // One row per opset range.
    const bool lowered = findOpLowering(op.domain, op.name) != nullptr;
    const bool hostOnly = !hostOnlyReason(op.domain, op.name).empty();
    if (!lowered && !hostOnly) neither.push_back(key(op.domain, op.name));
    if (lowered && hostOnly) both.push_back(key(op.domain, op.name));
  }
  EXPECT_TRUE(neither.empty()) << "give these a lowering or a row in host_ops.def: "
                               << fmt::format("{}", fmt::join(neither, ", "));
  EXPECT_TRUE(both.empty()) << "lowered and listed as host-only: " << fmt::format("{}", fmt::join(both, ", "));
}

TEST(NcOpSupport, HostOnlyRowsNameRegisteredOpsOnce) {
  std::set<std::string> rows;
  for (const HostOnlyOp &row : hostOnlyOps()) {
    EXPECT_NE(findOpAnyVersion(row.domain, row.opType), nullptr) << key(row.domain, row.opType) << " is no op";
    EXPECT_TRUE(rows.insert(key(row.domain, row.opType)).second) << key(row.domain, row.opType) << " twice";
    EXPECT_FALSE(row.reason.empty()) << key(row.domain, row.opType);
  }
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
