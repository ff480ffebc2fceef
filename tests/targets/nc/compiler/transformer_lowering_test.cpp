// Whole small models on the accelerator, checked against the reference: the transformer-block ops
// (matmuls with bias, residual and activation, layer and RMS normalization, elementwise chains,
// the views around attention), sharding over the chip's cores, and the host fallback of what the
// accelerator cannot run.
#include <gtest/gtest.h>

#include <functional>

#include <fmt/format.h>

#include "targets/nc/compiler/nc_model_check.h"

namespace tessel::nc::compiler {
namespace {

void expectMatches(const std::string &ir, const NcCompileOptions &options = {}, int expectedHostNodes = 0) {
  auto check = checkModelOnNc(ir, options);
  ASSERT_TRUE(check.ok()) << check.diag().str();
  EXPECT_LE(check->maxErrorRatio, 1.0) << check->worst;
  EXPECT_EQ(check->hostNodes, expectedHostNodes);
  EXPECT_GT(check->simulatedUs, 0.0);
}

TEST(TransformerLowering, FusedMatMulWithBiasGeluAndResidual) {
  // Rows and features above one tile (200 rows, K = 320, N = 192) and a ragged last tile each.
  const std::string ir = fmt::format(R"(model opset(ai.onnx=17, tessel=1) ir_version=8 {{
func @main(%x: f32[1,200,320]) -> (%y: f32[1,200,320]) {{
  const %w1 = {}
  const %b1 = {}
  const %w2 = {}
  const %b2 = {}
  %h = tessel.FusedMatMul(%x, %w1, %b1) {{activation = "Gelu"}}
  %y = tessel.FusedMatMul(%h, %w2, %b2, %x)
  return %y
}}
}})",
                                     denseText({320, 192}, 1, 0.1f), denseText({192}, 2), denseText({192, 320}, 3, 0.1f),
                                     denseText({320}, 4));
  expectMatches(ir);
}

TEST(TransformerLowering, LayerNormAndElementwise) {
  const std::string ir = fmt::format(R"(model opset(ai.onnx=17, tessel=1) ir_version=8 {{
func @main(%x: f32[2,64,160], %z: f32[2,64,160]) -> (%y: f32[2,64,160]) {{
  const %g = {}
  const %b = {}
  const %half = dense<f32[]: 0.5>
  %s = Add(%x, %z)
  %n = tessel.LayerNormalization(%s, %g, %b) {{axis = -1, epsilon = 1e-5}}
  %m = Mul(%n, %half)
  %y = Sigmoid(%m)
  return %y
}}
}})",
                                     denseText({160}, 5), denseText({160}, 6));
  expectMatches(ir);
}

TEST(TransformerLowering, RmsNormOnTheDevice) {
  // Llama's RMSNorm as recognize-layer-norm leaves it: 300 features (two tiles, one ragged) and
  // 130 rows; the matmul after it reads the features on partitions as the norm writes them.
  const std::string ir = fmt::format(R"(model opset(ai.onnx=17, tessel=1) ir_version=8 {{
func @main(%x: f32[1,130,300]) -> (%y: f32[1,130,64]) {{
  const %g = {}
  const %w = {}
  %n = tessel.RMSNormalization(%x, %g) {{axis = -1, epsilon = 1e-5}}
  %y = MatMul(%n, %w)
  return %y
}}
}})",
                                     denseText({300}, 7), denseText({300, 64}, 8, 0.1f));
  expectMatches(ir);
}

TEST(TransformerLowering, OneRowRmsNormOverBlocksSideBySide) {
  // A decode step's RMSNorm: one row of 1024 features, which the matmul before it leaves as 8 blocks
  // side by side in one tile, so the norm takes each step in one instruction over all of them.
  const std::string ir = fmt::format(R"(model opset(ai.onnx=17, tessel=1) ir_version=8 {{
func @main(%x: f32[1,1,256]) -> (%y: f32[1,1,64]) {{
  const %w0 = {}
  const %g = {}
  const %w = {}
  %h = MatMul(%x, %w0)
  %n = tessel.RMSNormalization(%h, %g) {{axis = -1, epsilon = 1e-5}}
  %y = MatMul(%n, %w)
  return %y
}}
}})",
                                     denseText({256, 1024}, 5, 0.1f), denseText({1024}, 7), denseText({1024, 64}, 8, 0.1f));
  expectMatches(ir);
}

