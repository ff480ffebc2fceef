// layernorm and rmsnorm at aligned and ragged shapes (bn_stats chunks of 512 and a ragged last one),
// in both forms, with the eps option, and the error for rows too wide for SBUF.
#include <gtest/gtest.h>

#include "kernel_test_util.h"

namespace tessel::nc::kernels {
namespace {

TEST(NormKernels, LayerNormAtEveryShape) { testing::expectKernelPassesAtShapes("layernorm"); }
TEST(NormKernels, RmsNormAtEveryShape) { testing::expectKernelPassesAtShapes("rmsnorm"); }

// The LayerNorm tutorial's two kernels (their speedup at the published shape is calibration_test.cpp).
TEST(NormKernels, LayerNormTutorialVariants) {
  for (const char *variant : {"v1", "v2"})
    for (const std::string &profile : testing::kProfiles)
      for (const testing::Shape &shape : testing::kShapes)
        for (DType dtype : {DType::F32, DType::BF16})
          testing::expectKernelPasses("layernorm", {{"R", shape.rows}, {"C", shape.cols}}, dtype, profile, {}, variant);
}

// The features form, which the model compiler's norms run (x and out [C, R]): one feature on a
// partition, ragged feature tiles, chunks of rows, bf16 and f32.
TEST(NormKernels, FeaturesVariantAtEveryShape) {
  for (const char *kernel : {"layernorm", "rmsnorm"})
    for (const std::string &profile : testing::kProfiles)
      for (const testing::Shape &shape : testing::kShapes)
        for (DType dtype : {DType::F32, DType::BF16})
          testing::expectKernelPasses(kernel, {{"R", shape.rows}, {"C", shape.cols}}, dtype, profile, {}, "features");
}

TEST(NormKernels, EpsOption) {
  testing::expectKernelPasses("layernorm", {{"R", 130}, {"C", 64}}, DType::F32, "nc-v2", {{"eps", "0.5"}});
  testing::expectKernelPasses("rmsnorm", {{"R", 130}, {"C", 64}}, DType::F32, "nc-v3", {{"eps", "0.25"}});
}

TEST(NormKernels, RowsTooWideForSbufAreAnError) {
  KernelParams params{{{"R", 4}, {"C", 1 << 20}}, DType::F32, {}, ""};
  auto result = runKernel(*findKernel("layernorm"), params, testing::profileNamed("nc-v2"));
  ASSERT_FALSE(result.ok());
  EXPECT_NE(result.diag().message.find("C=1048576"), std::string::npos) << result.diag().message;
}

}  // namespace
}  // namespace tessel::nc::kernels
