// The fused Mamba kernels (mamba.h) against the reference (the recurrence unrolled in ONNX ops): every
// variant, one and several channel tiles, v3 with the scan carried over several sequence tiles, a
// batch of two, on both generations; and the shape errors. Their published-shape times are
// calibration_test.cpp.
#include <gtest/gtest.h>

#include "kernel_test_util.h"

namespace tessel::nc::kernels {
namespace {

using testing::expectKernelPasses;

TEST(MambaKernel, VariantsMatchTheReference) {
  for (const char *variant : {"v1", "v2", "v3"})
    for (const std::string &profile : testing::kProfiles) {
      expectKernelPasses("mamba", {{"B", 1}, {"C", 128}, {"L", 32}, {"S", 2}}, DType::F32, profile, {}, variant);
      expectKernelPasses("mamba", {{"B", 2}, {"C", 256}, {"L", 48}, {"S", 3}}, DType::F32, profile,
                         {{"seq_tile", "16"}}, variant);
    }
}

TEST(MambaKernel, ShapeErrors) {
  const KernelDef &mamba = *findKernel("mamba");
  const MachineProfile &v2 = testing::profileNamed("nc-v2");
  auto channels = runKernel(mamba, KernelParams{{{"B", 1}, {"C", 100}, {"L", 32}, {"S", 2}}, DType::F32, {}, "v1"}, v2);
  ASSERT_FALSE(channels.ok());
  EXPECT_NE(channels.diag().message.find("C=100 is not a multiple of the 128 partitions"), std::string::npos)
      << channels.diag().message;
  auto tiles = runKernel(
      mamba, KernelParams{{{"B", 1}, {"C", 128}, {"L", 40}, {"S", 2}}, DType::F32, {{"seq_tile", "16"}}, "v3"}, v2);
  ASSERT_FALSE(tiles.ok());
  EXPECT_NE(tiles.diag().message.find("L=40 is not a multiple of seq_tile=16"), std::string::npos)
      << tiles.diag().message;
}

}  // namespace
}  // namespace tessel::nc::kernels
