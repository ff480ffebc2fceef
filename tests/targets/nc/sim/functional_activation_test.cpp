// activation: scale and bias from [P,1] operands or immediates, the accum reduction over each
// partition's fp32 results (taken before rounding to the dst dtype), and the value of every ACT
// function against its textbook definition.
#include <cmath>
#include <numbers>

#include "functional_fixture.h"

namespace tessel::nc::testing {
namespace {

class NcFunctionalActivation : public FunctionalTest {
 protected:
  /// func(x) for one f32 element, with extra fields (e.g. " imm=1,0,0.2").
  float apply(const std::string &func, float x, const std::string &extra = "") {
    putF32(kSbuf, 0, 0, x);
    Status status = run("activation.ACT dst=sbuf[p0:1, off 64]:f32 src=sbuf[p0:1, off 0]:f32 func=" + func + extra);
    EXPECT_TRUE(status.ok()) << status.str();
    return getF32(kSbuf, 0, 64);
  }
};

TEST_F(NcFunctionalActivation, ScaleAndBiasOperandsWithAccum) {
  const float p0[] = {1.0f + 0x1p-8f, 2, 3, 4}, p1[] = {-1, 0, 1, 2};
  for (int i = 0; i < 4; ++i) {
    putF32(kSbuf, 0, 4 * i, p0[i]);
    putF32(kSbuf, 1, 4 * i, p1[i]);
  }
  putF32(kSbuf, 0, 64, 1.0f);   // scale
  putF32(kSbuf, 1, 64, 0.5f);
  putF32(kSbuf, 0, 68, 0.0f);   // bias
  putF32(kSbuf, 1, 68, 1.0f);
  ASSERT_TRUE(run("activation.ACT dst=sbuf[p0:2, off 128, [1,4]]:bf16 src=sbuf[p0:2, off 0, [1,4]]:f32 "
                  "bias=sbuf[p0:2, off 68]:f32 accum=sbuf[p0:2, off 72]:f32 scale=sbuf[p0:2, off 64]:f32 "
                  "op0=add func=relu")
                  .ok());
  // Partition 0: relu(x) with x[0] = 1 + 2^-8, which rounds to 1.0 in bf16 (tie to even); the
  // accumulator sums the fp32 results before that rounding.
  EXPECT_EQ(getBf16(kSbuf, 0, 128), 1.0f);
  EXPECT_EQ(getBf16(kSbuf, 0, 134), 4.0f);
  EXPECT_EQ(getF32(kSbuf, 0, 72), 10.0f + 0x1p-8f);
  // Partition 1: relu(0.5 x + 1) = {0.5, 1, 1.5, 2}.
  EXPECT_EQ(getBf16(kSbuf, 1, 128), 0.5f);
  EXPECT_EQ(getBf16(kSbuf, 1, 134), 2.0f);
  EXPECT_EQ(getF32(kSbuf, 1, 72), 5.0f);
}

TEST_F(NcFunctionalActivation, ImmediateScaleAndBias) {
  EXPECT_EQ(apply("exp", 0.5f, " imm=2,-1"), 1.0f);  // exp(0.5 * 2 - 1).
  EXPECT_EQ(apply("copy", 3.0f, " imm=-2"), -6.0f);  // Scale only; bias 0.
  EXPECT_EQ(apply("copy", 3.0f), 3.0f);               // Neither: scale 1, bias 0.
}

TEST_F(NcFunctionalActivation, AccumMaximumAndPsumSource) {
  for (int i = 0; i < 3; ++i) putF32(kPsum, 0, 4 * i, static_cast<float>(i == 1 ? 7 : -i));
  ASSERT_TRUE(run("activation.ACT dst=sbuf[p0:1, off 0, [1,3]]:f32 src=psum[p0:1, off 0, [1,3]]:f32 "
                  "accum=sbuf[p0:1, off 64]:f32 op0=maximum func=square")
                  .ok());
  EXPECT_EQ(getF32(kSbuf, 0, 64), 49.0f);
  EXPECT_EQ(getF32(kSbuf, 0, 8), 4.0f);
}

TEST_F(NcFunctionalActivation, FunctionValues) {
  const double pi = std::numbers::pi;
  EXPECT_NEAR(apply("gelu", 1.0f), 0.5 * (1 + std::erf(1 / std::sqrt(2.0))), 1e-6);
  EXPECT_NEAR(apply("gelu", -2.0f), -2 * 0.5 * (1 + std::erf(-2 / std::sqrt(2.0))), 1e-6);
  EXPECT_NEAR(apply("gelu_dx", 0.0f), 0.5, 1e-6);
  EXPECT_NEAR(apply("gelu_dx", 1.0f), 0.5 * (1 + std::erf(1 / std::sqrt(2.0))) + std::exp(-0.5) / std::sqrt(2 * pi),
              1e-6);
  EXPECT_NEAR(apply("gelu_apprx_tanh", 1.0f), 0.5 * (1 + std::tanh(std::sqrt(2 / pi) * (1 + 0.044715))), 1e-6);
  EXPECT_NEAR(apply("gelu_apprx_sigmoid", 1.0f), 1 / (1 + std::exp(-1.702)), 1e-6);
  EXPECT_NEAR(apply("gelu_apprx_sigmoid_dx", 0.0f), 0.5, 1e-6);
  EXPECT_NEAR(apply("sigmoid", 0.0f), 0.5, 1e-7);
  EXPECT_NEAR(apply("silu", 1.0f), 1 / (1 + std::exp(-1.0)), 1e-6);
  EXPECT_NEAR(apply("silu_dx", 0.0f), 0.5, 1e-7);
  double s2 = 1 / (1 + std::exp(-2.0));
  EXPECT_NEAR(apply("silu_dx", 2.0f), s2 + 2 * s2 * (1 - s2), 1e-6);
  EXPECT_NEAR(apply("tanh", 0.5f), std::tanh(0.5), 1e-6);
  EXPECT_NEAR(apply("softplus", 0.0f), std::log(2.0), 1e-6);
  EXPECT_EQ(apply("softplus", 100.0f), 100.0f);  // No overflow.
  EXPECT_NEAR(apply("softplus", -100.0f), std::exp(-100.0), 1e-30);
  EXPECT_NEAR(apply("mish", 1.0f), std::tanh(std::log1p(std::exp(1.0))), 1e-6);
  EXPECT_NEAR(apply("erf", 0.5f), std::erf(0.5), 1e-6);
  EXPECT_NEAR(apply("erf_dx", 0.0f), 2 / std::sqrt(pi), 1e-6);
  EXPECT_NEAR(apply("exp", 1.0f), std::exp(1.0), 1e-6);
  EXPECT_EQ(apply("sign", -3.0f), -1.0f);
  EXPECT_EQ(apply("sign", 0.0f), 0.0f);
  EXPECT_EQ(apply("abs", -3.0f), 3.0f);
  EXPECT_NEAR(apply("log", static_cast<float>(std::exp(1.0))), 1.0, 1e-6);
  EXPECT_NEAR(apply("sin", 0.5f), std::sin(0.5), 1e-6);
  EXPECT_NEAR(apply("arctan", 1.0f), pi / 4, 1e-6);
  EXPECT_EQ(apply("sqrt", 9.0f), 3.0f);
  EXPECT_EQ(apply("rsqrt", 4.0f), 0.5f);
  EXPECT_EQ(apply("reciprocal", 4.0f), 0.25f);
  EXPECT_EQ(apply("square", -3.0f), 9.0f);
  EXPECT_EQ(apply("relu", -3.0f), 0.0f);
  EXPECT_NEAR(apply("prelu", -2.0f), -0.02, 1e-7);                  // Default slope 0.01.
  EXPECT_NEAR(apply("prelu", -2.0f, " imm=1,0,0.25"), -0.5, 1e-7);  // Slope from imm[2].
  EXPECT_EQ(apply("prelu", 2.0f), 2.0f);
}

TEST_F(NcFunctionalActivation, Errors) {
  EXPECT_EQ(runError("activation.ACT dst=sbuf[p0:2, off 0, [1,4]]:f32 src=sbuf[p0:2, off 64, [1,4]]:f32 "
                     "bias=sbuf[p0:2, off 128, [1,2]]:f32 func=exp"),
            "instruction 0 (activation.ACT): operand bias has shape [2, 2]; expected one element per partition [2, 1]");
  EXPECT_EQ(runError("activation.ACT dst=sbuf[p0:2, off 0, [1,4]]:f32 src=sbuf[p0:2, off 64, [1,5]]:f32 func=exp"),
            "instruction 0 (activation.ACT): operand dst has shape [2, 4] but src has shape [2, 5]");
  EXPECT_EQ(runError("activation.ACT dst=sbuf[p0:2, off 0, [1,4]]:f32 src=sbuf[p0:2, off 64, [1,4]]:f32"),
            "instruction 0 (activation.ACT): func is required");
}

}  // namespace
}  // namespace tessel::nc::testing
