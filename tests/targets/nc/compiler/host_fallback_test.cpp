// Valid models the accelerator cannot run whole still compile and run correctly, checked against the
// reference: an If whose branches read values a device stage makes (implicit captures), Slice bounds
// of INT64_MAX, 0-d values and values of more than 4 dims crossing between host and device, an empty
// tensor, a slice along the partition axis that starts where T6 forbids an access, a stage whose
// tensors do not fit SBUF (the node goes to the host with the compile error as its reason), and a
// small node between host nodes, which runs on the host with them rather than split the device's work,
// and a one-element activation times a constant (both per-partition scalars on the device).
#include <gtest/gtest.h>

#include <string>

#include <fmt/format.h>

#include "ir/parser.h"
#include "ir/tensor.h"
#include "targets/nc/compiler/nc_model_check.h"

namespace tessel::nc::compiler {
namespace {

/// Checks `ir` on nc-v2 against the reference; `hostNodes` nodes run on the host.
void expectMatches(const std::string &ir, int hostNodes) {
  SCOPED_TRACE(ir.substr(0, 400));
  auto check = checkModelOnNc(ir);
  ASSERT_TRUE(check.ok()) << check.diag().str();
  EXPECT_LE(check->maxErrorRatio, 1.0) << check->worst;
  EXPECT_EQ(check->hostNodes, hostNodes);
}

/// The compile report of `ir` on nc-v2.
std::string reportOf(const std::string &ir) {
  auto model = parseModel(ir, "<test model>");
  EXPECT_TRUE(model.ok()) << model.diag().str();
  if (!model.ok()) return "";
  auto exe = compileNc(std::move(*model), NcCompileOptions{});
  EXPECT_TRUE(exe.ok()) << exe.diag().str();
  return exe.ok() ? (*exe)->report() : "";
}

bool contains(const std::string &text, const std::string &part) { return text.find(part) != std::string::npos; }

TEST(HostFallback, IfBranchesReadValuesOfDeviceStages) {
  // %m and %y come from the device; the If runs on the host and reads them only inside its
  // branches, so it must run after the device stage, which must hand both back.
  const std::string ir = fmt::format(R"(model opset(ai.onnx=13) ir_version=8 {{
func @main(%x: f32[4,6]) -> (%out: f32[4,8]) {{
  const %w = {}
  const %zero = dense<f32[]: 0>
  %y = Relu(%x)
  %m = MatMul(%y, %w)
  %s = ReduceMax(%x) {{keepdims = 0}}
  %c = Greater(%s, %zero)
  %out = If(%c) {{
    else_branch = func @else() -> (%e: f32[4,8]) {{
      %e = Neg(%m)
      return %e
    }},
    then_branch = func @then() -> (%t: f32[4,8]) {{
      %a = Sigmoid(%m)
      %b = MatMul(%y, %w)
      %t = Add(%a, %b)
      return %t
    }}
  }}
  return %out
}}
}})",
                                     denseText({6, 8}, 3));
  expectMatches(ir, /*hostNodes=*/3);  // ReduceMax, Greater, If.
  EXPECT_TRUE(contains(reportOf(ir), "host stage: 3 nodes; in: x, m, y")) << reportOf(ir);
}

TEST(HostFallback, SliceToInt64MaxStaysOnDevice) {
  // torch exports x[:, 129:] with an end of INT64_MAX, which must clamp to the axis size.
  const std::string ir = R"(model opset(ai.onnx=17) ir_version=8 {
func @main(%x: f32[1,258,3]) -> (%y: f32[1,129,3]) {
  const %zero = dense<i64[1]: 0>
  const %half = dense<i64[1]: 129>
  const %end = dense<i64[1]: 9223372036854775807>
  const %one = dense<i64[1]: 1>
  const %two = dense<i64[1]: 2>
  %all = Slice(%x, %zero, %end, %zero, %one)
  %re = Slice(%all, %zero, %half, %one, %one)
  %im = Slice(%all, %half, %end, %one, %one)
  %re2 = Slice(%re, %zero, %end, %two, %one)
  %im2 = Slice(%im, %zero, %end, %two, %one)
  %p = Mul(%re2, %re2)
  %q = Mul(%im2, %im2)
  %r = Add(%p, %q)
  %y = Sqrt(%r)
  return %y
}
})";
  expectMatches(ir, /*hostNodes=*/0);
}

