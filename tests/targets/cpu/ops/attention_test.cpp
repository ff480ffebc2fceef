// tessel Attention on the cpu target against its reference kernel (at -O0, as written): ragged
// shapes, D = 64 and 40, Dv != D, masks broadcast over heads or over batch and queries, causal
// with Sq < Sk and Sq > Sk (rows that see no key are NaN on both), the ViT length 197, a single
// query, an explicit scale, and more threads than query blocks.
#include <gtest/gtest.h>

#include <string>

#include <fmt/format.h>

#include "../cpu_test_util.h"  // tests/targets/cpu/

namespace tessel::cpu {
namespace {

using testing::CpuCheck;
using testing::expectCpuMatchesReference;

/// A model of one Attention node; `mask` is the Mask's shape ("" for none), `attrs` its attributes.
std::string attentionModel(int64_t b, int64_t h, int64_t sq, int64_t sk, int64_t d, int64_t dv,
                           const std::string &mask, const std::string &attrs) {
  const std::string maskInput = mask.empty() ? "" : fmt::format(", %m: f32[{}]", mask);
  return fmt::format(R"(
model opset(ai.onnx=17, tessel=1) ir_version=8 {{
func @main(%q: f32[{0},{1},{2},{4}], %k: f32[{0},{1},{3},{4}], %v: f32[{0},{1},{3},{5}]{6}) -> (%y: f32[{0},{1},{2},{5}]) {{
  %y = tessel.Attention(%q, %k, %v{7}){8}
  return %y
}}
}}
)",
                     b, h, sq, sk, d, dv, maskInput, mask.empty() ? "" : ", %m",
                     attrs.empty() ? "" : " {" + attrs + "}");
}

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

}  // namespace
}  // namespace tessel::cpu
