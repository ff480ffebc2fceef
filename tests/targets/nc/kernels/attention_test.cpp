// The fused attention kernel against the reference (MatMul, Mul, causal Add mask, Softmax, MatMul)
// at sequence lengths inside one key superblock (128, 200), one past it (513: a ragged second
// superblock of one row) and with several full superblocks (1030), causal and not, on nc-v2 and
// nc-v3, resident and streamed keys, head dims 16 to 128; and, timing only, the 12-head S = 2048
// D = 64 case the report quotes and the one-head S = 4096 D = 128 case of the kernel table.
#include <gtest/gtest.h>

#include <iostream>

#include "kernel_test_util.h"

namespace tessel::nc::kernels {
namespace {

using testing::expectKernelPasses;

TEST(AttentionKernel, ShortAndRaggedSequences) {
  for (const std::string &profile : testing::kProfiles) {
    for (const char *causal : {"0", "1"}) {
      expectKernelPasses("attention", {{"H", 2}, {"S", 128}, {"D", 64}}, DType::BF16, profile, {{"causal", causal}});
      expectKernelPasses("attention", {{"H", 1}, {"S", 200}, {"D", 64}}, DType::BF16, profile, {{"causal", causal}});
      expectKernelPasses("attention", {{"H", 1}, {"S", 513}, {"D", 64}}, DType::BF16, profile, {{"causal", causal}});
    }
  }
}

TEST(AttentionKernel, SeveralSuperblocks) {
  expectKernelPasses("attention", {{"H", 1}, {"S", 1030}, {"D", 32}}, DType::BF16, "nc-v2", {{"causal", "1"}});
  expectKernelPasses("attention", {{"H", 1}, {"S", 1030}, {"D", 32}}, DType::BF16, "nc-v3", {{"causal", "0"}});
}

TEST(AttentionKernel, StreamedKeys) {
  expectKernelPasses("attention", {{"H", 2}, {"S", 600}, {"D", 64}}, DType::BF16, "nc-v2",
                     {{"causal", "1"}, {"resident", "0"}});
  expectKernelPasses("attention", {{"H", 1}, {"S", 600}, {"D", 64}}, DType::BF16, "nc-v3",
                     {{"causal", "0"}, {"resident", "0"}});
}

TEST(AttentionKernel, HeadDims) {
  expectKernelPasses("attention", {{"H", 2}, {"S", 300}, {"D", 128}}, DType::BF16, "nc-v2", {{"causal", "1"}});
  expectKernelPasses("attention", {{"H", 1}, {"S", 520}, {"D", 16}}, DType::BF16, "nc-v3", {{"causal", "0"}});
}

TEST(AttentionKernel, HeadDimOverThePartitionsIsAnError) {
  KernelParams params{{{"H", 1}, {"S", 128}, {"D", 256}}, DType::BF16, {}, ""};
  auto result = runKernel(*findKernel("attention"), params, testing::profileNamed("nc-v2"));
  ASSERT_FALSE(result.ok());
  EXPECT_NE(result.diag().message.find("D = 256"), std::string::npos) << result.diag().message;
}

TEST(AttentionKernel, BadCausalOptionIsAnError) {
  KernelParams params{{{"H", 1}, {"S", 128}, {"D", 64}}, DType::BF16, {{"causal", "yes"}}, ""};
  auto result = runKernel(*findKernel("attention"), params, testing::profileNamed("nc-v2"));
  ASSERT_FALSE(result.ok());
  EXPECT_NE(result.diag().message.find("causal=yes"), std::string::npos) << result.diag().message;
}

// Timing only: 12 heads, S = 2048, D = 64 (the numbers in the kernel work's report); 2 heads in
// debug and sanitizer builds.
#if !defined(NDEBUG) || defined(__SANITIZE_ADDRESS__)
constexpr int64_t kTimingHeads = 2;
#else
constexpr int64_t kTimingHeads = 12;
#endif

TEST(AttentionKernel, TwelveHeadsTiming) {
  for (const std::string &profile : testing::kProfiles) {
    for (const char *causal : {"0", "1"}) {
      KernelParams params{{{"H", kTimingHeads}, {"S", 2048}, {"D", 64}}, DType::BF16, {{"causal", causal}}, ""};
      KernelRunOptions options;
      options.timingOnly = true;
      options.detectRaces = false;
      auto result = runKernel(*findKernel("attention"), params, testing::profileNamed(profile), options);
      ASSERT_TRUE(result.ok()) << result.diag().str();
      const double totalUs = result->simulation.timeline.totalNs * 1e-3;
      const double peFraction = result->flops / result->simulation.timeline.pePeakFlopsPerSec / (totalUs * 1e-6);
      std::cout << "attention H=" << kTimingHeads << " S=2048 D=64 causal=" << causal << " on " << profile << ": "
                << totalUs << " us, " << 100 * peFraction << "% of PE peak\n";
      EXPECT_GT(peFraction, 0.05);
    }
  }
}

// Timing only: one head of S = 4096, D = 128 on one nc-v2 core, the case of the kernel table. ACT
// (which makes every PSUM read there) and the PE bound it; at least 40% of the PE peak.
TEST(AttentionKernel, LongSequenceReachesFortyPercentOfThePePeak) {
  KernelParams params{{{"H", 1}, {"S", 4096}, {"D", 128}}, DType::BF16, {{"causal", "0"}}, ""};
  KernelRunOptions options;
  options.timingOnly = true;
  options.detectRaces = false;
  auto result = runKernel(*findKernel("attention"), params, testing::profileNamed("nc-v2"), options);
  ASSERT_TRUE(result.ok()) << result.diag().str();
  const double totalUs = result->simulation.timeline.totalNs * 1e-3;
  const double peFraction = result->flops / result->simulation.timeline.pePeakFlopsPerSec / (totalUs * 1e-6);
  std::cout << "attention H=1 S=4096 D=128 on nc-v2: " << totalUs << " us, " << 100 * peFraction
            << "% of PE peak\n";
  EXPECT_GE(peFraction, 0.40);
}

}  // namespace
}  // namespace tessel::nc::kernels