TEST(HostFallback, ZeroDimValuesCrossStages) {
  // ReduceMax runs on the host and hands a 0-d value to the device, which scales it and hands a
  // 0-d value back to the host's Clip.
  const std::string ir = R"(model opset(ai.onnx=17) ir_version=8 {
func @main(%x: f32[4,8]) -> (%y: f32[4,8], %g: f32[]) {
  const %k = dense<f32[]: 0.5>
  %m = ReduceMax(%x) {keepdims = 0}
  %s = Mul(%m, %k)
  %g = Sigmoid(%s)
  %lo = Neg(%g)
  %y = Clip(%x, %lo, %g)
  return %y, %g
}
})";
  expectMatches(ir, /*hostNodes=*/2);  // ReduceMax, Clip (bounds not constants).
}

TEST(HostFallback, EmptyTensorRunsOnHost) {
  const std::string ir = R"(model opset(ai.onnx=17) ir_version=8 {
func @main(%x: f32[4,8]) -> (%y: f32[4,8]) {
  const %s = dense<i64[1]: 8>
  const %e = dense<i64[1]: 8>
  const %axis = dense<i64[1]: 1>
  %r = Relu(%x)
  %none = Slice(%r, %s, %e, %axis)
  %y = Concat(%r, %none) {axis = 1}
  return %y
}
})";
  expectMatches(ir, /*hostNodes=*/2);  // The Slice and the Concat that read the [4, 0] tensor.
}

TEST(HostFallback, PartitionSliceAtAnUnalignedStartIsMoved) {
  // The input's last axis is on partitions, so %y starts at partition 15 with 15 partitions, where
  // T6 allows no access: its store and the matmul's relayout move it to partition 0 first.
  const std::string ir = fmt::format(R"(model opset(ai.onnx=17) ir_version=8 {{
func @main(%x: f32[4,30]) -> (%y: f32[4,15], %z: f32[4,8]) {{
  const %w = {}
  const %s = dense<i64[1]: 15>
  const %e = dense<i64[1]: 30>
  const %axis = dense<i64[1]: 1>
  %r = Relu(%x)
  %y = Slice(%r, %s, %e, %axis)
  %z = MatMul(%y, %w)
  return %y, %z
}}
}})",
                                     denseText({15, 8}, 5));
  expectMatches(ir, /*hostNodes=*/0);
}

TEST(HostFallback, FiveDimValuesCrossStages) {
  // A 5-D value goes to and from HBM as 4-D (row-major, leading dims merged).
  const std::string ir = R"(model opset(ai.onnx=17) ir_version=8 {
func @main(%x: f32[1,40,3,8,15]) -> (%y: f32[1,40,1,8,15]) {
  const %s = dense<i64[1]: 1>
  const %e = dense<i64[1]: 2>
  const %axis = dense<i64[1]: 2>
  %r = Relu(%x)
  %h = Sin(%r)
  %t = Slice(%h, %s, %e, %axis)
  %y = Sigmoid(%t)
  return %y
}
})";
  expectMatches(ir, /*hostNodes=*/1);  // Sin.
}

TEST(HostFallback, NodeThatDoesNotFitSbufRunsOnTheHost) {
  // A block of %x takes 128 KiB per partition in its most spread layout, and the Relu's output block as
  // much again, more than SBUF: the partition sends the node to the host with the reason (no
  // lowering is tried), and the small %w stays on the device.
  const std::string ir = R"(model opset(ai.onnx=17) ir_version=8 {
func @main(%x: f32[1,128,256,256], %w: f32[4,8]) -> (%y: f32[1,128,256,256], %v: f32[4,8]) {
  %r = Relu(%x)
  %y = Sigmoid(%r)
  %v = Tanh(%w)
  return %y, %v
}
})";
  expectMatches(ir, /*hostNodes=*/1);  // Relu and Sigmoid, fused.
  const std::string report = reportOf(ir);
  EXPECT_TRUE(contains(report, "a block of each of its inputs and outputs needs at least 262144 bytes per partition "
                               "of SBUF together; nc-v2 has 196608"))
      << report;
}

TEST(HostFallback, AllHostModelSaysSo) {
  const std::string ir = R"(model opset(ai.onnx=17) ir_version=8 {
func @main(%x: f32[4,8]) -> (%y: f32[4,8]) {
  %y = Sin(%x)
  return %y
}
})";
  expectMatches(ir, /*hostNodes=*/1);
  EXPECT_TRUE(contains(reportOf(ir), "no device program: every node runs on the host")) << reportOf(ir);
}

