// The softmax kernel: one pass at aligned and ragged shapes, the two-pass form over column chunks
// (forced with option chunk, and chosen by itself for rows too wide for SBUF).
#include <gtest/gtest.h>

#include "kernel_test_util.h"

namespace tessel::nc::kernels {
namespace {

using testing::expectKernelPasses;

TEST(SoftmaxKernel, OnePassAtEveryShape) { testing::expectKernelPassesAtShapes("softmax"); }

TEST(SoftmaxKernel, TwoPassOverChunks) {
  expectKernelPasses("softmax", {{"R", 130}, {"C", 2000}}, DType::BF16, "nc-v2", {{"chunk", "512"}});
  expectKernelPasses("softmax", {{"R", 1}, {"C", 513}}, DType::F32, "nc-v3", {{"chunk", "64"}});
}

TEST(SoftmaxKernel, WideRows) {
  // 16384 f32 columns still take one pass; 40000 bf16 columns do not fit and take two.
  expectKernelPasses("softmax", {{"R", 2}, {"C", 16384}}, DType::F32, "nc-v2");
  auto wide = expectKernelPasses("softmax", {{"R", 2}, {"C", 40000}}, DType::BF16, "nc-v3");
  ASSERT_TRUE(wide);
  size_t loads = 0;
  for (const tile::TileOp &op : wide->kernel.ops) loads += op.kind == tile::TileOpKind::Load;
  EXPECT_GT(loads, 2u);  // Every chunk is loaded twice.
}

TEST(SoftmaxKernel, BadChunkOption) {
  KernelParams params{{{"R", 4}, {"C", 8}}, DType::BF16, {{"chunk", "zero"}}, ""};
  auto result = runKernel(*findKernel("softmax"), params, testing::profileNamed("nc-v2"));
  ASSERT_FALSE(result.ok());
  EXPECT_NE(result.diag().message.find("chunk=zero"), std::string::npos) << result.diag().message;
}

}  // namespace
}  // namespace tessel::nc::kernels