TEST(TransformerLowering, OutputWiderThanOneRowTileStoresInColumnChunks) {
  // An LM head's shape in small: 4300 output features (past one 4096-column row tile, ragged) for
  // 3 tokens, stored as rows from the features on partitions; before, the whole row tile had to fit.
  const std::string ir = fmt::format(R"(model opset(ai.onnx=17, tessel=1) ir_version=8 {{
func @main(%x: f32[1,3,16]) -> (%y: f32[1,3,4300]) {{
  const %w = {}
  %y = MatMul(%x, %w)
  return %y
}}
}})",
                                     denseText({16, 4300}, 9, 0.2f));
  expectMatches(ir);
}

TEST(TransformerLowering, HeadSplitViewsRoundTrip) {
  // Reshape and Transpose into heads and back are views; the matmul after them reads the same storage.
  const std::string ir = fmt::format(R"(model opset(ai.onnx=17, tessel=1) ir_version=8 {{
func @main(%x: f32[1,32,256]) -> (%y: f32[1,32,64]) {{
  const %shape4 = dense<i64[4]: 1, 32, 4, 64>
  const %shape3 = dense<i64[3]: 1, 32, 256>
  const %w = {}
  %r = Reshape(%x, %shape4)
  %t = Transpose(%r) {{perm = [0, 2, 1, 3]}}
  %u = Transpose(%t) {{perm = [0, 2, 1, 3]}}
  %v = Reshape(%u, %shape3)
  %y = MatMul(%v, %w)
  return %y
}}
}})",
                                     denseText({256, 64}, 7, 0.1f));
  expectMatches(ir);
}

TEST(TransformerLowering, UnsupportedNodeRunsOnHost) {
  // Floor has no accelerator form: it runs on the host between two device stages.
  const std::string ir = fmt::format(R"(model opset(ai.onnx=17, tessel=1) ir_version=8 {{
func @main(%x: f32[4,96]) -> (%y: f32[4,32]) {{
  const %w1 = {}
  const %w2 = {}
  %a = MatMul(%x, %w1)
  %f = Floor(%a)
  %y = MatMul(%f, %w2)
  return %y
}}
}})",
                                     denseText({96, 48}, 8), denseText({48, 32}, 9, 0.1f));
  expectMatches(ir, {}, 1);
}

TEST(TransformerLowering, SpillsActivationsThatDoNotFitSbuf) {
  // Each activation takes 32 KiB per partition (4 blocks of 2048 tokens in fp32); five are live at
  // once before the last Add, more than half of SBUF: `a`, read last, goes to HBM and comes back.
  const std::string ir = R"(model opset(ai.onnx=17) ir_version=8 {
func @main(%x: f32[2048,512]) -> (%y: f32[2048,512]) {
  %a = Exp(%x)
  %b = Relu(%x)
  %c = Tanh(%b)
  %d = Sigmoid(%c)
  %e = Mul(%d, %b)
  %f = Add(%e, %c)
  %y = Add(%f, %a)
  return %y
}
})";
  NcCompileOptions options;
  options.optLevel = 1;  // No fusion: every op is its own node with its own output.
  auto check = checkModelOnNc(ir, options);
  ASSERT_TRUE(check.ok()) << check.diag().str();
  EXPECT_LE(check->maxErrorRatio, 1.0) << check->worst;
  EXPECT_GT(check->spilledActivations, 0);
}

