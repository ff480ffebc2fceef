// Pad on the cpu target against the reference interpreter: constant (with and without
// constant_value), reflect and edge modes; ranks 1 to 4; pads on every axis, on the last axis only
// (silero's STFT padding), zero and negative pads (crops); reflect past the axis length; f32 and
// i64; the opset 2-10 attribute form; and the forms that fall back (pads computed at run time).
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <string>

#include "../cpu_test_util.h"

namespace tessel::cpu {
namespace {

using testing::CpuCheck;
using testing::expectCpuMatchesReference;

std::string padModel(const std::string &type, const std::vector<int64_t> &pads, const std::string &mode,
                     const std::string &value = "") {
  const std::string dtype = type.substr(0, 3);
  std::string consts = fmt::format("  const %pads = dense<i64[{}]: {}>\n", pads.size(), fmt::join(pads, ", "));
  std::string args = "%x, %pads";
  if (!value.empty()) {
    consts += fmt::format("  const %value = dense<{}[]: {}>\n", dtype, value);
    args += ", %value";
  }
  return fmt::format(
      "model opset(ai.onnx=13) ir_version=8 {{\nfunc @main(%x: {}) -> (%y: ?) {{\n{}  %y = Pad({}) {{mode = \"{}\"}}\n"
      "  return %y\n}}\n}}\n",
      type, consts, args, mode);
}

void check(const std::string &text, bool requireNoFallback = true) {
  SCOPED_TRACE(text);
  CpuCheck options;
  options.requireNoFallback = requireNoFallback;
  expectCpuMatchesReference(text, options);
}

TEST(CpuPad, EveryModeAndRank) {
  for (const char *mode : {"constant", "reflect", "edge"}) {
    check(padModel("f32[7]", {2, 3}, mode));
    check(padModel("f32[1,512]", {0, 32, 0, 32}, mode));  // silero's STFT padding.
    check(padModel("f32[3,4]", {1, 2, 2, 1}, mode));
    check(padModel("f32[2,3,4]", {0, 1, 0, 1, 0, 3}, mode));
    check(padModel("f32[2,3,4,5]", {1, 0, 2, 1, 0, 1, 1, 2}, mode));
    check(padModel("f32[3,4]", {0, -1, -1, 2}, mode));  // Crops.
    check(padModel("f32[3,4]", {0, 0, 0, 0}, mode));
    check(padModel("i64[3,5]", {1, 2, 0, 1}, mode));
  }
  check(padModel("f32[3]", {6, 7}, "reflect"));  // Reflects again past the far end.
  check(padModel("f32[1,1]", {2, 2, 1, 3}, "edge"));
  check(padModel("f32[1,1]", {2, 2, 1, 3}, "reflect"));
}

TEST(CpuPad, ConstantValueAndAttributeForm) {
  check(padModel("f32[3,4]", {1, 1, 1, 1}, "constant", "2.5"));
  check(padModel("i64[3,4]", {0, 2, 1, 0}, "constant", "7"));
  check(R"(
model opset(ai.onnx=10) ir_version=8 {
func @main(%x: f32[2,3]) -> (%y: ?) {
  %y = Pad(%x) {mode = "constant", pads = [1, 0, 0, 2], value = -1.5}
  return %y
}
}
)");
}

TEST(CpuPad, PadsComputedAtRunTimeRunTheReference) {
  check(R"(
model opset(ai.onnx=13) ir_version=8 {
func @main(%x: f32[2,3], %pads: i64[4]) -> (%y: ?) {
  %y = Pad(%x, %pads) {mode = "constant"}
  return %y
}
}
)", /*requireNoFallback=*/false);
}

}  // namespace
}  // namespace tessel::cpu
