// tessel Attention on the cpu target against its reference kernel (at -O0, as written): ragged
// shapes, D = 64 and 40, Dv != D, masks broadcast over heads or over batch and queries, causal
// with Sq < Sk and Sq > Sk (rows that see no key are NaN on both), the ViT length 197, a single
// query, an explicit scale, grouped-query heads, and more threads than query blocks; and the unfused
// pattern at -O3.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <string>

#include <fmt/format.h>

#include "ir/parser.h"
#include "targets/cpu/executable.h"

#include "../cpu_test_util.h"
#include "common/attention_model.h"

namespace tessel::cpu {
namespace {

using testing::CpuCheck;
using tessel::testing::attentionModel;
using testing::expectCpuMatchesReference;

TEST(CpuAttention, MatchesReferenceWithoutMask) {
  expectCpuMatchesReference(attentionModel(2, 3, 17, 23, 40, 40, "", ""));
  expectCpuMatchesReference(attentionModel(1, 2, 197, 197, 64, 64, "", ""));
  expectCpuMatchesReference(attentionModel(1, 2, 1, 70, 64, 24, "", "scale = 0.3"));
  expectCpuMatchesReference(attentionModel(1, 1, 130, 1, 8, 8, "", ""));
}

TEST(CpuAttention, MatchesReferenceWithBroadcastMasks) {
  expectCpuMatchesReference(attentionModel(2, 3, 17, 23, 40, 40, "2,1,17,23", ""));
  expectCpuMatchesReference(attentionModel(2, 3, 17, 23, 64, 64, "2,1,1,23", ""));
  expectCpuMatchesReference(attentionModel(2, 3, 17, 23, 16, 16, "23", "causal = 1"));
  expectCpuMatchesReference(attentionModel(1, 2, 130, 140, 64, 64, "1,2,130,140", ""));
}

TEST(CpuAttention, MatchesReferenceWithGroupedQueryHeads) {
  // A Llama decode step (8 query heads over 2 K/V heads, a padding mask), its prefill, and 6 over 3.
  expectCpuMatchesReference(attentionModel(1, 8, 1, 64, 32, 32, "1,1,1,64", "", 2));
  expectCpuMatchesReference(attentionModel(1, 8, 32, 32, 32, 32, "", "causal = 1", 2));
  expectCpuMatchesReference(attentionModel(2, 6, 9, 40, 16, 16, "2,6,9,40", "", 3));
}

TEST(CpuAttention, MatchesReferenceCausal) {
  expectCpuMatchesReference(attentionModel(1, 2, 128, 128, 64, 64, "", "causal = 1"));
  expectCpuMatchesReference(attentionModel(1, 2, 7, 150, 40, 40, "", "causal = 1"));
  expectCpuMatchesReference(attentionModel(1, 2, 150, 7, 40, 40, "", "causal = 1"));  // Early rows: NaN.
}

TEST(CpuAttention, MoreThreadsThanTasks) {
  CpuCheck check;
  check.threads = 4;
  expectCpuMatchesReference(attentionModel(1, 1, 5, 9, 8, 8, "", ""), check);
  expectCpuMatchesReference(attentionModel(2, 12, 65, 65, 64, 64, "", "causal = 1"), check);
}

// The unfused pattern a PyTorch export produces (K arriving as [B,Sk,H,D], a scale, a padding mask),
// compiled at -O3: recognize-attention turns it into tessel Attention, and the plan runs the flash
// kernel, still matching the reference on the unfused graph.
constexpr const char *kUnfusedAttention = R"(
model opset(ai.onnx=17) ir_version=8 {
func @main(%q: f32[2,3,9,16], %kr: f32[2,11,3,16], %v: f32[2,3,11,16], %m: f32[2,1,1,11]) -> (%y: f32[2,3,9,16]) {
  %kt = Transpose(%kr) {perm = [0, 2, 3, 1]}
  %s = MatMul(%q, %kt)
  const %scale = dense<f32[]: 0.25>
  %scaled = Mul(%s, %scale)
  %masked = Add(%scaled, %m)
  %p = Softmax(%masked) {axis = -1}
  %y = MatMul(%p, %v)
  return %y
}
}
)";

TEST(CpuAttention, RecognizedPatternRunsTheFlashKernel) {
  CpuCheck check;
  check.optLevel = 3;
  check.requireNoFallback = false;  // Only the Attention step matters here.
  expectCpuMatchesReference(kUnfusedAttention, check);
  bool flash = false;
  for (const std::string &step : testing::kernelsRun(kUnfusedAttention, 3)) {
    flash |= step.rfind("Attention flash_attention", 0) == 0;
  }
  EXPECT_TRUE(flash) << "no step ran the flash-attention kernel";
}

// Plan-level timing (run with --gtest_also_run_disabled_tests): the unfused graph at -O0 (MatMul,
// Mul, Softmax, MatMul steps) against -O3 (one Attention step), at BERT-base and ViT-B/16 shapes.
TEST(CpuAttention, DISABLED_TimingUnfusedAgainstFused) {
  for (int64_t seq : {128, 197}) {
    const std::string text = fmt::format(R"(
model opset(ai.onnx=17) ir_version=8 {{
func @main(%q: f32[1,12,{0},64], %k: f32[1,12,{0},64], %v: f32[1,12,{0},64]) -> (%y: f32[1,12,{0},64]) {{
  %kt = Transpose(%k) {{perm = [0, 1, 3, 2]}} : f32[1,12,64,{0}]
  %s = MatMul(%q, %kt) : f32[1,12,{0},{0}]
  const %scale = dense<f32[]: 0.125>
  %scaled = Mul(%s, %scale) : f32[1,12,{0},{0}]
  %p = Softmax(%scaled) {{axis = -1}} : f32[1,12,{0},{0}]
  %y = MatMul(%p, %v)
  return %y
}}
}}
)",
                                         seq);
    for (int threads : {1, 2}) {
      for (int opt : {0, 3}) {
        auto model = parseModel(text, "timing.tsl.txt");
        ASSERT_TRUE(model.ok()) << model.diag().str();
        auto plan = compileCpu(std::move(*model), {opt, threads});
        ASSERT_TRUE(plan.ok()) << plan.diag().str();
        const NamedValues feeds = testing::randomFeeds((*plan)->model(), 1);
        double best = 1e30;
        for (int rep = 0; rep < 30; ++rep) {
          const auto start = std::chrono::steady_clock::now();
          ASSERT_TRUE((*plan)->run(feeds).ok());
          best = std::min(best, std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
        }
        std::printf("B1 H12 S%lld D64 threads=%d -O%d: %.3f ms (%d fallback steps)\n", (long long)seq, threads, opt,
                    best, (*plan)->summary().fallbackSteps);
      }
    }
  }
}

}  // namespace
}  // namespace tessel::cpu