/// Checks `ir` on nc-v3 at each core count against the reference, and that core 0 runs
/// `collectives(cores)` collectives; returns the checks made (for more expectations).
std::vector<ModelCheck> expectMatchesOnCores(const std::string &ir, std::initializer_list<int> coreCounts,
                                             const std::function<int(int)> &collectives) {
  std::vector<ModelCheck> checks;
  for (int cores : coreCounts) {
    NcCompileOptions options;
    options.target = "nc-v3";
    options.lowering.cores = cores;
    auto check = checkModelOnNc(ir, options);
    EXPECT_TRUE(check.ok()) << cores << " cores: " << check.diag().str();
    if (!check.ok()) continue;
    EXPECT_LE(check->maxErrorRatio, 1.0) << cores << " cores: " << check->worst;
    EXPECT_EQ(check->collectives, collectives(cores)) << cores << " cores";
    checks.push_back(*check);
  }
  return checks;
}

TEST(TransformerLowering, ShardsMatmulsOverTheCores) {
  // An MLP pair (column-parallel, then row-parallel with one all_reduce) and a matmul whose output a
  // non-matmul reads (column-parallel, completed by an all_gather of every tile's parts on 2 and 4
  // cores, by an all_reduce of whole tiles on 8); the result matches on 2, 4 and 8 cores.
  const std::string ir = fmt::format(R"(model opset(ai.onnx=17, tessel=1) ir_version=8 {{
func @main(%x: f32[1,16,1024]) -> (%y: f32[1,16,1024]) {{
  const %w1 = {}
  const %b1 = {}
  const %w2 = {}
  const %w3 = {}
  %h = MatMul(%x, %w1)
  %hb = Add(%h, %b1)
  %g = Relu(%hb)
  %o = MatMul(%g, %w2)
  %s = Add(%o, %x)
  %p = MatMul(%s, %w3)
  %y = Tanh(%p)
  return %y
}}
}})",
                                     denseText({1024, 2048}, 11, 0.05f), denseText({2048}, 12), denseText({2048, 1024}, 13, 0.05f),
                                     denseText({1024, 1024}, 14, 0.05f));
  // The pair's all_reduce, the last matmul's collective.
  expectMatchesOnCores(ir, {2, 4, 8}, [](int) { return 2; });
}

TEST(TransformerLowering, SwiGluMlpNeedsOneAllReduce) {
  // A Llama MLP: gate and up column-parallel, SiLU(gate) * up on each core's own tiles, down
  // row-parallel: one all_reduce per block on 2 and 8 cores.
  const std::string ir = fmt::format(R"(model opset(ai.onnx=17) ir_version=8 {{
func @main(%x: f32[1,2,512]) -> (%y: f32[1,2,512]) {{
  const %wg = {}
  const %wu = {}
  const %wd = {}
  %gate = MatMul(%x, %wg)
  %up = MatMul(%x, %wu)
  %sig = Sigmoid(%gate)
  %silu = Mul(%gate, %sig)
  %h = Mul(%silu, %up)
  %down = MatMul(%h, %wd)
  %y = Tanh(%down)
  return %y
}}
}})",
                                     denseText({512, 2048}, 31, 0.05f), denseText({512, 2048}, 32, 0.05f),
                                     denseText({2048, 512}, 33, 0.05f));
  expectMatchesOnCores(ir, {2, 8}, [](int) { return 1; });
}

TEST(TransformerLowering, OneRowOfManyFeaturesStoresByTransposes) {
  // A decode step's LM head: one row, 40 blocks of features on partitions. The store transposes the
  // blocks to one per partition, rather than writing a 4-byte run per feature; on 8 cores each
  // core computes whole tiles and an all_reduce completes the row.
  const std::string ir = fmt::format(R"(model opset(ai.onnx=17) ir_version=8 {{
func @main(%x: f32[1,1,512]) -> (%logits: f32[1,1,5120]) {{
  const %w = {}
  %logits = MatMul(%x, %w)
  return %logits
}}
}})",
                                     denseText({512, 5120}, 21, 0.05f));
  const std::vector<ModelCheck> checks = expectMatchesOnCores(ir, {1, 8}, [](int cores) { return cores > 1 ? 1 : 0; });
  ASSERT_EQ(checks.size(), 2u);
  for (const ModelCheck &check : checks) EXPECT_EQ(check.hbmStores, 1);  // 40 blocks: one transpose to 40 partitions.
}

