// tessel Attention and ONNX Softmax lowered onto the accelerator (emit_attention.cpp), checked end to
// end against the reference: small heads on graph inputs, broadcast masks, causal, grouped-query heads
// (fewer K/V heads than query heads), 4 heads of 32 and 64 at 128 tokens, the ragged ViT length 197,
// heads that do not pack into the output's partition blocks, the BERT-like Reshape/Transpose chain
// around the node, and Softmax over the last axis. And tessel RotaryEmbedding: of a projection's heads,
// of a graph input, with tables per batch or of [S, D], and (on the host) of a head dim that does not
// divide the partitions. And tessel KvCacheUpdate written in place into its input buffer at the
// position of a launch register. Keys beyond the heads form's SBUF share run the flash form from HBM.
#include <gtest/gtest.h>

#include <array>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "common/attention_model.h"
#include "targets/nc/compiler/nc_model_check.h"

namespace tessel::nc::compiler {
namespace {

using tessel::testing::attentionModel;
using tessel::testing::rotaryEmbeddingModel;

/// Checks `ir` on nc-v2 (and nc-v3 when asked): every node on the device, within the tolerance.
void expectOnDevice(const std::string &ir, const std::string &target = "nc-v2") {
  NcCompileOptions options;
  options.target = target;
  Expected<ModelCheck> check = checkModelOnNc(ir, options);
  ASSERT_TRUE(check.ok()) << check.diag().message;
  EXPECT_EQ(check->hostNodes, 0);
  EXPECT_LE(check->maxErrorRatio, 1.0) << check->worst;
  std::printf("  %s: %.2f us simulated, max error ratio %.3f\n", target.c_str(), check->simulatedUs,
              check->maxErrorRatio);
}

TEST(AttentionLowering, SmallHeadsOnGraphInputs) {
  expectOnDevice(attentionModel(1, 2, 16, 16, 8, 8, "", ""));
  expectOnDevice(attentionModel(2, 3, 9, 21, 16, 24, "", "scale = 0.3"));
}

TEST(AttentionLowering, BroadcastMasks) {
  expectOnDevice(attentionModel(1, 2, 16, 16, 8, 8, "1,1,1,16", ""));
  expectOnDevice(attentionModel(2, 2, 16, 20, 8, 8, "2,2,16,20", ""));
  expectOnDevice(attentionModel(2, 2, 16, 20, 8, 8, "20", "causal = 1"));
}

TEST(AttentionLowering, Causal) {
  expectOnDevice(attentionModel(1, 2, 16, 16, 8, 8, "", "causal = 1"));
  expectOnDevice(attentionModel(1, 2, 7, 150, 32, 32, "", "causal = 1"));
  expectOnDevice(attentionModel(1, 4, 128, 128, 64, 64, "", "causal = 1"));
}

TEST(AttentionLowering, FourHeadsOf128Tokens) {
  for (const char *target : {"nc-v2", "nc-v3"}) {
    expectOnDevice(attentionModel(1, 4, 128, 128, 32, 32, "", ""), target);
    expectOnDevice(attentionModel(1, 4, 128, 128, 64, 64, "1,1,1,128", ""), target);
  }
}

TEST(AttentionLowering, RaggedSequence) {
  expectOnDevice(attentionModel(1, 2, 197, 197, 64, 64, "", ""));
  expectOnDevice(attentionModel(1, 1, 130, 600, 16, 16, "", ""));  // Two PSUM banks of keys.
}

TEST(AttentionLowering, GroupedQueryHeads) {
  // Llama's decode step and prefill: 8 query heads over 2 K/V heads, a padding mask; then 6 over 3.
  for (const char *target : {"nc-v2", "nc-v3"}) {
    expectOnDevice(attentionModel(1, 8, 1, 64, 32, 32, "1,1,1,64", "", 2), target);
    expectOnDevice(attentionModel(1, 8, 32, 32, 32, 32, "", "causal = 1", 2), target);
  }
  expectOnDevice(attentionModel(2, 6, 9, 40, 16, 16, "2,6,9,40", "", 3));
}

/// Attention of Q + Q, K + K and V + V [2, 1, 8193, 16]: its operands made on the device.
constexpr const char *kLongAttentionOfSums = R"(
model opset(ai.onnx=17, tessel=1) ir_version=8 {
func @main(%q: f32[2,1,8193,16], %k: f32[2,1,8193,16], %v: f32[2,1,8193,16]) -> (%y: f32[2,1,8193,16]) {
  %q2 = Add(%q, %q)
  %k2 = Add(%k, %k)
  %v2 = Add(%v, %v)
  %y = tessel.Attention(%q2, %k2, %v2)
  return %y
}
}
)";

// More keys than the heads form holds in SBUF: the flash form, from HBM. Causal, of graph inputs (fed
// in f32, cast to bf16 through SBUF); and non-causal (the two-pass form) over two batches of
// activations made on the device in bf16, which go to HBM as they are. With a mask, which the flash
// form does not take, the node stays on the host.
TEST(AttentionLowering, LongSequencesRunTheFlashForm) {
  expectOnDevice(attentionModel(1, 1, 8200, 8200, 32, 32, "", "causal = 1"));
  NcCompileOptions options;
  options.target = "nc-v3";
  options.lowering.autoCast = AutoCast::All;
  Expected<ModelCheck> batches = checkModelOnNc(kLongAttentionOfSums, options);
  ASSERT_TRUE(batches.ok()) << batches.diag().message;
  EXPECT_EQ(batches->hostNodes, 0);
  EXPECT_LE(batches->maxErrorRatio, 1.0) << batches->worst;
  options = NcCompileOptions{};
  Expected<ModelCheck> masked = checkModelOnNc(attentionModel(1, 1, 8200, 8200, 32, 32, "8200", ""), options);
  ASSERT_TRUE(masked.ok()) << masked.diag().message;
  EXPECT_EQ(masked->hostNodes, 1);
}

/// Q = X W split into 4 heads of 32 ([1, 4, 6, 32], heads on partition slices), then RoPE.
std::string projectedRotaryModel() {
  return fmt::format(R"(
model opset(ai.onnx=17, tessel=1) ir_version=8 {{
func @main(%x: f32[1,6,128], %c: f32[1,1,6,32], %s: f32[1,1,6,32]) -> (%y: f32[1,4,6,32]) {{
  const %w = {}
  const %split = dense<i64[4]: 1, 6, 4, 32>
  %q = MatMul(%x, %w)
  %qs = Reshape(%q, %split)
  %qh = Transpose(%qs) {{perm = [0, 2, 1, 3]}}
  %y = tessel.RotaryEmbedding(%qh, %c, %s)
  return %y
}}
}}
)",
                     denseText({128, 128}, 7, 0.1f));
}

