// The kernel runner: a deliberately wrong kernel fails its check (so the check can fail), every
// library kernel runs race-free and within tolerance at its default shape, timing-only runs skip the
// numerics, and errors name the kernel.
#include <gtest/gtest.h>

#include <cmath>

#include "kernel_test_util.h"
#include "targets/nc/kernels/reference.h"

namespace tessel::nc::kernels {
namespace {

using tile::HbmView;
using tile::KernelBuilder;
using tile::TileView;

/// out = 2 * x: a "relu" that is wrong wherever x is not zero.
Status buildDoubling(KernelBuilder &b, const KernelParams &params) {
  const int64_t rows = params.dim("R"), cols = params.dim("C");
  HbmView x = b.input("x", params.dtype, {rows, cols});
  HbmView out = b.output("out", params.dtype, {rows, cols});
  TileView t = b.sbuf("x", params.dtype, rows, {cols});
  b.load(t, x);
  b.tensorScalar(t, t, AluOp::Multiply, 2.0f);
  b.store(out, t);
  return Status::success();
}

KernelDef doublingRelu() {
  KernelDef kernel = *findKernel("relu");
  kernel.name = "wrong_relu";
  kernel.build = buildDoubling;
  return kernel;
}

TEST(KernelRunner, AWrongKernelFailsTheCheck) {
  KernelParams params{{{"R", 64}, {"C", 32}}, DType::F32, {}, ""};
  auto result = runKernel(doublingRelu(), params, testing::profileNamed("nc-v2"));
  ASSERT_TRUE(result.ok()) << result.diag().str();
  EXPECT_TRUE(result->simulation.races.empty());
  EXPECT_TRUE(result->checked);
  EXPECT_FALSE(result->passed);
  EXPECT_GT(result->maxErrorRatio, 1.0);
  EXPECT_GT(result->maxAbsError, 0.1);
  EXPECT_EQ(result->worstElement.rfind("out[", 0), 0u) << result->worstElement;
  ASSERT_EQ(result->outputs.size(), 1u);
  ASSERT_EQ(result->inputs.size(), 1u);
  for (size_t i = 0; i < result->outputs[0].values.size(); ++i)
    ASSERT_EQ(result->outputs[0].values[i], 2.0f * result->inputs[0].values[i]);
}

TEST(KernelRunner, EveryLibraryKernelPassesAtItsDefaultShape) {
  for (const KernelDef &kernel : kernelLibrary()) {
    auto params = parseKernelParams(kernel, "", "", {});
    ASSERT_TRUE(params.ok()) << kernel.name << ": " << params.diag().str();
    for (const std::string &profile : testing::kProfiles)
      testing::expectKernelPasses(kernel.name, params->dims, params->dtype, profile);
  }
}

TEST(KernelRunner, InputsAreSeededAndRoundedToTheirDtype) {
  KernelParams params{{{"R", 8}, {"C", 16}}, DType::BF16, {}, ""};
  KernelRunOptions options;
  options.seed = 7;
  auto first = runKernel(*findKernel("add"), params, testing::profileNamed("nc-v2"), options);
  auto second = runKernel(*findKernel("add"), params, testing::profileNamed("nc-v2"), options);
  ASSERT_TRUE(first.ok() && second.ok());
  ASSERT_EQ(first->inputs.size(), 2u);
  EXPECT_EQ(first->inputs[0].values, second->inputs[0].values);
  for (float value : first->inputs[0].values) {
    EXPECT_LE(std::fabs(value), 1.0f);
    EXPECT_EQ(decodeValues(DType::BF16, encodeValues(DType::BF16, {value}))[0], value);
  }
  options.seed = 8;
  auto third = runKernel(*findKernel("add"), params, testing::profileNamed("nc-v2"), options);
  ASSERT_TRUE(third.ok());
  EXPECT_NE(first->inputs[0].values, third->inputs[0].values);
}

TEST(KernelRunner, TimingOnlySkipsTheNumerics) {
  KernelParams params{{{"R", 256}, {"C", 512}}, DType::BF16, {}, ""};
  KernelRunOptions options;
  options.timingOnly = true;
  auto result = runKernel(*findKernel("softmax"), params, testing::profileNamed("nc-v3"), options);
  ASSERT_TRUE(result.ok()) << result.diag().str();
  EXPECT_FALSE(result->checked);
  EXPECT_TRUE(result->outputs.empty());
  EXPECT_TRUE(result->passed);
  EXPECT_GT(result->simulation.timeline.totalNs, 0);
}

TEST(KernelRunner, ErrorsNameTheKernel) {
  KernelParams missing{{{"R", 4}}, DType::BF16, {}, ""};
  auto result = runKernel(*findKernel("add"), missing, testing::profileNamed("nc-v2"));
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.diag().message, "kernel 'add': missing dim 'C'");
}

TEST(KernelRunner, ReferenceRunsTextIr) {
  HostTensor x{"x", DType::F32, {2, 2}, {1, -2, 3, -4}};
  auto out = runReference(irModel({x}, "  %out = Relu(%x)"), {x});
  ASSERT_TRUE(out.ok()) << out.diag().str();
  ASSERT_EQ(out->size(), 1u);
  EXPECT_EQ((*out)[0].name, "out");
  EXPECT_EQ((*out)[0].shape, (std::vector<int64_t>{2, 2}));
  EXPECT_EQ((*out)[0].values, (std::vector<float>{1, 0, 3, 0}));
  auto bad = runReference(irModel({x}, "  %out = Relu(%y)"), {x});
  EXPECT_FALSE(bad.ok());
}

}  // namespace
}  // namespace tessel::nc::kernels
