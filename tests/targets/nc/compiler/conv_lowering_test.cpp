// Convolutions and pools on the accelerator, whole small models checked against the reference: the
// dense implicit GEMM (3x3 with pads, 1x1, strides, several channel tiles, several PSUM chunks per
// image, several images per chunk), FusedConv epilogues (bias, residual, Relu, Clip, HardSwish,
// HardSigmoid), the folded stem (top and bottom edge rows), depthwise stencils, MaxPool, AveragePool,
// GlobalAveragePool, the host fallback of a grouped convolution, depthwise column taps folded onto
// input replicas, few channels computed on row bands, and convolution outputs stored in the PE dtype
// when every reader rounds them to it.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "ir/parser.h"
#include "targets/ref/interpreter.h"
#include "targets/nc/compiler/cast_reference.h"
#include "targets/nc/compiler/nc_model_check.h"
#include "targets/nc/isa/disassembler.h"

namespace tessel::nc::compiler {
namespace {

std::string sizesText(const std::vector<int64_t> &sizes) { return fmt::format("[{}]", fmt::join(sizes, ",")); }

/// One convolution node: X [N, C, H, W], W [M, C / group, KH, KW], and its attributes.
struct ConvCase {
  std::vector<int64_t> x, w;
  int64_t stride = 1, pad = 0, group = 1;
  bool bias = true;
  bool residual = false;       // FusedConv's Z, a graph input of Y's shape.
  std::string activation;      // FusedConv's activation attributes, e.g. `activation = "Relu"`.
  bool fused = false;          // tessel.FusedConv rather than Conv.