TEST(AttentionLowering, RotaryEmbedding) {
  for (const char *target : {"nc-v2", "nc-v3"}) {
    expectOnDevice(projectedRotaryModel(), target);      // Heads on partition slices of one block.
    expectOnDevice(rotaryEmbeddingModel("2,4,5,32", "1,1,5,32"), target);  // A graph input: D on partitions.
  }
  expectOnDevice(rotaryEmbeddingModel("2,3,3,64", "2,1,3,64"));  // Tables per batch.
  expectOnDevice(rotaryEmbeddingModel("1,2,1,16", "1,16"));      // One token (a decode step); tables [S, D].
}

TEST(AttentionLowering, RotaryEmbeddingOfAnOddHeadDimRunsOnTheHost) {
  Expected<ModelCheck> check = checkModelOnNc(rotaryEmbeddingModel("1,2,4,48", "1,1,4,48"));
  ASSERT_TRUE(check.ok()) << check.diag().message;
  EXPECT_EQ(check->hostNodes, 1);
  EXPECT_LE(check->maxErrorRatio, 1.0) << check->worst;
}

/// A decode step's cache: the new K [1, H, N, 16] (a projection's heads) written in place into the
/// past [1, H, C, 16] at `cache_position`, and attention over the Concat of both, as kv-cache-in-place
/// leaves a Llama export, but with the update first in the graph: the partition must still run the
/// Concat's read of the past before the update overwrites it (no mask hides the overwritten slot).
std::string cacheUpdateModel(int64_t heads, int64_t capacity, int64_t added) {
  return fmt::format(R"(
model opset(ai.onnx=17, tessel=1) ir_version=8 {{
func @main(%x: f32[1,{2},64], %past: f32[1,{0},{1},16], %cache_position: i64[1]) -> (%y: f32[1,{0},{2},16], %present: f32[1,{0},{1},16]) {{
  const %w = {3}
  const %split = dense<i64[4]: 1, {2}, {0}, 16>
  %k = MatMul(%x, %w)
  %ks = Reshape(%k, %split)
  %kh = Transpose(%ks) {{perm = [0, 2, 1, 3]}}
  %present = tessel.KvCacheUpdate(%past, %kh, %cache_position)
  %all = Concat(%past, %kh) {{axis = 2}}
  %y = tessel.Attention(%kh, %all, %all)
  return %y, %present
}}
}}
)",
                     heads, capacity, added, denseText({64, 16 * heads}, 5, 0.2f));
}

