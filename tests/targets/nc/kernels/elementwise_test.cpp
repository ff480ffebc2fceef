// The elementwise kernels at aligned and ragged shapes on nc-v2 and nc-v3, bf16 and f32: binary ops
// with each broadcast mode, and the ACT activations.
#include <gtest/gtest.h>

#include "kernel_test_util.h"

namespace tessel::nc::kernels {
namespace {

using testing::expectKernelPasses;
using testing::expectKernelPassesAtShapes;

TEST(ElementwiseKernels, AddAtEveryShape) { expectKernelPassesAtShapes("add"); }
TEST(ElementwiseKernels, AddRowBroadcast) { expectKernelPassesAtShapes("add", {{"broadcast", "row"}}); }
TEST(ElementwiseKernels, AddColumnBroadcast) { expectKernelPassesAtShapes("add", {{"broadcast", "col"}}); }

TEST(ElementwiseKernels, MulSubMaxInEachMode) {
  for (const char *name : {"mul", "sub", "max"}) {
    for (const char *mode : {"none", "row", "col"}) {
      expectKernelPasses(name, {{"R", 130}, {"C", 513}}, DType::BF16, "nc-v2", {{"broadcast", mode}});
      expectKernelPasses(name, {{"R", 300}, {"C", 64}}, DType::F32, "nc-v3", {{"broadcast", mode}});
    }
  }
}

TEST(ElementwiseKernels, GeluAtEveryShape) { expectKernelPassesAtShapes("gelu"); }

TEST(ElementwiseKernels, SiluAndRelu) {
  for (const char *name : {"silu", "relu"}) {
    expectKernelPasses(name, {{"R", 130}, {"C", 513}}, DType::BF16, "nc-v2");
    expectKernelPasses(name, {{"R", 1}, {"C", 2000}}, DType::F32, "nc-v3");
  }
}

TEST(ElementwiseKernels, UnknownBroadcastModeIsAnError) {
  KernelParams params{{{"R", 4}, {"C", 8}}, DType::BF16, {{"broadcast", "diagonal"}}, ""};
  auto result = runKernel(*findKernel("add"), params, testing::profileNamed("nc-v2"));
  ASSERT_FALSE(result.ok());
  EXPECT_NE(result.diag().message.find("kernel 'add'"), std::string::npos) << result.diag().message;
  EXPECT_NE(result.diag().message.find("broadcast=diagonal"), std::string::npos) << result.diag().message;
}

}  // namespace
}  // namespace tessel::nc::kernels