TEST(TransformerLowering, FewerFeatureTilesThanCoresLeaveCoresIdle) {
  // A grouped-query attention's K projection: 3 tiles of features on 8 cores. Cores 0-2 compute a
  // tile each, the others contribute zeros to the all_reduce that completes it.
  const std::string ir = fmt::format(R"(model opset(ai.onnx=17) ir_version=8 {{
func @main(%x: f32[1,1,4096]) -> (%k: f32[1,1,384]) {{
  const %w = {}
  %m = MatMul(%x, %w)
  %k = Tanh(%m)
  return %k
}}
}})",
                                     denseText({4096, 384}, 22, 0.02f));
  expectMatchesOnCores(ir, {8}, [](int) { return 1; });
}

TEST(TransformerLowering, AttentionSplitsByHeadsOverTheCores) {
  // GPT-2's attention block in small: one QKV projection split into Q, K and V, 8 heads of 64, causal
  // attention, the output projection. On 2 and 4 cores each core owns every 2nd (4th) 128-feature
  // tile of the QKV projection, so the heads of its Q tiles with their K and V (the same tiles'
  // heads): it computes those heads only, and the output projection, row-parallel over the same
  // tiles, needs the one all_reduce. On 8 cores K's tiles (4-7) are not on the cores of their Q heads
  // (0-3), so the projection is completed by one all_reduce instead and the attention runs whole.
  const std::string ir = fmt::format(R"(model opset(ai.onnx=17, tessel=1) ir_version=8 {{
func @main(%x: f32[1,16,512]) -> (%y: f32[1,16,512]) {{
  const %w = {}
  const %b = {}
  const %wo = {}
  const %heads = dense<i64[4]: 1, 16, 8, 64>
  const %merged = dense<i64[3]: 1, 16, 512>
  %qkv = MatMul(%x, %w)
  %qkvb = Add(%qkv, %b)
  %q, %k, %v = Split(%qkvb) {{axis = 2, split = [512, 512, 512]}}
  %q4 = Reshape(%q, %heads)
  %k4 = Reshape(%k, %heads)
  %v4 = Reshape(%v, %heads)
  %qh = Transpose(%q4) {{perm = [0, 2, 1, 3]}}
  %kh = Transpose(%k4) {{perm = [0, 2, 1, 3]}}
  %vh = Transpose(%v4) {{perm = [0, 2, 1, 3]}}
  %o = tessel.Attention(%qh, %kh, %vh) {{causal = 1}}
  %ot = Transpose(%o) {{perm = [0, 2, 1, 3]}}
  %om = Reshape(%ot, %merged)
  %y = MatMul(%om, %wo)
  return %y
}}
}})",
                                     denseText({512, 1536}, 41, 0.05f), denseText({1536}, 42),
                                     denseText({512, 512}, 43, 0.05f));
  expectMatchesOnCores(ir, {2, 4, 8}, [](int) { return 1; });
}

TEST(TransformerLowering, AutoCastNoneIsFp32) {
  const std::string ir = fmt::format(R"(model opset(ai.onnx=17, tessel=1) ir_version=8 {{
func @main(%x: f32[8,200]) -> (%y: f32[8,130]) {{
  const %w = {}
  %y = MatMul(%x, %w)
  return %y
}}
}})",
                                     denseText({200, 130}, 10));
  NcCompileOptions options;
  options.lowering.autoCast = AutoCast::None;
  auto check = checkModelOnNc(ir, options, 1e-4, 1e-4);
  ASSERT_TRUE(check.ok()) << check.diag().str();
  EXPECT_LE(check->maxErrorRatio, 1.0) << check->worst;
}

}  // namespace
}  // namespace tessel::nc::compiler