TEST(AttentionLowering, KvCacheWrittenInPlace) {
  // One token at the first, a middle and the last position; a prefill of 5; 40 heads (two PSUM banks).
  for (auto [heads, capacity, added, at] : std::vector<std::array<int64_t, 4>>{
           {2, 8, 1, 0}, {2, 8, 1, 3}, {2, 8, 1, 7}, {4, 16, 5, 2}, {40, 4, 1, 3}}) {
    NamedValues given{{"cache_position", RuntimeValue(Tensor::fromVector<int64_t>({1}, {at}))}};
    Expected<ModelCheck> check = checkModelOnNc(cacheUpdateModel(heads, capacity, added), {}, 2e-2, 2e-2, given);
    ASSERT_TRUE(check.ok()) << check.diag().message;
    EXPECT_EQ(check->hostNodes, 0);
    EXPECT_LE(check->maxErrorRatio, 1.0) << "heads " << heads << ", position " << at << ": " << check->worst;
  }
}

TEST(AttentionLowering, KvCacheUpdateOfACacheReadElsewhereRunsOnTheHost) {
  // The updated cache feeds another node: it is not a graph output only, so it is not written in place.
  const std::string ir = R"(
model opset(ai.onnx=17, tessel=1) ir_version=8 {
func @main(%past: f32[1,2,8,16], %new: f32[1,2,1,16], %cache_position: i64[1]) -> (%y: f32[1,2,8,16]) {
  %present = tessel.KvCacheUpdate(%past, %new, %cache_position)
  %y = Add(%present, %present)
  return %y
}
}
)";
  NamedValues given{{"cache_position", RuntimeValue(Tensor::fromVector<int64_t>({1}, {4}))}};
  Expected<ModelCheck> check = checkModelOnNc(ir, {}, 2e-2, 2e-2, given);
  ASSERT_TRUE(check.ok()) << check.diag().message;
  EXPECT_EQ(check->hostNodes, 1);
  EXPECT_LE(check->maxErrorRatio, 1.0) << check->worst;
}

TEST(AttentionLowering, HeadsThatDoNotPackIntoBlocks) {
  expectOnDevice(attentionModel(1, 3, 20, 20, 48, 40, "", ""));
}

/// The head split of a BERT layer: X [1, 128, 64 * heads] -> heads of 64 -> Attention -> merged back.
std::string bertHeadSplitModel(int64_t heads) {
  return fmt::format(R"(
model opset(ai.onnx=17, tessel=1) ir_version=8 {{
func @main(%x: f32[1,128,{0}], %m: f32[1,1,1,128]) -> (%y: f32[1,128,{0}]) {{
  const %split = dense<i64[4]: 1, 128, {1}, 64>
  const %merge = dense<i64[3]: 1, 128, {0}>
  %xs = Reshape(%x, %split)
  %q = Transpose(%xs) {{perm = [0, 2, 1, 3]}}
  %a = tessel.Attention(%q, %q, %q, %m) : f32[1,{1},128,64]
  %at = Transpose(%a) {{perm = [0, 2, 1, 3]}}
  %y = Reshape(%at, %merge)
  return %y
}}
}}
)",
                     64 * heads, heads);
}

TEST(AttentionLowering, BertHeadSplitChain) {
  expectOnDevice(bertHeadSplitModel(4));
  expectOnDevice(bertHeadSplitModel(12));
}

std::string softmaxModel(const std::string &shape) {
  return fmt::format(R"(
model opset(ai.onnx=17) ir_version=8 {{
func @main(%x: f32[{0}]) -> (%y: f32[{0}]) {{
  %y = Softmax(%x) {{axis = -1}}
  return %y
}}
}}
)",
                     shape);
}

TEST(SoftmaxLowering, LastAxis) {
  expectOnDevice(softmaxModel("4,100"));
  expectOnDevice(softmaxModel("2,3,50"));
}

}  // namespace
}  // namespace tessel::nc::compiler
