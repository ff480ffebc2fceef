// The dynamic-quantization ops on the cpu target against the reference interpreter, bit for bit:
// DynamicQuantizeLinear (odd sizes, several range parts, a non-negative and an all-zero input),
// ConvInteger (zero points absent, scalar, per channel and fed; u8 and s8; pads, strides,
// dilations, groups, depthwise, 1-D; 1x1 and KxK on the int8 GEMM with batches, threads and
// several pixel chunks, K past its int32 bound; weights large enough that the f32 sums must be
// split, and so large that no split is exact and the reference kernel keeps the node), and MatMulInteger (u8
// and s8 on either side; a_zero_point absent, constant, fed, one per row; b_zero_point absent,
// scalar, per column; A of rank 1 to 3; tiles, K blocks and threads of the int8 GEMM; split sums
// and the reference fallback), each on the kernels the test names. MatMulInteger runs on the int8
// GEMM where the host has one (AVX512_VNNI) and on the f32 GEMM otherwise, and so does group-1
// ConvInteger: run this binary with
// TESSEL_CPU_ISA=avx512_bf16 to test the f32 path on such a host.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "../cpu_test_util.h"
#include "targets/cpu/kernels/gemm_s8.h"

namespace tessel::cpu {
namespace {

using testing::CpuCheck;
using testing::expectCpuMatchesReference;

std::string sizesText(const std::vector<int64_t> &sizes) { return fmt::format("[{}]", fmt::join(sizes, ",")); }

/// A text-IR u8 or i8 constant of `sizes` with values from a fixed sequence, uniform over [lo, hi].
std::string quantizedConstant(const std::string &name, const char *dtype, const std::vector<int64_t> &sizes,
                              uint32_t seed, int lo, int hi) {
  int64_t count = 1;
  for (int64_t s : sizes) count *= s;
  uint32_t state = seed * 2654435761u + 1;
  std::vector<int> values;
  for (int64_t i = 0; i < count; ++i) {
    state = state * 1664525u + 1013904223u;
    values.push_back(lo + int((state >> 8) % uint32_t(hi - lo + 1)));
  }
  return fmt::format("  const %{} = dense<{}{}: {}>\n", name, dtype, sizesText(sizes), fmt::join(values, ", "));
}

std::string model(const std::string &inputs, const std::string &outputs, const std::string &body) {
  return fmt::format("model opset(ai.onnx=13) ir_version=8 {{\nfunc @main({}) -> ({}) {{\n{}}}\n}}\n", inputs,
                     outputs, body);
}

/// Compiles `ir` for the cpu target, checks it against the reference interpreter bit for bit
/// (`fallback`: one node may run its reference kernel) and returns the kernels its steps ran.
std::vector<std::string> checkExact(const std::string &ir, bool fallback = false, int threads = 2) {
  SCOPED_TRACE(ir.substr(0, 600));
  CpuCheck check;
  check.threads = threads;
  check.rtol = 0.0;
  check.atol = 0.0;
  check.requireNoFallback = !fallback;
  expectCpuMatchesReference(ir, check);

  auto parsed = parseModel(ir, "test.tsl.txt");
  EXPECT_TRUE(parsed.ok());
  if (!parsed.ok()) return {};
  auto executable = compileCpu(std::move(*parsed), {0, threads});
  EXPECT_TRUE(executable.ok()) << executable.diag().str();
  if (!executable.ok()) return {};
  EXPECT_EQ((*executable)->summary().fallbackSteps, fallback ? 1 : 0);
  (*executable)->setProfiling(true);
  auto feeds = testing::randomFeeds((*executable)->model(), 1);
  EXPECT_TRUE((*executable)->run(feeds).ok());
  std::vector<std::string> kernels;
  for (const StepProfile &step : (*executable)->profile()) kernels.push_back(step.opType + " " + step.kernel);
  return kernels;
}

/// Whether MatMulInteger runs on the int8 GEMM on this host.
bool int8Gemm() { return selectedS8GemmKernel() != nullptr; }

/// The kernel name a MatMulInteger without split sums runs.
std::string matMulIntegerKernel() { return int8Gemm() ? "matmul_integer u8s8_gemm" : "matmul_integer_as_f32 f32_gemm"; }

/// The kernel name a group-1 ConvInteger runs (on f32, with or without split sums); `direct`: a
/// 1x1 stride-1 conv.
std::string convIntegerKernel(bool direct = false) {
  if (!int8Gemm()) return "conv_integer_as_f32";
  return direct ? "conv_integer u8s8_gemm_6x64__avx512_vnni 1x1" : "conv_integer u8s8_gemm_6x64__avx512_vnni patches";
}

bool ran(const std::vector<std::string> &kernels, const std::string &text) {
  for (const std::string &k : kernels) {
    if (k.find(text) != std::string::npos) return true;
  }
  return false;
}

TEST(CpuDynamicQuantizeLinear, MatchesReferenceBitForBit) {
  for (const std::vector<int64_t> &sizes : std::vector<std::vector<int64_t>>{{1}, {3, 7, 11}, {2, 64, 33, 35}}) {
    const std::string ir = model(fmt::format("%x: f32{}", sizesText(sizes)),
                                 fmt::format("%y: u8{}, %s: f32[], %z: u8[]", sizesText(sizes)),
                                 "  %y, %s, %z = DynamicQuantizeLinear(%x)\n  return %y, %s, %z\n");
    for (int threads : {1, 2}) EXPECT_TRUE(ran(checkExact(ir, false, threads), "dynamic_quantize_u8"));
  }
}

TEST(CpuDynamicQuantizeLinear, NonNegativeAndZeroInputs) {
  // After a Relu the range starts at 0 (zero point 0); times 0 every element is 0 (scale 0).
  const std::string ir = model("%x: f32[5,300]", "%y: u8[5,300], %s: f32[], %z: u8[], %y0: u8[5,300], %s0: f32[]",
                               "  const %zero = dense<f32[]: 0>\n"
                               "  %r = Relu(%x)\n"
                               "  %y, %s, %z = DynamicQuantizeLinear(%r)\n"
                               "  %m = Mul(%x, %zero)\n"
                               "  %y0, %s0, %z0 = DynamicQuantizeLinear(%m)\n"
                               "  return %y, %s, %z, %y0, %s0\n");
  checkExact(ir);
}

struct ConvIntegerCase {
  std::vector<int64_t> x, w;     // [N, C, spatial...], [M, C/group, k...]
  std::string attributes;        // ConvInteger's, without braces.
  std::string xType = "u8", wType = "u8";
  std::string xZero = "fed";     // "fed" (from DynamicQuantizeLinear), "none", or a constant value.
  std::string wZero = "scalar";  // "none", "scalar" or "per_channel".
  int wLo = 0, wHi = 255;        // The weights' range.
};

std::string convIntegerModel(const ConvIntegerCase &c) {
  const bool dynamic = c.xZero == "fed";
  std::string body = quantizedConstant("w", c.wType.c_str(), c.w, uint32_t(c.w[0] * 7 + c.w[1]), c.wLo, c.wHi);
  const int wMid = (c.wLo + c.wHi) / 2;
  if (c.wZero == "scalar") body += fmt::format("  const %wz = dense<{}[]: {}>\n", c.wType, wMid);
  if (c.wZero == "per_channel") {
    body += quantizedConstant("wz", c.wType.c_str(), {c.w[0]}, 3, std::max(c.wLo, wMid - 20),
                              std::min(c.wHi, wMid + 20));
  }
  std::string inputs;
  std::string x = "%x";
  if (dynamic) {
    inputs = fmt::format("%xf: f32{}", sizesText(c.x));
    body += "  %x, %xs, %xz = DynamicQuantizeLinear(%xf)\n";
  } else {
    inputs = fmt::format("%x: {}{}", c.xType, sizesText(c.x));
    if (c.xZero != "none") body += fmt::format("  const %xz = dense<{}[]: {}>\n", c.xType, c.xZero);
  }
  std::string args = "%x, %w";
  const bool hasXZero = c.xZero != "none";
  if (hasXZero || c.wZero != "none") args += hasXZero ? ", %xz" : ", _";
  if (c.wZero != "none") args += ", %wz";
  body += fmt::format("  %y = ConvInteger({}) {{{}}}\n  return %y\n", args, c.attributes);
  return model(inputs, "%y: ?", body);
}

std::vector<std::string> checkConvInteger(const ConvIntegerCase &c, bool fallback = false, int threads = 2) {
  return checkExact(convIntegerModel(c), fallback, threads);
}

TEST(CpuConvInteger, ZeroPointsAndTypes) {
  ConvIntegerCase c{{1, 5, 9, 7}, {6, 5, 3, 3}, "pads = [1, 1, 1, 1]"};
  EXPECT_TRUE(ran(checkConvInteger(c), int8Gemm() ? convIntegerKernel() : "conv_integer_as_f32 conv2d_im2col_gemm"));
  c.wZero = "per_channel";
  checkConvInteger(c);
  c.wZero = "none";
  c.wLo = 0, c.wHi = 40;
  checkConvInteger(c);
  c.xZero = "none";
  checkConvInteger(c);
  c.xZero = "131";
  c.wZero = "scalar";
  checkConvInteger(c);
  // s8 activations and weights, zero points of their own type.
  c.xType = "i8", c.wType = "i8", c.xZero = "-3", c.wLo = -128, c.wHi = 127, c.wZero = "per_channel";
  checkConvInteger(c);
  c.xType = "u8", c.xZero = "7";
  checkConvInteger(c);
}

TEST(CpuConvInteger, Geometry) {
  checkConvInteger({{2, 8, 11, 13}, {16, 8, 3, 3}, "pads = [1, 1, 1, 1], strides = [2, 2]"});
  checkConvInteger({{1, 16, 7, 9}, {24, 16, 1, 1}, ""});
  checkConvInteger({{1, 6, 12, 10}, {4, 6, 3, 3}, "dilations = [2, 2], pads = [2, 1, 0, 2]"});
  checkConvInteger({{1, 8, 9, 9}, {12, 4, 3, 3}, "group = 2, pads = [1, 1, 1, 1]"});
  checkConvInteger({{1, 6, 10, 8}, {6, 3, 1, 3}, "auto_pad = \"SAME_UPPER\", group = 2"});
  checkConvInteger({{2, 5, 17}, {7, 5, 4}, "pads = [1, 2], strides = [3]"});
  EXPECT_TRUE(ran(checkConvInteger({{1, 8, 10, 11}, {8, 1, 3, 3}, "group = 8, pads = [1, 1, 1, 1]"}),
                  "conv_integer_as_f32 f32_depthwise_conv2d"));
}

TEST(CpuConvInteger, Int8GemmGeometry) {
  // The transposed product: 1x1 with stride 1 (pads too) reads the channels-last copy as A; other
  // windows gather patches. u8/s8 activations, scalar and per-channel weight zero points, batches,
  // odd sizes, 1 and 3 threads.
  ConvIntegerCase c{{2, 19, 7, 9}, {37, 19, 1, 1}, ""};
  for (int threads : {1, 3}) EXPECT_TRUE(ran(checkConvInteger(c, false, threads), convIntegerKernel(true)));
  c.attributes = "pads = [1, 0, 2, 1]", c.wZero = "per_channel";
  EXPECT_TRUE(ran(checkConvInteger(c), convIntegerKernel(true)));
  c.attributes = "strides = [2, 3]", c.xType = "i8", c.xZero = "-5", c.wType = "i8", c.wLo = -128, c.wHi = 127;
  EXPECT_TRUE(ran(checkConvInteger(c), convIntegerKernel()));
  c = ConvIntegerCase{{3, 7, 13, 11}, {70, 7, 3, 3}, "pads = [1, 2, 0, 1], strides = [2, 1]"};
  for (int threads : {1, 3}) EXPECT_TRUE(ran(checkConvInteger(c, false, threads), convIntegerKernel()));
  c.attributes = "dilations = [2, 3], pads = [2, 2, 2, 2]", c.xType = "i8", c.xZero = "11", c.wZero = "per_channel";
  EXPECT_TRUE(ran(checkConvInteger(c), convIntegerKernel()));
  c = ConvIntegerCase{{1, 5, 9, 7}, {6, 5, 5, 3}, "pads = [2, 1, 2, 1]", "u8", "i8", "200", "none", -128, 127};
  EXPECT_TRUE(ran(checkConvInteger(c), convIntegerKernel()));
  // K = 2304 and 420 pixels: past one chunk of pixel rows.
  c = ConvIntegerCase{{1, 256, 20, 21}, {5, 256, 3, 3}, "pads = [1, 1, 1, 1]", "u8", "u8", "fed", "per_channel"};
  for (int threads : {1, 3}) EXPECT_TRUE(ran(checkConvInteger(c, false, threads), convIntegerKernel()));
}

TEST(CpuConvInteger, SumsThatNeedASplit) {
  // 128 x 3 x 3 full-range u8 weights centred on 127: each output's sum of |w'| is about 74000,
  // times 255 past 2^24, so on the f32 kernels the weights run as high * 2^s + low; the int8 GEMM
  // sums in int32 and needs no split.
  const std::string splitKernel = int8Gemm() ? convIntegerKernel() : "conv_integer_as_f32_split";
  ConvIntegerCase c{{1, 128, 6, 5}, {9, 128, 3, 3}, "pads = [1, 1, 1, 1]"};
  EXPECT_TRUE(ran(checkConvInteger(c), splitKernel));
  c.wZero = "per_channel";
  EXPECT_TRUE(ran(checkConvInteger(c), splitKernel));
  // Narrow weights keep the whole operand.
  c.wLo = 120, c.wHi = 134, c.wZero = "scalar";
  EXPECT_FALSE(ran(checkConvInteger(c), "_split"));
  // Grouped convolutions stay on the f32 kernels, split where they need it.
  c = ConvIntegerCase{{1, 256, 6, 5}, {8, 128, 3, 3}, "group = 2, pads = [1, 1, 1, 1]"};
  EXPECT_TRUE(ran(checkConvInteger(c), "conv_integer_as_f32_split"));
}

TEST(CpuConvInteger, NoExactSplitKeepsTheReference) {
  // 2304 x 3 x 3 full-range weights per output: no f32 split keeps both parts' sums below 2^24, so
  // the reference kernel keeps the node; the int8 GEMM's int32 sums are exact.
  const ConvIntegerCase c{{1, 2304, 3, 3}, {1, 2304, 3, 3}, ""};
  EXPECT_TRUE(ran(checkConvInteger(c, /*fallback=*/!int8Gemm()),
                  int8Gemm() ? convIntegerKernel() : "ConvInteger reference"));
}

TEST(CpuConvInteger, KPastTheInt32BoundLeavesTheInt8Gemm) {
  // K = 3700 x 3 x 3 = 33300, past the int8 GEMM's bound: narrow weights run exactly on f32.
  const ConvIntegerCase c{{1, 3700, 3, 3}, {2, 3700, 3, 3}, "", "u8", "u8", "fed", "scalar", 125, 129};
  EXPECT_TRUE(ran(checkConvInteger(c), "conv_integer_as_f32 conv2d_"));
}

struct MatMulIntegerCase {
  std::vector<int64_t> a;  // [..., M, K]; B is [K, n].
  int64_t n = 0;
  std::string aType = "u8", bType = "u8";
  // "fed" (from DynamicQuantizeLinear, u8 A only), "input" (a model input), "none", a constant
  // value, "per_row" (constant, one per row) or "per_row_input".
  std::string aZero = "fed";
  std::string bZero = "scalar";  // "none", "scalar" or "per_column".
  int bLo = 0, bHi = 255;        // The weights' range.
};

std::string matMulIntegerModel(const MatMulIntegerCase &c) {
  const int64_t k = c.a.back(), rows = c.a.size() >= 2 ? c.a[c.a.size() - 2] : 1;
  std::string body = quantizedConstant("b", c.bType.c_str(), {k, c.n}, uint32_t(k * 5 + c.n), c.bLo, c.bHi);
  const int bMid = (c.bLo + c.bHi) / 2;
  if (c.bZero == "scalar") body += fmt::format("  const %bz = dense<{}[]: {}>\n", c.bType, bMid);
  if (c.bZero == "per_column") {
    body += quantizedConstant("bz", c.bType.c_str(), {c.n}, 5, std::max(c.bLo, bMid - 30), std::min(c.bHi, bMid + 30));
  }
  std::string inputs;
  if (c.aZero == "fed") {
    inputs = fmt::format("%af: f32{}", sizesText(c.a));
    body += "  %a, %as, %az = DynamicQuantizeLinear(%af)\n";
  } else {
    inputs = fmt::format("%a: {}{}", c.aType, sizesText(c.a));
    const int lo = c.aType == "i8" ? -128 : 0, hi = c.aType == "i8" ? 127 : 255;
    if (c.aZero == "input") inputs += fmt::format(", %az: {}[]", c.aType);
    if (c.aZero == "per_row_input") inputs += fmt::format(", %az: {}[{}]", c.aType, rows);
    if (c.aZero == "per_row") body += quantizedConstant("az", c.aType.c_str(), {rows}, 11, lo, hi);
    if (c.aZero != "none" && c.aZero != "input" && c.aZero.find("per_row") == std::string::npos) {
      body += fmt::format("  const %az = dense<{}[]: {}>\n", c.aType, c.aZero);
    }
  }
  std::string args = "%a, %b";
  const bool hasAZero = c.aZero != "none";
  if (hasAZero || c.bZero != "none") args += hasAZero ? ", %az" : ", _";
  if (c.bZero != "none") args += ", %bz";
  body += fmt::format("  %y = MatMulInteger({})\n  return %y\n", args);
  return model(inputs, "%y: ?", body);
}

std::vector<std::string> checkMatMulInteger(const MatMulIntegerCase &c, bool fallback = false, int threads = 2) {
  return checkExact(matMulIntegerModel(c), fallback, threads);
}

TEST(CpuMatMulInteger, DynamicQuantizePattern) {
  // What quantize_dynamic writes: A quantized per tensor at run time, u8 or s8 weights.
  MatMulIntegerCase c{{2, 5, 37}, 19};
  for (int threads : {1, 2}) EXPECT_TRUE(ran(checkMatMulInteger(c, false, threads), matMulIntegerKernel()));
  c.bType = "i8", c.bLo = -128, c.bHi = 127, c.bZero = "per_column";
  EXPECT_TRUE(ran(checkMatMulInteger(c), matMulIntegerKernel()));
  c.bZero = "none";
  checkMatMulInteger(c);
}

TEST(CpuMatMulInteger, TypesAndZeroPoints) {
  for (const char *aType : {"u8", "i8"}) {
    for (const char *bType : {"u8", "i8"}) {
      const bool bSigned = std::string(bType) == "i8";
      MatMulIntegerCase c{{7, 45}, 33, aType, bType, "input", "scalar", bSigned ? -128 : 0, bSigned ? 127 : 255};
      SCOPED_TRACE(fmt::format("A {}, B {}", aType, bType));
      EXPECT_TRUE(ran(checkMatMulInteger(c), matMulIntegerKernel()));
      c.bZero = "per_column";
      checkMatMulInteger(c);
      c.aZero = std::string(aType) == "i8" ? "-5" : "3";
      checkMatMulInteger(c);
      c.aZero = "none", c.bZero = "none";
      checkMatMulInteger(c);
      c.aZero = "per_row";
      checkMatMulInteger(c);
      c.aZero = "per_row_input", c.bZero = "per_column";
      checkMatMulInteger(c);
    }
  }
}

TEST(CpuMatMulInteger, RanksOfA) {
  // A of rank 3 folds into one product; a per-row zero point repeats over the batch.
  MatMulIntegerCase c{{3, 4, 26}, 9, "u8", "u8", "per_row_input", "per_column"};
  EXPECT_TRUE(ran(checkMatMulInteger(c), matMulIntegerKernel()));
  c.aZero = "per_row";
  checkMatMulInteger(c);
  c.a = {2, 3, 5, 17}, c.aZero = "input";
  checkMatMulInteger(c);
  c.a = {40};
  EXPECT_TRUE(ran(checkMatMulInteger(c), matMulIntegerKernel()));
}

TEST(CpuMatMulInteger, Int8GemmTilesAndThreads) {
  // One row, rows past a tile, K past one block and not a multiple of 4, N past a tile; 1 and 3
  // threads. (On the f32 GEMM the first needs split sums.)
  const std::string kernel = int8Gemm() ? matMulIntegerKernel() : "matmul_integer_as_f32";
  MatMulIntegerCase c{{1, 1027}, 70, "u8", "i8", "input", "per_column", -128, 127};
  for (int threads : {1, 3}) EXPECT_TRUE(ran(checkMatMulInteger(c, false, threads), kernel));
  c = MatMulIntegerCase{{2, 9, 131}, 130, "i8", "u8", "per_row_input", "scalar"};
  for (int threads : {1, 3}) EXPECT_TRUE(ran(checkMatMulInteger(c, false, threads), kernel));
}

TEST(CpuMatMulInteger, SumsThatNeedASplit) {
  // K = 1500 full-range u8 weights centred on 127: each column's sum of |b'| is about 96000,
  // times 255 past 2^24, so on the f32 GEMM the weights run as high * 2^s + low; the int8 GEMM
  // sums in int32 and needs no split.
  MatMulIntegerCase c{{3, 1500}, 7};
  const std::string splitKernel = int8Gemm() ? matMulIntegerKernel() : "matmul_integer_as_f32_split";
  EXPECT_TRUE(ran(checkMatMulInteger(c), splitKernel));
  c.bZero = "per_column", c.aZero = "per_row_input";
  EXPECT_TRUE(ran(checkMatMulInteger(c), splitKernel));
  // Narrow weights keep the whole operand.
  c.bLo = 120, c.bHi = 134, c.bZero = "scalar";
  EXPECT_FALSE(ran(checkMatMulInteger(c), "_split"));
}

TEST(CpuMatMulInteger, NoExactSplitKeepsTheReference) {
  // 20736 full-range weights per column: no split keeps both parts' sums below 2^24, so the f32
  // GEMM leaves the node to the reference kernel; the int8 GEMM's int32 sums are exact.
  const MatMulIntegerCase c{{1, 20736}, 1};
  EXPECT_TRUE(ran(checkMatMulInteger(c, /*fallback=*/!int8Gemm()),
                  int8Gemm() ? matMulIntegerKernel() : "MatMulInteger reference"));
}

TEST(CpuMatMulInteger, KPastTheInt32BoundLeavesTheInt8Gemm) {
  // One more K than the int8 GEMM's int32 bound: it is not used, and no f32 split is exact either.
  const MatMulIntegerCase c{{1, kS8GemmMaxK + 1}, 1};
  EXPECT_TRUE(ran(checkMatMulInteger(c, /*fallback=*/true), "MatMulInteger reference"));
}

}  // namespace
}  // namespace tessel::cpu
