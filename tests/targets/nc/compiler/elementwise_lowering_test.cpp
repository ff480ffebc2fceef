// Elementwise ops on the accelerator checked against the reference: HardSigmoid and HardSwish (DVE
// scale, shift and clamp; HardSwish multiplies by that gate), alone and after other ops, on a
// tensor of two partition blocks and on an NCHW one; an output written over an input read for the
// last time; a one-channel map laid out with its rows on partitions.
#include <gtest/gtest.h>

#include <string>

#include <fmt/format.h>

#include "ir/parser.h"
#include "targets/nc/compiler/nc_model_check.h"

namespace tessel::nc::compiler {
namespace {

void expectOnDeviceAndMatches(const std::string &ir) {
  SCOPED_TRACE(ir);
  auto check = checkModelOnNc(ir);
  ASSERT_TRUE(check.ok()) << check.diag().str();
  EXPECT_LE(check->maxErrorRatio, 1.0) << check->worst;
  EXPECT_EQ(check->hostNodes, 0);
}

TEST(ElementwiseLowering, HardSigmoidAndHardSwish) {
  for (const char *shape : {"[4,200]", "[1,24,6,6]"}) {
    // Inputs in [-4, 4) reach both clamps of the gate (x / 6 + 0.5 leaves [0, 1] at |x| > 3).
    expectOnDeviceAndMatches(fmt::format(R"(model opset(ai.onnx=17) ir_version=8 {{
func @main(%x: f32{0}) -> (%s: f32{0}, %w: f32{0}) {{
  const %four = dense<f32[]: 4>
  %big = Mul(%x, %four)
  %s = HardSigmoid(%big) {{alpha = 0.25, beta = 0.4}}
  %w = HardSwish(%big)
  return %s, %w
}}
}})",
                                         shape));
  }
}

/// Peak SBUF per partition of an unfused (-O1) chain of four unary ops over `shape`, checked
/// against the reference.
uint64_t chainPeakSbuf(const std::string &shape) {
  const std::string ir = fmt::format(R"(model opset(ai.onnx=17) ir_version=8 {{
func @main(%x: f32[{0}]) -> (%y: f32[{0}]) {{
  %a = Relu(%x)
  %b = Sigmoid(%a)
  %c = Tanh(%b)
  %y = Abs(%c)
  return %y
}}
}})", shape);
  NcCompileOptions options;
  options.optLevel = 1;
  auto check = checkModelOnNc(ir, options);
  EXPECT_TRUE(check.ok()) << check.diag().str();
  if (!check.ok()) return 0;
  EXPECT_LE(check->maxErrorRatio, 1.0) << check->worst;
  EXPECT_EQ(check->hostNodes, 0);
  auto model = parseModel(ir, "<test model>");
  EXPECT_TRUE(model.ok()) << model.diag().str();
  auto exe = compileNc(std::move(*model), options);
  EXPECT_TRUE(exe.ok() && (*exe)->programs().size() == 1u);
  return exe.ok() && !(*exe)->programs().empty() ? (*exe)->programs()[0].peakSbufBytesPerPartition : 0;
}

TEST(ElementwiseLowering, DyingInputIsOverwrittenWhenItCrowdsSbuf) {
  // Each op reads the last op's output for the last time. At 64 KiB per partition (a third of
  // SBUF) it writes over it: the chain needs one tensor's tiles, not an input's and an output's.
  EXPECT_LT(chainPeakSbuf("128,16384"), 2u * 16384 * 4);
  // At 16 KiB per partition it does not: new tiles leave the next op free to run ahead.
  EXPECT_GE(chainPeakSbuf("1,32,64,64"), 2u * 64 * 64 * 4);
}

TEST(ElementwiseLowering, OneChannelMapSpreadsOverPartitions) {
  // A [1, 1, 320, 320] input with its one channel on partitions would take 400 KiB of one
  // partition; the rows go on partitions instead.
  expectOnDeviceAndMatches(R"(model opset(ai.onnx=17) ir_version=8 {
func @main(%x: f32[1,1,320,320]) -> (%y: f32[1,1,320,320]) {
  %y = Sigmoid(%x)
  return %y
}
})");
}

TEST(ElementwiseLowering, SqueezeExcitationGateIsAPerPartitionScalar) {
  // x * gate(GlobalAveragePool(x)) as PP-OCR and MobileNetV3 have it: the [1, C, 1, 1] gate is read as
  // one scalar per partition (160 channels: two blocks, one ragged), on its own and inside a fused
  // chain (-O3 fuses the Mul with the Add after it).
  expectOnDeviceAndMatches(R"(model opset(ai.onnx=17) ir_version=8 {
func @main(%x: f32[1,160,6,6]) -> (%y: f32[1,160,6,6]) {
  const %half = dense<f32[]: 0.5>
  %p = GlobalAveragePool(%x)
  %g = HardSigmoid(%p) {alpha = 0.2, beta = 0.5}
  %m = Mul(%x, %g)
  %y = Add(%m, %half)
  return %y
}
})");
}

}  // namespace
}  // namespace tessel::nc::compiler
