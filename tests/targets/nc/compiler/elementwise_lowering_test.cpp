// Elementwise ops on the accelerator checked against the reference: HardSigmoid and HardSwish (DVE
// scale, shift and clamp; HardSwish multiplies by that gate), alone and after other ops, on a
// tensor of two partition blocks and on an NCHW one.
#include <gtest/gtest.h>

#include <string>

#include <fmt/format.h>

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

}  // namespace
}  // namespace tessel::nc::compiler