/// A decoder's rotary angles: positions (int64, cast on the host) times the frequencies, then Cos and
/// Sin on the host; `deviceRead` also multiplies x by the angles on the device.
std::string rotaryAnglesModel(bool deviceRead) {
  return fmt::format(R"(model opset(ai.onnx=17) ir_version=8 {{
func @main(%x: f32[1,1,8], %pos: i64[1,1,8]) -> (%y: f32[1,1,16]) {{
  const %freq = {}
  const %w = {}
  %pf = Cast(%pos) {{to = 1}}
  %angle = Mul(%pf, %freq)
  %c = Cos(%angle)
  %s = Sin(%angle)
  %cs = Concat(%c, %s) {{axis = 2}}
  %xa = {}
  %h = MatMul(%xa, %w)
  %y = Add(%h, %cs)
  return %y
}}
}})",
                     denseText({1, 1, 8}, 5), denseText({8, 16}, 6), deviceRead ? "Mul(%x, %angle)" : "Relu(%x)");
}

NamedValues positions() {
  return {{"pos", RuntimeValue(Tensor::fromVector<int64_t>({1, 1, 8}, {0, 1, 2, 3, 4, 5, 6, 7}))}};
}

TEST(HostFallback, SmallNodeBetweenHostNodesRunsWithThem) {
  // On the device the Mul would split the device's work in two, the matmul's input crossing the
  // link twice; it runs on the host with the Cast, Cos and Sin.
  const std::string ir = rotaryAnglesModel(/*deviceRead=*/false);
  auto check = checkModelOnNc(ir, NcCompileOptions{}, 2e-2, 2e-2, positions());
  ASSERT_TRUE(check.ok()) << check.diag().str();
  EXPECT_LE(check->maxErrorRatio, 1.0) << check->worst;
  EXPECT_EQ(check->hostNodes, 4);  // Cast, Mul, Cos, Sin.
  const std::string report = reportOf(ir);
  EXPECT_TRUE(contains(report, "(Mul): small, between host nodes")) << report;
  EXPECT_TRUE(contains(report, "2 stages")) << report;  // One host stage, then one device stage.
}

TEST(HostFallback, NodeBetweenHostNodesWithADeviceReaderStaysOnTheDevice) {
  // The same Mul read by a device node too: on the host its result would cross the link all the same.
  const std::string ir = rotaryAnglesModel(/*deviceRead=*/true);
  auto check = checkModelOnNc(ir, NcCompileOptions{}, 2e-2, 2e-2, positions());
  ASSERT_TRUE(check.ok()) << check.diag().str();
  EXPECT_LE(check->maxErrorRatio, 1.0) << check->worst;
  EXPECT_EQ(check->hostNodes, 3) << reportOf(ir);  // Cast, Cos, Sin.
}

TEST(HostFallback, OneElementActivationTimesAConstantRunsOnTheHost) {
  // A one-element activation is a per-partition scalar on the device, and so is a constant that
  // varies along the partitions: the Mul has no tile to compute from, and runs on the host.
  const std::string ir = fmt::format(R"(model opset(ai.onnx=17) ir_version=8 {{
func @main(%x: f32[1,1,8], %pos: i64[1,1,1]) -> (%y: f32[1,1,8]) {{
  const %freq = {}
  const %w = {}
  %pf = Cast(%pos) {{to = 1}}
  %angle = Mul(%pf, %freq)
  %h = MatMul(%x, %w)
  %y = Add(%h, %angle)
  return %y
}}
}})",
                                     denseText({1, 1, 8}, 5), denseText({8, 8}, 6));
  const NamedValues feeds = {{"pos", RuntimeValue(Tensor::fromVector<int64_t>({1, 1, 1}, {3}))}};
  auto check = checkModelOnNc(ir, NcCompileOptions{}, 2e-2, 2e-2, feeds);
  ASSERT_TRUE(check.ok()) << check.diag().str();
  EXPECT_LE(check->maxErrorRatio, 1.0) << check->worst;
  EXPECT_EQ(check->hostNodes, 2);  // Cast, Mul.
  EXPECT_TRUE(contains(reportOf(ir), "(Mul): Mul '' reads no activation whole")) << reportOf(ir);
}

}  // namespace
}  // namespace tessel::nc::compiler
