// A model published with fp16 weights (Casts to fp16 after the input, back to fp32 before the
// output) runs on the cpu's float32 kernels: the plan says so, no step runs a reference kernel, the
// outputs equal the reference running the promoted (float32) model tightly, and stay within fp16
// rounding of the reference running the model's own fp16 arithmetic.
#include <gtest/gtest.h>

#include <string>

#include "ir/parser.h"
#include "passes/promote_half.h"
#include "targets/cpu/cpu_test_util.h"
#include "targets/cpu/executable.h"
#include "targets/ref/interpreter.h"

namespace tessel::cpu {
namespace {

/// Largest |a - b| / max|b| over the elements of two float32 tensors.
double relativeError(const Tensor &a, const Tensor &b) {
  double diff = 0, scale = 0;
  for (int64_t i = 0; i < b.numel(); ++i) {
    diff = std::max(diff, std::abs(double(a.data<float>()[i]) - double(b.data<float>()[i])));
    scale = std::max(scale, std::abs(double(b.data<float>()[i])));
  }
  return diff / scale;
}

std::string halfModel() {
  std::string weights = testing::constant("w", {8, 4, 3, 3}, 3) + testing::constant("b", {8}, 5);
  for (size_t at = weights.find("dense<f32"); at != std::string::npos; at = weights.find("dense<f32", at))
    weights.replace(at, 9, "dense<f16");  // k / 2048 with |k| < 2048 is exact in fp16.
  return "model opset(ai.onnx=13) ir_version=8 {\nfunc @main(%x: f32[1,4,10,10]) -> (%y: f32[1,8,10,10]) {\n" +
         weights + R"(  %h = Cast(%x) {to = 10}
  %c = Conv(%h, %w, %b) {pads = [1, 1, 1, 1]}
  %r = Relu(%c)
  %s = Sigmoid(%r)
  %y = Cast(%s) {to = 1}
  return %y
}
}
)";
}

TEST(HalfModel, RunsOnFloat32KernelsAndMatchesThePromotedReference) {
  const std::string text = halfModel();
  auto model = parseModel(text, "half.tsl.txt");
  ASSERT_TRUE(model.ok()) << model.diag().str();
  const NamedValues feeds = testing::randomFeeds(*model, 7);
  auto halfReference = ReferenceInterpreter(*model).run(feeds);
  ASSERT_TRUE(halfReference.ok()) << halfReference.diag().str();

  auto promoted = parseModel(text, "half.tsl.txt");
  ASSERT_TRUE(promoted.ok());
  ASSERT_TRUE(promoteHalf(*promoted).ok());
  auto floatReference = ReferenceInterpreter(*promoted).run(feeds);
  ASSERT_TRUE(floatReference.ok()) << floatReference.diag().str();

  auto plan = compileCpu(std::move(*model), {3, 2});
  ASSERT_TRUE(plan.ok()) << plan.diag().str();
  EXPECT_TRUE((*plan)->summary().promotedHalf);
  EXPECT_EQ((*plan)->summary().fallbackSteps, 0);
  auto got = (*plan)->run(feeds);
  ASSERT_TRUE(got.ok()) << got.diag().str();
  const Tensor &y = (*got)[0].second.tensor();
  EXPECT_LT(relativeError(y, (*floatReference)[0].second.tensor()), 1e-5);
  // The cast's own effect: fp16 arithmetic against float32, a few fp16 ulps.
  const double castEffect = relativeError(y, (*halfReference)[0].second.tensor());
  EXPECT_LT(castEffect, 5e-3);
  EXPECT_GT(castEffect, 0.0) << "the reference's fp16 arithmetic should round somewhere";
}

TEST(HalfModel, AFloat32ModelIsNotMarkedPromoted) {
  auto model = parseModel(R"(model opset(ai.onnx=13) ir_version=8 {
func @main(%x: f32[2,3]) -> (%y: f32[2,3]) {
  %y = Relu(%x)
  return %y
}
})",
                          "float.tsl.txt");
  ASSERT_TRUE(model.ok());
  auto plan = compileCpu(std::move(*model), {3, 1});
  ASSERT_TRUE(plan.ok()) << plan.diag().str();
  EXPECT_FALSE((*plan)->summary().promotedHalf);
}

}  // namespace
}  // namespace tessel::cpu