  std::vector<int64_t> y() const {
    auto out = [&](int64_t in, int64_t k) { return (in + 2 * pad - k) / stride + 1; };
    return {x[0], w[0], out(x[2], w[2]), out(x[3], w[3])};
  }
};

std::string convModel(const ConvCase &c) {
  std::string inputs = fmt::format("%x: f32{}", sizesText(c.x));
  if (c.residual) inputs += fmt::format(", %z: f32{}", sizesText(c.y()));
  // Weights scaled by 1/sqrt(fan-in) keep outputs near [-1, 1], where the bf16 operands' rounding
  // stays inside the tolerance.
  const float scale = 1.0f / std::sqrt(static_cast<float>(c.w[1] * c.w[2] * c.w[3]));
  std::string body = fmt::format("  const %w = {}\n", denseText(c.w, 11, scale));
  std::string args = "%x, %w";
  if (c.bias) {
    body += fmt::format("  const %b = {}\n", denseText({c.w[0]}, 12, 0.5f));
    args += ", %b";
  } else if (c.residual) {
    args += ", _";
  }
  if (c.residual) args += ", %z";
  std::string attributes = fmt::format("strides = [{0}, {0}], pads = [{1}, {1}, {1}, {1}]", c.stride, c.pad);
  if (c.group != 1) attributes += fmt::format(", group = {}", c.group);
  if (!c.activation.empty()) attributes += ", " + c.activation;
  return fmt::format(
      "model opset(ai.onnx=17, tessel=1) ir_version=8 {{\n"
      "func @main({}) -> (%y: f32{}) {{\n{}  %y = {}({}) {{{}}}\n  return %y\n}}\n}}\n",
      inputs, sizesText(c.y()), body, c.fused || c.residual || !c.activation.empty() ? "tessel.FusedConv" : "Conv",
      args, attributes);
}

/// Checks `ir` on nc-v2 (and nc-v3 when asked); every node on the device unless `hostNodes` says.
void expectMatches(const std::string &ir, int hostNodes = 0, bool alsoV3 = false) {
  SCOPED_TRACE(ir.substr(0, 300));
  std::vector<std::string> targets = {"nc-v2"};
  if (alsoV3) targets.push_back("nc-v3");
  for (const std::string &target : targets) {
    NcCompileOptions options;
    options.target = target;
    auto check = checkModelOnNc(ir, options);
    ASSERT_TRUE(check.ok()) << target << ": " << check.diag().str();
    EXPECT_LE(check->maxErrorRatio, 1.0) << target << ": " << check->worst;
    EXPECT_EQ(check->hostNodes, hostNodes) << target;
    EXPECT_GT(check->simulatedUs, 0.0) << target;
  }
}

ConvCase conv(std::vector<int64_t> x, std::vector<int64_t> w, int64_t stride, int64_t pad) {
  ConvCase c;
  c.x = std::move(x);
  c.w = std::move(w);
  c.stride = stride;
  c.pad = pad;
  return c;
}

TEST(ConvLowering, Dense3x3Stride1Pad1) { expectMatches(convModel(conv({1, 16, 12, 12}, {32, 16, 3, 3}, 1, 1)), 0, true); }

TEST(ConvLowering, OneByOneSeveralImagesPerChunk) {
  ConvCase c = conv({3, 24, 7, 9}, {40, 24, 1, 1}, 1, 0);
  c.bias = false;
  expectMatches(convModel(c));
}

TEST(ConvLowering, Stride2) {
  expectMatches(convModel(conv({1, 32, 15, 15}, {48, 32, 3, 3}, 2, 1)));
  expectMatches(convModel(conv({1, 32, 14, 14}, {64, 32, 1, 1}, 2, 0)));  // ResNet's downsample shortcut.
}

TEST(ConvLowering, FusedResidualRelu) {
  ConvCase c = conv({2, 32, 10, 10}, {32, 32, 3, 3}, 1, 1);
  c.residual = true;
  c.activation = R"(activation = "Relu")";
  expectMatches(convModel(c));
  c.bias = false;  // Residual without a bias: an omitted optional input.
  expectMatches(convModel(c));
}

TEST(ConvLowering, SeveralChannelTiles) {
  // Cin 160 and Cout 200: two contraction tiles and two output tiles, the last of each ragged.
  ConvCase c = conv({1, 160, 8, 8}, {200, 160, 3, 3}, 1, 1);
  c.activation = R"(activation = "Relu")";
  expectMatches(convModel(c));
}

TEST(ConvLowering, SpatialChunks) {
  // 32x32 outputs: 1024 positions, two PSUM banks per image; the padded copy in several bands.
  expectMatches(convModel(conv({1, 8, 32, 32}, {16, 8, 3, 3}, 1, 1)));
}

TEST(ConvLowering, FoldedStem) {
  // ResNet's stem shape, smaller: 3 channels, 7x7 stride 2 pad 3. Rows 0 and 1 miss leading tap
  // rows (the reversed tile), the last row trailing ones.
  ConvCase c = conv({1, 3, 32, 32}, {16, 3, 7, 7}, 2, 3);
  c.activation = R"(activation = "Relu")";
  expectMatches(convModel(c), 0, true);
  // Two images and several row bands of 64-wide rows.
  expectMatches(convModel(conv({2, 3, 64, 64}, {24, 3, 7, 7}, 2, 3)));
  // MobileNetV2's stem: 3x3 stride 2 pad 1.
  expectMatches(convModel(conv({1, 3, 32, 32}, {32, 3, 3, 3}, 2, 1)));
}

TEST(ConvLowering, DepthwiseClip) {
  for (int64_t stride : {1, 2}) {
    ConvCase c = conv({1, 32, 14, 14}, {32, 1, 3, 3}, stride, 1);
    c.group = 32;
    c.activation = R"(activation = "Clip", activation_params = [0.0, 6.0])";
    expectMatches(convModel(c), 0, stride == 1);
  }
  // 144 channels (two partition blocks), 48x48 images: more than one stencil chunk per image.
  ConvCase c = conv({1, 144, 48, 48}, {144, 1, 3, 3}, 1, 1);
  c.group = 144;
  c.fused = true;
  expectMatches(convModel(c));
  // 2x2 with pad 1: no tap's window is inside X for every output, so the sum starts from zeros.
  ConvCase even = conv({1, 8, 7, 7}, {8, 1, 2, 2}, 1, 1);
  even.group = 8;
  expectMatches(convModel(even));
}

/// The matmuls of core 0's program for `ir` compiled for nc-v2.
int matmulCount(const std::string &ir) {
  auto model = parseModel(ir, "<conv>");
  if (!model.ok()) return -1;
  auto exe = compileNc(std::move(*model), NcCompileOptions{});
  if (!exe.ok()) return -1;
  int matmuls = 0;
  for (const Instruction &insn : (*exe)->programs().at(0).program)
    if (formatInstruction(insn).rfind("nc_matmul", 0) == 0) ++matmuls;
  return matmuls;
}

// Blocks of at most 64 channels stack replicas of the padded input, each shifted by one column tap,
// so one matmul sums a row's three taps: 3 matmuls per output chunk instead of 9. 32 channels fill
// three quadrants; 16 channels leave zero rows between their replicas.
TEST(ConvLowering, DepthwiseFoldsColumnTapsOntoReplicas) {
  ConvCase quadrants = conv({1, 32, 56, 56}, {32, 1, 3, 3}, 1, 1);  // 7 chunks of 8 rows.
  quadrants.group = 32;
  quadrants.activation = R"(activation = "Clip", activation_params = [0.0, 6.0])";
  EXPECT_EQ(matmulCount(convModel(quadrants)), 7 * 3);
  expectMatches(convModel(quadrants), 0, true);
  ConvCase gaps = conv({1, 16, 40, 40}, {16, 1, 3, 3}, 1, 1);  // 4 chunks of up to 12 rows.
  gaps.group = 16;
  EXPECT_EQ(matmulCount(convModel(gaps)), 4 * 3);
  expectMatches(convModel(gaps));
}

TEST(ConvLowering, HardSwishAndHardSigmoidEpilogues) {
  // MobileNetV3 and PP-OCR's blocks: HardSwish after a dense conv, HardSigmoid after a depthwise one.
  ConvCase dense = conv({1, 16, 12, 12}, {32, 16, 3, 3}, 1, 1);
  dense.activation = R"(activation = "HardSwish")";
  expectMatches(convModel(dense));
  ConvCase depthwise = conv({1, 32, 14, 14}, {32, 1, 3, 3}, 2, 1);
  depthwise.group = 32;
  depthwise.activation = R"(activation = "HardSigmoid", activation_params = [0.2, 0.5])";
  expectMatches(convModel(depthwise));
}

TEST(ConvLowering, GroupedConvRunsOnHost) {
  ConvCase c = conv({1, 16, 8, 8}, {16, 8, 3, 3}, 1, 1);
  c.group = 2;
  auto check = checkModelOnNc(convModel(c));
  ASSERT_TRUE(check.ok()) << check.diag().str();
  EXPECT_LE(check->maxErrorRatio, 1.0) << check->worst;
  EXPECT_GT(check->hostNodes, 0);
}

/// Two MobileNetV2 inverted-residual blocks, 16 channels expanded to 64 at 14x14: y1 is read by the
/// second block's expand convolution (a PE operand) and by its projection as the residual.
std::string invertedResidualBlocks() {
  std::string body;
  std::string in = "%x";
  for (int block = 1; block <= 2; ++block) {
    const uint64_t seed = 20 + 10 * block;
    body += fmt::format(
        "  const %we{0} = {1}\n  const %be{0} = {2}\n  const %wd{0} = {3}\n  const %bd{0} = {4}\n"
        "  const %wp{0} = {5}\n  const %bp{0} = {6}\n"
        "  %e{0} = tessel.FusedConv({7}, %we{0}, %be{0}) {{activation = \"Clip\", activation_params = [0.0, 6.0]}}\n"
        "  %d{0} = tessel.FusedConv(%e{0}, %wd{0}, %bd{0}) {{group = 64, pads = [1, 1, 1, 1], activation = \"Clip\", "
        "activation_params = [0.0, 6.0]}}\n"
        "  %y{0} = tessel.FusedConv(%d{0}, %wp{0}, %bp{0}, {7}) {{}}\n",
        block, denseText({64, 16, 1, 1}, seed, 0.25f), denseText({64}, seed + 1, 0.5f),
        denseText({64, 1, 3, 3}, seed + 2, 0.33f), denseText({64}, seed + 3, 0.5f),
        denseText({16, 64, 1, 1}, seed + 4, 0.125f), denseText({16}, seed + 5, 0.5f), in);
    in = fmt::format("%y{}", block);
  }
  return "model opset(ai.onnx=17, tessel=1) ir_version=8 {\nfunc @main(%x: f32[1,16,14,14]) -> (%y2: f32[1,16,14,14]) {\n" +
         body + "  return %y2\n}\n}\n";
}

// The expand, depthwise and projection outputs go straight from PSUM to SBUF in bf16, the expand's
// into the depthwise convolution's zero-padded input (row bands), y1 once for both its readers (the
// residual is rounded too), so the only f32 -> bf16 copy left is the cast of x. Rounding at the
// eviction makes the values the readers' casts would make: the device differs from the same-cast
// reference only where f32 accumulation order rounds a value the other way, by one bf16 step.
TEST(ConvLowering, StoresPeOperandsInThePeDtype) {
  auto model = parseModel(invertedResidualBlocks(), "<blocks>");
  ASSERT_TRUE(model.ok()) << model.diag().str();
  auto exe = compileNc(std::move(*model), NcCompileOptions{});
  ASSERT_TRUE(exe.ok()) << exe.diag().str();
  ASSERT_TRUE((*exe)->fallbacks().empty());
  int casts = 0, copies = 0;
  for (const Instruction &insn : (*exe)->programs().at(0).program) {
    const std::string text = formatInstruction(insn);
    if (text.rfind("tensor_copy", 0) != 0) continue;
    ++copies;
    if (text.find(":bf16 src=") != std::string::npos && text.find(":f32", text.find(" src=")) != std::string::npos) ++casts;
  }
  EXPECT_EQ(casts, 1);
  EXPECT_EQ(copies, 1);  // The depthwise convolutions compute on 2 row bands: no replicas to copy.

  std::mt19937 rng(5);
  std::uniform_real_distribution<float> u(-1, 1);
  Tensor x(tessel::DType::Float32, {1, 16, 14, 14});
  for (float &v : x.span<float>()) v = u(rng);
  auto device = (*exe)->run({{"x", RuntimeValue(x)}});
  ASSERT_TRUE(device.ok()) << device.diag().str();
  auto casted = castReference((*exe)->model(), [&](size_t i) { return (*exe)->nodeOnDevice(i); }, (*exe)->options().lowering);
  ASSERT_TRUE(casted.ok() && casted->model.has_value());
  auto same = ReferenceInterpreter(*casted->model).run({{"x", RuntimeValue(x)}});
  auto f32 = ReferenceInterpreter((*exe)->model()).run({{"x", RuntimeValue(x)}});
  ASSERT_TRUE(same.ok() && f32.ok());
  const Tensor &got = device->outputs[0].second.tensor();
  double toSame = 0, toF32 = 0, largest = 0;
  for (int64_t i = 0; i < got.numel(); ++i) {
    toSame = std::max(toSame, std::abs(got.scalarAsDouble(i) - (*same)[0].second.tensor().scalarAsDouble(i)));
    toF32 = std::max(toF32, std::abs(got.scalarAsDouble(i) - (*f32)[0].second.tensor().scalarAsDouble(i)));
    largest = std::max(largest, std::abs(got.scalarAsDouble(i)));
  }
  EXPECT_GT(toF32, 1e-3);
  EXPECT_LE(toSame, std::ldexp(1.0, std::ilogb(largest) - 7));  // One bf16 step at the largest output.
  EXPECT_LT(toSame, 0.2 * toF32);
}

// A 1x1 convolution whose only reader is a padded dense 3x3 one evicts into that reader's padded input:
// the one copy left is x's cast.
TEST(ConvLowering, EvictsIntoTheReadersPaddedInput) {
  const std::string ir = fmt::format(
      "model opset(ai.onnx=17, tessel=1) ir_version=8 {{\nfunc @main(%x: f32[1,16,20,20]) -> (%y: f32[1,24,20,20]) {{\n"
      "  const %w1 = {}\n  const %w2 = {}\n"
      "  %h = tessel.FusedConv(%x, %w1) {{activation = \"Relu\"}}\n"
      "  %y = Conv(%h, %w2) {{pads = [1, 1, 1, 1]}}\n  return %y\n}}\n}}\n",
      denseText({32, 16, 1, 1}, 41, 0.25f), denseText({24, 32, 3, 3}, 42, 0.06f));
  auto model = parseModel(ir, "<chain>");
  ASSERT_TRUE(model.ok()) << model.diag().str();
  auto exe = compileNc(std::move(*model), NcCompileOptions{});
  ASSERT_TRUE(exe.ok()) << exe.diag().str();
  int copies = 0;
  for (const Instruction &insn : (*exe)->programs().at(0).program)
    if (formatInstruction(insn).rfind("tensor_copy", 0) == 0 && formatInstruction(insn).find("src=sbuf") != std::string::npos)
      ++copies;  // A pass over an activation (evictions read PSUM).
  EXPECT_EQ(copies, 1);
  expectMatches(ir, 0, true);
}

/// MobileNetV2's first layers in small: a folded stem (3x3 stride 2) of `channels` outputs over an
/// `image` x `image` input, a depthwise 3x3 (stride `stride`), a 1x1 projection to 16 channels and a
/// 1x1 expansion to 48.
std::string bandedChain(int64_t channels, int64_t stride, int64_t image = 64) {
  const int64_t side = ((image - 1) / 2 + 1) / stride;
  return fmt::format(
      "model opset(ai.onnx=17, tessel=1) ir_version=8 {{\nfunc @main(%x: f32[1,3,{10},{10}]) -> (%y: f32[1,48,{0},{0}]) {{\n"
      "  const %ws = {1}\n  const %bs = {2}\n  const %wd = {3}\n  const %bd = {4}\n  const %wp = {5}\n"
      "  const %bp = {6}\n  const %we = {7}\n"
      "  %s = tessel.FusedConv(%x, %ws, %bs) {{strides = [2, 2], pads = [1, 1, 1, 1], activation = \"Clip\", "
      "activation_params = [0.0, 6.0]}}\n"
      "  %d = tessel.FusedConv(%s, %wd, %bd) {{group = {8}, strides = [{9}, {9}], pads = [1, 1, 1, 1], "
      "activation = \"Clip\", activation_params = [0.0, 6.0]}}\n"
      "  %p = Conv(%d, %wp, %bp)\n"
      "  %y = tessel.FusedConv(%p, %we) {{activation = \"Relu\"}}\n  return %y\n}}\n}}\n",
      side, denseText({channels, 3, 3, 3}, 51, 0.2f), denseText({channels}, 52, 0.5f),
      denseText({channels, 1, 3, 3}, 53, 0.33f), denseText({channels}, 54, 0.5f),
      denseText({16, channels, 1, 1}, 55, 0.2f), denseText({16}, 56, 0.5f), denseText({48, 16, 1, 1}, 57, 0.25f),
      channels, stride, image);
}

/// Matmuls of core 0's nc-v2 program whose stationary spans all 128 partitions.
int fullArrayMatmuls(const std::string &ir) {
  auto model = parseModel(ir, "<bands>");
  if (!model.ok()) return -1;
  auto exe = compileNc(std::move(*model), NcCompileOptions{});
  if (!exe.ok()) return -1;
  int matmuls = 0;
  for (const Instruction &insn : (*exe)->programs().at(0).program) {
    const std::string text = formatInstruction(insn);
    if (text.rfind("nc_matmul", 0) == 0 && text.find("stationary=sbuf[p0:128,") != std::string::npos) ++matmuls;
  }
  return matmuls;
}

// Few channels at a large image go on the partitions as row bands: the stem computes all 4 bands at
// once (each band's rows, halos included, from its own folded rows; the first band's in reversed kh
// order for the top edge), the depthwise convolution takes one matmul per tap
// over all bands, the projection stays banded (one block-diagonal matmul per chunk) and the
// expansion, whose 48 outputs do not fit a band, takes one matmul per band. With 64 channels there
// are 2 bands; a stride-2 depthwise convolution reads 2 input rows per output row.
TEST(ConvLowering, FewChannelsComputeOnRowBands) {
  // 32 channels, 32x32: 8 rows per band, one chunk; 9 tap matmuls, 1 projection, 4 expansions.
  EXPECT_EQ(fullArrayMatmuls(bandedChain(32, 1)), 9 + 1 + 4);
  expectMatches(bandedChain(32, 1), 0, true);
  // 64 channels: 2 bands of 16 rows, one chunk each.
  EXPECT_EQ(fullArrayMatmuls(bandedChain(64, 1)), 9 + 1 + 2);
  expectMatches(bandedChain(64, 1), 0, true);
  // 16 channels at stride 2 (gaps between the bands' channels): 16x16 outputs, 4 rows per band.
  EXPECT_EQ(fullArrayMatmuls(bandedChain(16, 2)), 9 + 1 + 4);
  expectMatches(bandedChain(16, 2), 0, true);
  // A 63x63 image: the stem's last row misses its last tap row (the last band's bottom edge).
  expectMatches(bandedChain(32, 1, 63), 0, true);
}

std::string poolModel(const std::vector<int64_t> &x, const std::vector<int64_t> &y, const std::string &op) {
  return fmt::format(
      "model opset(ai.onnx=17, tessel=1) ir_version=8 {{\n"
      "func @main(%x: f32{}) -> (%y: f32{}) {{\n  %y = {}\n  return %y\n}}\n}}\n",
      sizesText(x), sizesText(y), op);
}

TEST(PoolLowering, MaxPool3x3Stride2Pad1) {
  // 15x15 -> 8x8: edge outputs have windows cut by the padding on every side.
  expectMatches(
      poolModel({1, 16, 15, 15}, {1, 16, 8, 8}, "MaxPool(%x) {kernel_shape = [3, 3], strides = [2, 2], pads = [1, 1, 1, 1]}"),
      0, true);
  // ResNet's, with 136 channels (two blocks) and two images.
  expectMatches(
      poolModel({2, 136, 24, 24}, {2, 136, 12, 12}, "MaxPool(%x) {kernel_shape = [3, 3], strides = [2, 2], pads = [1, 1, 1, 1]}"));
}

TEST(PoolLowering, MaxPoolWithoutAnInsideTap) {
  // 2x2 with pad 1: every tap misses an edge, so the max starts from -inf.
  expectMatches(poolModel({1, 8, 5, 5}, {1, 8, 6, 6}, "MaxPool(%x) {kernel_shape = [2, 2], pads = [1, 1, 1, 1]}"));
}

TEST(PoolLowering, AveragePoolPadding) {
  for (int countIncludePad : {0, 1})
    expectMatches(poolModel({1, 8, 9, 9}, {1, 8, 9, 9},
                            fmt::format("AveragePool(%x) {{kernel_shape = [3, 3], pads = [1, 1, 1, 1], "
                                        "count_include_pad = {}}}",
                                        countIncludePad)));
  expectMatches(poolModel({2, 8, 8, 8}, {2, 8, 4, 4}, "AveragePool(%x) {kernel_shape = [2, 2], strides = [2, 2]}"));
}

TEST(PoolLowering, GlobalAveragePool) {
  expectMatches(poolModel({2, 160, 7, 7}, {2, 160, 1, 1}, "GlobalAveragePool(%x)"), 0, true);
}

TEST(PoolLowering, CeilModeMaxPool) {
  // ceil_mode keeps the last window that runs past the end: 9x11 -> 5x6 (isnet's 2x2 stride-2 pools
  // at odd sizes), and 8x8 -> 4x4 at 3x3 stride 2; with a pad, 7x7 -> 4x4.
  expectMatches(poolModel({1, 8, 9, 11}, {1, 8, 5, 6}, "MaxPool(%x) {kernel_shape = [2, 2], strides = [2, 2], ceil_mode = 1}"));
  expectMatches(poolModel({1, 8, 8, 8}, {1, 8, 4, 4}, "MaxPool(%x) {kernel_shape = [3, 3], strides = [2, 2], ceil_mode = 1}"));
  expectMatches(poolModel({1, 8, 7, 7}, {1, 8, 4, 4},
                          "MaxPool(%x) {kernel_shape = [3, 3], strides = [2, 2], pads = [1, 1, 1, 1], ceil_mode = 1}"));
}

TEST(PoolLowering, CeilModeAveragePoolRunsOnTheHost) {
  // Its divisor would count the extra padding differently; the host runs it, with the reason.
  auto check = checkModelOnNc(
      poolModel({1, 8, 8, 8}, {1, 8, 4, 4}, "AveragePool(%x) {kernel_shape = [3, 3], strides = [2, 2], ceil_mode = 1}"));
  ASSERT_TRUE(check.ok()) << check.diag().str();
  EXPECT_LE(check->maxErrorRatio, 1.0) << check->worst;
  EXPECT_GT(check->hostNodes, 0);
}

}  // namespace
}  // namespace tessel::nc::compiler
