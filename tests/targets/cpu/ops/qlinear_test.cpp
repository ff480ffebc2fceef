// The static-quantization ops on the cpu target against the reference interpreter: QuantizeLinear
// and DequantizeLinear bit for bit (u8 and s8, per tensor and per axis, odd sizes, threads);
// QLinearConv (u8/s8 on each side, per-channel weight scales and zero points, an int32 bias,
// pads, strides, 1x1 and KxK, batches, groups and depthwise) and QLinearMatMul (per-column weight
// scales, A of rank 2 and 3) within one quantization step, the requantization's float32
// multiplier against the reference's double arithmetic, channels-first as written and channels-last
// after -O3's assign-layout; a QDQ model through -O3 (fuse-qdq, then assign-layout) within one
// step of its float QDQ arithmetic; QLinearAdd bit for bit; and a residual block kept channels-last. The products run on the int8 GEMM where the host
// has one (AVX512_VNNI) and on the f32 kernels otherwise: run with TESSEL_CPU_ISA=avx512_bf16 to
// test that path on such a host.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "../cpu_test_util.h"
#include "targets/cpu/kernels/gemm_s8.h"

namespace tessel::cpu {
namespace {

using testing::CpuCheck;
using testing::expectCpuMatchesReference;

std::string sizesText(const std::vector<int64_t> &sizes) { return fmt::format("[{}]", fmt::join(sizes, ",")); }

int64_t product(const std::vector<int64_t> &sizes) {
  int64_t n = 1;
  for (int64_t s : sizes) n *= s;
  return n;
}

/// `count` values from a fixed sequence, uniform over [lo, hi].
std::vector<int> sequence(int64_t count, uint32_t seed, int lo, int hi) {
  uint32_t state = seed * 2654435761u + 1;
  std::vector<int> values;
  for (int64_t i = 0; i < count; ++i) {
    state = state * 1664525u + 1013904223u;
    values.push_back(lo + int((state >> 8) % uint32_t(hi - lo + 1)));
  }
  return values;
}

std::string constant(const std::string &name, const std::string &dtype, const std::vector<int64_t> &sizes,
                     const std::string &values) {
  return fmt::format("  const %{} = dense<{}{}: {}>\n", name, dtype, sizesText(sizes), values);
}

std::string model(const std::string &inputs, const std::string &outputs, const std::string &body) {
  return fmt::format("model opset(ai.onnx=13) ir_version=8 {{\nfunc @main({}) -> ({}) {{\n{}}}\n}}\n", inputs,
                     outputs, body);
}

/// Checks `ir` on the cpu target against the reference within `atol` and returns the kernels its
/// steps ran.
std::vector<std::string> check(const std::string &ir, double atol, int optLevel = 0, int threads = 2) {
  SCOPED_TRACE(ir.substr(0, 800));
  CpuCheck c;
  c.threads = threads;
  c.rtol = 0.0;
  c.atol = atol;
  c.integerTolerance = atol >= 1.0 ? atol : 0.0;
  c.optLevel = optLevel;
  expectCpuMatchesReference(ir, c);
  auto parsed = parseModel(ir, "test.tsl.txt");
  EXPECT_TRUE(parsed.ok());
  if (!parsed.ok()) return {};
  auto executable = compileCpu(std::move(*parsed), {optLevel, threads});
  EXPECT_TRUE(executable.ok()) << executable.diag().str();
  if (!executable.ok()) return {};
  EXPECT_EQ((*executable)->summary().fallbackSteps, 0);
  (*executable)->setProfiling(true);
  EXPECT_TRUE((*executable)->run(testing::randomFeeds((*executable)->model(), 1)).ok());
  std::vector<std::string> kernels;
  for (const StepProfile &step : (*executable)->profile()) kernels.push_back(step.opType + " " + step.kernel);
  return kernels;
}

bool ran(const std::vector<std::string> &kernels, const std::string &text) {
  for (const std::string &k : kernels) {
    if (k.find(text) != std::string::npos) return true;
  }
  return false;
}

bool int8Gemm() { return selectedS8GemmKernel() != nullptr; }

TEST(CpuQuantizeLinear, PerTensorAndPerAxisBitForBit) {
  const std::vector<int64_t> sizes = {2, 5, 7, 9};
  for (const char *type : {"u8", "i8"}) {
    const bool u8 = std::string(type) == "u8";
    // Scales that put many inputs (uniform in [-1, 1]) past the type's range, so both clamps act.
    std::string body = constant("s", "f32", {}, "0.0051") + constant("z", type, {}, u8 ? "131" : "-3") +
                       constant("sa", "f32", {5}, "0.004, 0.01, 0.0073, 0.02, 0.0009") +
                       constant("za", type, {5}, u8 ? "0, 255, 128, 17, 90" : "0, -128, 127, 17, -90");
    body += "  %y = QuantizeLinear(%x, %s, %z)\n  %ya = QuantizeLinear(%x, %sa, %za) {axis = 1}\n  return %y, %ya\n";
    const std::string ir = model(fmt::format("%x: f32{}", sizesText(sizes)), "%y: ?, %ya: ?", body);
    for (int threads : {1, 2}) {
      const auto kernels = check(ir, 0.0, 0, threads);
      EXPECT_TRUE(ran(kernels, u8 ? "quantize_u8" : "quantize_s8")) << fmt::format("{}", fmt::join(kernels, "; "));
    }
  }
}

TEST(CpuDequantizeLinear, PerTensorAndPerAxisBitForBit) {
  for (const char *type : {"u8", "i8"}) {
    const std::string zeros = std::string(type) == "u8" ? "0, 255, 128, 17, 90, 3, 1" : "0, -128, 127, 17, -90, 3, 1";
    const std::string body = constant("s", "f32", {}, "0.0173") + constant("z", type, {}, "7") +
                             constant("sa", "f32", {7}, "0.004, 0.01, 0.0073, 0.02, 0.0009, 3.5, 1e-6") +
                             constant("za", type, {7}, zeros) +
                             "  %y = DequantizeLinear(%x, %s, %z)\n"
                             "  %ya = DequantizeLinear(%x, %sa, %za) {axis = -1}\n"
                             "  return %y, %ya\n";
    const std::string ir = model(fmt::format("%x: {}[3,100,7]", type), "%y: ?, %ya: ?", body);
    EXPECT_TRUE(ran(check(ir, 0.0), std::string("dequantize_") + (type[0] == 'u' ? "u8" : "s8")));
  }
}

struct QLinearConvCase {
  std::vector<int64_t> x, w;  // [N, C, H, W], [M, C/group, KH, KW]
  std::string attributes;
  std::string xType = "u8", wType = "i8", yType = "u8";
  bool perChannel = true, bias = true;
  bool symmetricWeights = false;  // Weight zero points 0: a u8 X then needs no row sums.
};

/// A QLinearConv whose output scale puts typical sums in the middle of y's range.
std::string qlinearConvModel(const QLinearConvCase &c) {
  const int64_t m = c.w[0], k = product(c.w) / m;
  const bool wSigned = c.wType == "i8";
  const int wLo = wSigned ? -128 : 0, wHi = wSigned ? 127 : 255;
  std::string body = constant("w", c.wType, c.w, fmt::format("{}", fmt::join(sequence(product(c.w), 7, wLo, wHi), ", ")));
  body += constant("xs", "f32", {}, "0.02") + constant("xz", c.xType, {}, c.xType == "u8" ? "120" : "-5");
  std::vector<double> wScales;
  for (int64_t j = 0; j < (c.perChannel ? m : 1); ++j) wScales.push_back(0.008 + 0.0005 * double(j % 9));
  const std::vector<int64_t> paramSizes = c.perChannel ? std::vector<int64_t>{m} : std::vector<int64_t>{};
  body += constant("ws", "f32", paramSizes, fmt::format("{}", fmt::join(wScales, ", ")));
  auto wZeros = sequence(c.perChannel ? m : 1, 5, wSigned ? -6 : 120, wSigned ? 6 : 136);
  if (c.symmetricWeights) std::fill(wZeros.begin(), wZeros.end(), 0);
  body += constant("wz", c.wType, paramSizes, fmt::format("{}", fmt::join(wZeros, ", ")));
  // The sums' spread: sqrt(K) * 74 * 74 (uniform operands); a quarter of the way to saturation.
  const double yScale = 0.02 * 0.01 * std::sqrt(double(k)) * 74.0 * 74.0 / 40.0;
  body += constant("ys", "f32", {}, fmt::format("{}", yScale)) +
          constant("yz", c.yType, {}, c.yType == "u8" ? "128" : "0");
  std::string args = "%x, %xs, %xz, %w, %ws, %wz, %ys, %yz";
  if (c.bias) {
    body += constant("b", "i32", {m}, fmt::format("{}", fmt::join(sequence(m, 11, -40000, 40000), ", ")));
    args += ", %b";
  }
  body += fmt::format("  %y = QLinearConv({}) {{{}}}\n  return %y\n", args, c.attributes);
  return model(fmt::format("%x: {}{}", c.xType, sizesText(c.x)), "%y: ?", body);
}

TEST(CpuQLinearConv, WithinOneStepOfTheReference) {
  const std::string s8 = int8Gemm() ? "qlinear_conv u8s8_gemm" : "qlinear_conv_as_f32";
  std::vector<std::pair<QLinearConvCase, std::string>> cases = {
      {{{1, 5, 9, 7}, {6, 5, 3, 3}, "pads = [1, 1, 1, 1]"}, s8},
      {{{2, 16, 8, 8}, {24, 16, 1, 1}, ""}, s8},
      {{{1, 7, 11, 10}, {9, 7, 3, 3}, "strides = [2, 2], pads = [0, 1, 1, 0]", "i8", "u8", "i8", false, false}, s8},
      {{{1, 3, 12, 12}, {8, 3, 5, 5}, "pads = [2, 2, 2, 2], dilations = [1, 1]", "u8", "i8", "u8", false, true}, s8},
      // Two chunks of pixels on the int8 GEMM (its chunks hold about 1 MiB of patches).
      {{{1, 64, 48, 48}, {16, 64, 3, 3}, "pads = [1, 1, 1, 1]", "u8", "i8", "i8"}, s8},
      // Symmetric weights and u8 X (what tessel quantize writes): no row sums; a stem of three
      // channels (taps of 21 bytes), a 1x1 read in place (K a multiple of 4) and one packed (K = 5),
      // and dilated taps of six channels partly in the padding.
      {{{1, 3, 20, 20}, {16, 3, 7, 7}, "strides = [2, 2], pads = [3, 3, 3, 3]", "u8", "i8", "u8", true, true, true},
       s8},
      {{{1, 32, 9, 9}, {40, 32, 1, 1}, "", "u8", "i8", "u8", true, true, true}, s8},
      {{{1, 5, 6, 6}, {7, 5, 1, 1}, "", "u8", "i8", "i8", true, false, true}, s8},
      {{{1, 6, 9, 9}, {8, 6, 3, 3}, "pads = [2, 1, 2, 1], dilations = [2, 2]", "u8", "i8", "u8", false, true, true},
       s8},
      {{{1, 8, 9, 9}, {8, 4, 3, 3}, "group = 2, pads = [1, 1, 1, 1]"}, "qlinear_conv_as_f32"},
      {{{1, 12, 10, 10}, {12, 1, 3, 3}, "group = 12, pads = [1, 1, 1, 1], strides = [2, 2]"},
       "qlinear_conv_as_f32 f32_depthwise"},
      // Depthwise with batches and s8 operands (at -O3 on the int8 channels-last kernel, tasks
      // spanning both images).
      {{{2, 16, 9, 7}, {16, 1, 3, 3}, "group = 16, pads = [1, 1, 1, 1]", "i8", "i8", "u8"},
       "qlinear_conv_as_f32 f32_depthwise"},
      // Rows of 13 pixels: interior runs of four pixels summed together, the edge pixels and
      // the rest of 8 channels one by one (stride 1 and 2).
      {{{1, 40, 7, 13}, {40, 1, 3, 3}, "group = 40, pads = [1, 1, 1, 1]", "u8", "i8", "u8"},
       "qlinear_conv_as_f32 f32_depthwise"},
      {{{1, 32, 9, 19}, {32, 1, 3, 3}, "group = 32, pads = [1, 1, 1, 1], strides = [2, 2]", "i8", "i8", "i8"},
       "qlinear_conv_as_f32 f32_depthwise"},
      // Two whole blocks of 16 channels and a rest of 8 in the int8 kernel, dilated, stride 2.
      {{{1, 40, 11, 9}, {40, 1, 3, 3}, "group = 40, pads = [2, 2, 2, 2], strides = [2, 2], dilations = [2, 2]"},
       "qlinear_conv_as_f32 f32_depthwise"},
  };
  for (const auto &[c, kernel] : cases) {
    const auto kernels = check(qlinearConvModel(c), 1.0);
    EXPECT_TRUE(ran(kernels, kernel)) << kernel << " not in " << fmt::format("{}", fmt::join(kernels, "; "));
    // -O3: assign-layout makes group-1 and depthwise convolutions the channels-last tessel op.
    const auto nhwc = check(qlinearConvModel(c), 1.0, /*optLevel=*/3);
    if (c.attributes.find("group = 2") == std::string::npos) {
      EXPECT_TRUE(ran(nhwc, "nhwc")) << fmt::format("{}", fmt::join(nhwc, "; "));
    }
  }
}

TEST(CpuQLinearMatMul, WithinOneStepOfTheReference) {
  for (const auto &[a, n, perColumn, bType, yType] :
       std::vector<std::tuple<std::vector<int64_t>, int64_t, bool, std::string, std::string>>{
           {{5, 37}, 19, true, "i8", "u8"}, {{2, 7, 300}, 64, false, "u8", "i8"}, {{70, 64}, 130, true, "i8", "i8"}}) {
    const int64_t k = a.back();
    const bool bSigned = bType == "i8";
    std::string body = constant("b", bType, {k, n},
                                fmt::format("{}", fmt::join(sequence(k * n, 9, bSigned ? -128 : 0, bSigned ? 127 : 255), ", ")));
    std::vector<double> bScales;
    for (int64_t j = 0; j < (perColumn ? n : 1); ++j) bScales.push_back(0.008 + 0.0007 * double(j % 7));
    const std::vector<int64_t> paramSizes = perColumn ? std::vector<int64_t>{n} : std::vector<int64_t>{};
    body += constant("as", "f32", {}, "0.02") + constant("az", "u8", {}, "121") +
            constant("bs", "f32", paramSizes, fmt::format("{}", fmt::join(bScales, ", "))) +
            constant("bz", bType, paramSizes,
                     fmt::format("{}", fmt::join(sequence(perColumn ? n : 1, 2, bSigned ? -4 : 124, bSigned ? 4 : 132), ", "))) +
            constant("ys", "f32", {}, fmt::format("{}", 0.02 * 0.01 * std::sqrt(double(k)) * 74.0 * 74.0 / 40.0)) +
            constant("yz", yType, {}, yType == "u8" ? "128" : "0") +
            "  %y = QLinearMatMul(%a, %as, %az, %b, %bs, %bz, %ys, %yz)\n  return %y\n";
    const auto kernels = check(model(fmt::format("%a: u8{}", sizesText(a)), "%y: ?", body), 1.0);
    EXPECT_TRUE(ran(kernels, int8Gemm() ? "qlinear_matmul u8s8_gemm" : "qlinear_matmul_as_f32"))
        << fmt::format("{}", fmt::join(kernels, "; "));
  }
}

TEST(CpuQdqModel, FusedAtO3WithinOneStepOfTheQdqArithmetic) {
  // x -> Q -> DQ -> Conv(DQ(w), DQ(bias)) -> Relu -> Q -> Reshape -> DQ -> MatMul(DQ(w2)): the Conv
  // becomes QLinearConv (the Relu dropped: y's zero point is 0), the MatMul MatMulInteger * scale.
  std::string body = constant("xs", "f32", {}, "0.008") + constant("xz", "u8", {}, "128") +
                     constant("w", "i8", {8, 3, 3, 3}, fmt::format("{}", fmt::join(sequence(216, 4, -127, 127), ", "))) +
                     constant("ws", "f32", {8}, "0.002, 0.003, 0.0025, 0.004, 0.001, 0.0031, 0.0022, 0.0028") +
                     constant("wz", "i8", {8}, "0, 0, 0, 0, 0, 0, 0, 0") +
                     constant("b", "i32", {8}, "100, -200, 3000, -50, 0, 7, -900, 40") +
                     constant("bs", "f32", {8}, "0.000016, 0.000024, 0.00002, 0.000032, 0.000008, 0.0000248, "
                                                "0.0000176, 0.0000224") +
                     constant("bz", "i32", {8}, "0, 0, 0, 0, 0, 0, 0, 0") +
                     constant("ys", "f32", {}, "0.01") + constant("yz", "u8", {}, "0") +
                     constant("w2", "i8", {512, 10}, fmt::format("{}", fmt::join(sequence(5120, 6, -127, 127), ", "))) +
                     constant("w2s", "f32", {}, "0.001") + constant("w2z", "i8", {}, "0") +
                     constant("shape", "i64", {2}, "1, 512") +
                     "  %xq = QuantizeLinear(%x, %xs, %xz)\n"
                     "  %xd = DequantizeLinear(%xq, %xs, %xz)\n"
                     "  %wd = DequantizeLinear(%w, %ws, %wz) {axis = 0}\n"
                     "  %bd = DequantizeLinear(%b, %bs, %bz) {axis = 0}\n"
                     "  %c = Conv(%xd, %wd, %bd) {pads = [1, 1, 1, 1]}\n"
                     "  %r = Relu(%c)\n"
                     "  %rq = QuantizeLinear(%r, %ys, %yz)\n"
                     "  %f = Reshape(%rq, %shape)\n"
                     "  %fd = DequantizeLinear(%f, %ys, %yz)\n"
                     "  %w2d = DequantizeLinear(%w2, %w2s, %w2z)\n"
                     "  %y = MatMul(%fd, %w2d)\n"
                     "  return %y\n";
  const std::string ir = model("%x: f32[1,3,8,8]", "%y: ?", body);
  // One step of the Conv's output moves y by at most 0.01 * sum_k |w2 * 0.001| ~ 0.33 (the step
  // changes a few elements, each by one); the outputs themselves range over about +-2.
  const auto kernels = check(ir, 0.05, /*optLevel=*/3);
  EXPECT_TRUE(ran(kernels, int8Gemm() ? "qlinear_conv_nhwc u8s8_gemm" : "qlinear_conv_as_f32 conv2d_nhwc"))
      << fmt::format("{}", fmt::join(kernels, "; "));
  EXPECT_TRUE(ran(kernels, "matmul_integer")) << fmt::format("{}", fmt::join(kernels, "; "));
  EXPECT_FALSE(ran(kernels, "Relu")) << fmt::format("{}", fmt::join(kernels, "; "));
}

TEST(CpuQdqModel, QuantizedAddIsBitForBitTheQdqArithmetic) {
  // DQ(a) + DQ(b) -> Relu -> Q becomes one QLinearAdd at -O3 (the Relu dropped: y's zero point is
  // 0), computing what the three ops do in float32: the same bits, u8 and s8, odd sizes, threads.
  for (const char *type : {"u8", "i8"}) {
    const bool u8 = std::string(type) == "u8";
    const std::string body = constant("as", "f32", {}, "0.0173") + constant("az", type, {}, u8 ? "120" : "-7") +
                             constant("bs", "f32", {}, "0.0091") + constant("bz", type, {}, u8 ? "131" : "3") +
                             constant("ys", "f32", {}, "0.0211") + constant("yz", type, {}, u8 ? "0" : "-128") +
                             "  %ad = DequantizeLinear(%a, %as, %az)\n"
                             "  %bd = DequantizeLinear(%b, %bs, %bz)\n"
                             "  %s = Add(%ad, %bd)\n"
                             "  %r = Relu(%s)\n"
                             "  %y = QuantizeLinear(%r, %ys, %yz)\n"
                             "  return %y\n";
    const std::string ir = model(fmt::format("%a: {0}[2,7,33,35], %b: {0}[2,7,33,35]", type), "%y: ?", body);
    for (int threads : {1, 2}) {
      const auto kernels = check(ir, 0.0, /*optLevel=*/3, threads);
      EXPECT_TRUE(ran(kernels, u8 ? "qlinear_add_u8" : "qlinear_add_s8")) << fmt::format("{}", fmt::join(kernels, "; "));
      EXPECT_FALSE(ran(kernels, "Relu")) << fmt::format("{}", fmt::join(kernels, "; "));
    }
  }
}

TEST(CpuQdqModel, DequantizedProductWritesFloats) {
  // a transformer block's product: x -> Q -> DQ -> MatMul(DQ(w)) -> Q -> DQ -> Add(x): at -O3 the
  // MatMul and its output's Q become QLinearMatMul, and that with the DQ reading it one
  // QLinearMatMulToFloat writing the dequantized floats. The values are exactly the QDQ graph's
  // after its output quantization, so within one step (0.02) of its float arithmetic; u8 and s8.
  for (const char *type : {"u8", "i8"}) {
    const bool u8 = std::string(type) == "u8";
    const std::string body =
        constant("xs", "f32", {}, "0.01") + constant("xz", type, {}, u8 ? "128" : "0") +
        constant("w", "i8", {48, 40}, fmt::format("{}", fmt::join(sequence(48 * 40, 5, -127, 127), ", "))) +
        constant("ws", "f32", {40}, fmt::format("{}", fmt::join(std::vector<double>(40, 0.003), ", "))) +
        constant("wz", "i8", {40}, fmt::format("{}", fmt::join(std::vector<int>(40, 0), ", "))) +
        constant("ys", "f32", {}, "0.02") + constant("yz", type, {}, u8 ? "120" : "-3") +
        "  %xq = QuantizeLinear(%x, %xs, %xz)\n"
        "  %xd = DequantizeLinear(%xq, %xs, %xz)\n"
        "  %wd = DequantizeLinear(%w, %ws, %wz) {axis = 1}\n"
        "  %p = MatMul(%xd, %wd)\n"
        "  %pq = QuantizeLinear(%p, %ys, %yz)\n"
        "  %pd = DequantizeLinear(%pq, %ys, %yz)\n"
        "  %y = Add(%pd, %pd)\n"
        "  return %y\n";
    const std::string ir = model("%x: f32[3,7,48]", "%y: ?", body);
    const auto kernels = check(ir, 2 * 0.02 + 1e-6, /*optLevel=*/3);
    EXPECT_TRUE(ran(kernels, int8Gemm() ? "QLinearMatMulToFloat qlinear_matmul_to_float u8s8_gemm"
                                        : "QLinearMatMulToFloat qlinear_matmul_to_float_as_f32"))
        << fmt::format("{}", fmt::join(kernels, "; "));
    EXPECT_FALSE(ran(kernels, "DequantizeLinear")) << fmt::format("{}", fmt::join(kernels, "; "));
  }
}

TEST(CpuQdqModel, RoundTripLeftSnapsToTheGridBitForBit) {
  // What stays of attention's QDQ (products of two activations): QuantizeLinear -> DequantizeLinear
  // round trips, each at -O3 a Div, Round, Clip and Mul fused with the ops around it. The same bits
  // as the round trip: values past both ends of the grid (a: uniform in [-1, 1], the grid about
  // [-0.52, 0.5]), and exact ties ((t - 128) / 8 on a grid of step 0.25: half steps), which round
  // to even; u8 and s8.
  for (const char *type : {"u8", "i8"}) {
    const bool u8 = std::string(type) == "u8";
    const std::string body = constant("s", "f32", {}, "0.004") + constant("z", type, {}, u8 ? "131" : "-3") +
                             constant("q", "f32", {}, "0.25") + constant("qz", type, {}, u8 ? "10" : "-100") +
                             constant("eighth", "f32", {}, "0.125") + constant("mid", "u8", {}, "128") +
                             constant("k", "f32", {}, "3") +
                             "  %aq = QuantizeLinear(%a, %s, %z)\n"
                             "  %ad = DequantizeLinear(%aq, %s, %z)\n"
                             "  %y = Mul(%ad, %k)\n"
                             "  %x = DequantizeLinear(%t, %eighth, %mid)\n"
                             "  %xq = QuantizeLinear(%x, %q, %qz)\n"
                             "  %xd = DequantizeLinear(%xq, %q, %qz)\n"
                             "  %y2 = Mul(%xd, %k)\n"
                             "  return %y, %y2\n";
    const std::string ir = model("%a: f32[3,37,41], %t: u8[3,37,41]", "%y: ?, %y2: ?", body);
    for (int threads : {1, 2}) {
      const auto kernels = check(ir, 0.0, /*optLevel=*/3, threads);
      EXPECT_TRUE(ran(kernels, "Div,Round,Clip,Mul,Mul")) << fmt::format("{}", fmt::join(kernels, "; "));
      EXPECT_FALSE(ran(kernels, "QuantizeLinear")) << fmt::format("{}", fmt::join(kernels, "; "));
    }
  }
}

TEST(CpuQdqModel, DequantizedProductTakesItsEpilogue) {
  // a transformer block's projection: DQ -> MatMul -> Q -> DQ -> Add(bias) -> Add(residual) ->
  // Sigmoid. At -O3 one QLinearMatMulToFloat whose GEMM adds the bias and the residual and applies
  // the activation to each block of floats it finishes: within one step (0.02) of the float QDQ
  // arithmetic after the output quantization (the sigmoid's slope is at most 1/4); rows and columns
  // past whole blocks and register tiles (M 3 * 37, N 200), u8 and s8.
  for (const char *type : {"u8", "i8"}) {
    const bool u8 = std::string(type) == "u8";
    const int64_t k = 48, n = 200;
    const std::string body =
        constant("xs", "f32", {}, "0.01") + constant("xz", type, {}, u8 ? "128" : "0") +
        constant("w", "i8", {k, n}, fmt::format("{}", fmt::join(sequence(k * n, 7, -127, 127), ", "))) +
        constant("ws", "f32", {}, "0.003") + constant("wz", "i8", {}, "0") +
        constant("b", "f32", {n}, fmt::format("{}", fmt::join(sequence(n, 3, -2, 2), ", "))) +
        constant("ys", "f32", {}, "0.02") + constant("yz", type, {}, u8 ? "120" : "-3") +
        "  %xq = QuantizeLinear(%x, %xs, %xz)\n"
        "  %xd = DequantizeLinear(%xq, %xs, %xz)\n"
        "  %wd = DequantizeLinear(%w, %ws, %wz)\n"
        "  %p = MatMul(%xd, %wd)\n"
        "  %pq = QuantizeLinear(%p, %ys, %yz)\n"
        "  %pd = DequantizeLinear(%pq, %ys, %yz)\n"
        "  %pb = Add(%pd, %b)\n"
        "  %pr = Add(%r, %pb)\n"
        "  %y = Sigmoid(%pr)\n"
        "  return %y\n";
    const std::string ir = model(fmt::format("%x: f32[3,37,{}], %r: f32[3,37,{}]", k, n), "%y: ?", body);
    const auto kernels = check(ir, 0.25 * 0.02 + 1e-5, /*optLevel=*/3);
    EXPECT_TRUE(ran(kernels, "QLinearMatMulToFloat")) << fmt::format("{}", fmt::join(kernels, "; "));
    for (const char *unfused : {"Add", "Sigmoid", "FusedElementwise"}) {
      EXPECT_FALSE(ran(kernels, unfused)) << fmt::format("{}", fmt::join(kernels, "; "));
    }
  }
}

TEST(CpuQdqModel, GemmWithBiasWritesFloats) {
  // an exported Linear: Gemm(DQ(x), DQ(w), DQ(bias)) {transB = 1} -> Q -> DQ -> Add. At -O3 it is
  // one QLinearMatMulToFloat over the transposed weights with the int32 bias (the Q -> DQ round trip
  // gone); per-column weight scales, the bias at each column's product scale. Within one output
  // step (0.02) of the float graph; a Gemm whose bias lands on the wrong columns is off by several.
  const std::vector<int> wScaleSteps = sequence(40, 3, 1, 6);
  std::vector<float> ws, bs;
  for (int step : wScaleSteps) {
    ws.push_back(0.001f * float(step));
    bs.push_back(0.01f * ws.back());
  }
  const std::string body =
      constant("xs", "f32", {}, "0.01") + constant("xz", "u8", {}, "128") +
      constant("w", "i8", {40, 48}, fmt::format("{}", fmt::join(sequence(40 * 48, 5, -127, 127), ", "))) +
      constant("ws", "f32", {40}, fmt::format("{}", fmt::join(ws, ", "))) +
      constant("b", "i32", {40}, fmt::format("{}", fmt::join(sequence(40, 9, -30000, 30000), ", "))) +
      constant("bs", "f32", {40}, fmt::format("{}", fmt::join(bs, ", "))) + constant("ys", "f32", {}, "0.02") +
      constant("yz", "u8", {}, "120") +
      "  %xq = QuantizeLinear(%x, %xs, %xz)\n"
      "  %xd = DequantizeLinear(%xq, %xs, %xz)\n"
      "  %wd = DequantizeLinear(%w, %ws) {axis = 0}\n"
      "  %bd = DequantizeLinear(%b, %bs) {axis = 0}\n"
      "  %p = Gemm(%xd, %wd, %bd) {transB = 1}\n"
      "  %pq = QuantizeLinear(%p, %ys, %yz)\n"
      "  %pd = DequantizeLinear(%pq, %ys, %yz)\n"
      "  %y = Add(%pd, %pd)\n"
      "  return %y\n";
  const std::string ir = model("%x: f32[21,48]", "%y: ?", body);
  for (int threads : {1, 2}) {
    const auto kernels = check(ir, 2 * 0.02 + 1e-6, /*optLevel=*/3, threads);
    EXPECT_TRUE(ran(kernels, int8Gemm() ? "QLinearMatMulToFloat qlinear_matmul_to_float u8s8_gemm"
                                        : "QLinearMatMulToFloat qlinear_matmul_to_float_as_f32"))
        << fmt::format("{}", fmt::join(kernels, "; "));
    // The one QuantizeLinear left is x's.
    EXPECT_EQ(std::count_if(kernels.begin(), kernels.end(),
                            [](const std::string &k) { return k.rfind("QuantizeLinear", 0) == 0; }),
              1)
        << fmt::format("{}", fmt::join(kernels, "; "));
    EXPECT_FALSE(ran(kernels, "DequantizeLinear")) << fmt::format("{}", fmt::join(kernels, "; "));
    EXPECT_FALSE(ran(kernels, "Gemm")) << fmt::format("{}", fmt::join(kernels, "; "));
  }
  // The fused op as written, lowered at -O0, against its reference kernel: the same bias on the
  // same columns (the reference's double multiplier may round a tie the other way: one step).
  std::string fused = body.substr(0, body.find("  %xq"));
  fused += "  %xq = QuantizeLinear(%x, %xs, %xz)\n"
           "  %y = tessel.QLinearMatMulToFloat(%xq, %xs, %xz, %wt, %ws, %wz, %ys, %yz, %b)\n"
           "  return %y\n";
  const std::vector<int> w = sequence(40 * 48, 5, -127, 127);
  std::vector<int> wt(w.size());
  for (size_t n = 0; n < 40; ++n) {
    for (size_t k = 0; k < 48; ++k) wt[k * 40 + n] = w[n * 48 + k];
  }
  fused = constant("wt", "i8", {48, 40}, fmt::format("{}", fmt::join(wt, ", "))) +
          constant("wz", "i8", {40}, fmt::format("{}", fmt::join(std::vector<int>(40, 0), ", "))) + fused;
  const std::string fusedIr = fmt::format("model opset(ai.onnx=13, tessel=1) ir_version=8 {{\nfunc @main(%x: f32[21,48]) "
                                          "-> (%y: ?) {{\n{}}}\n}}\n",
                                          fused);
  const auto kernels = check(fusedIr, 0.02 + 1e-6, /*optLevel=*/0);
  EXPECT_TRUE(ran(kernels, "qlinear_matmul_to_float")) << fmt::format("{}", fmt::join(kernels, "; "));
}

TEST(CpuQdqModel, ResidualBlockStaysChannelsLast) {
  // x -> Q -> DQ -> Conv -> Q -> DQ -+-> Add -> Relu -> Q: the convolution and the addition run
  //                  DQ(xq) ---------+   channels-last, one Transpose in and one out.
  std::string body = constant("xs", "f32", {}, "0.008") + constant("xz", "u8", {}, "128") +
                     constant("w", "i8", {3, 3, 3, 3}, fmt::format("{}", fmt::join(sequence(81, 8, -127, 127), ", "))) +
                     constant("ws", "f32", {3}, "0.002, 0.003, 0.0025") + constant("wz", "i8", {3}, "0, 0, 0") +
                     constant("cs", "f32", {}, "0.01") + constant("cz", "u8", {}, "128") +
                     constant("ys", "f32", {}, "0.012") + constant("yz", "u8", {}, "0") +
                     "  %xq = QuantizeLinear(%x, %xs, %xz)\n"
                     "  %xd = DequantizeLinear(%xq, %xs, %xz)\n"
                     "  %wd = DequantizeLinear(%w, %ws, %wz) {axis = 0}\n"
                     "  %c = Conv(%xd, %wd) {pads = [1, 1, 1, 1]}\n"
                     "  %cq = QuantizeLinear(%c, %cs, %cz)\n"
                     "  %cd = DequantizeLinear(%cq, %cs, %cz)\n"
                     "  %s = Add(%cd, %xd)\n"
                     "  %r = Relu(%s)\n"
                     "  %y = QuantizeLinear(%r, %ys, %yz)\n"
                     "  return %y\n";
  const auto kernels = check(model("%x: f32[1,3,10,10]", "%y: ?", body), 1.0, /*optLevel=*/3);
  int transposes = 0;
  for (const std::string &k : kernels) transposes += k.rfind("Transpose", 0) == 0;
  EXPECT_EQ(transposes, 2) << fmt::format("{}", fmt::join(kernels, "; "));
  EXPECT_TRUE(ran(kernels, "QLinearAdd qlinear_add_u8")) << fmt::format("{}", fmt::join(kernels, "; "));
  EXPECT_TRUE(ran(kernels, "nhwc")) << fmt::format("{}", fmt::join(kernels, "; "));
}

TEST(CpuQdqModel, MaxPoolOfQuantizedValuesStaysChannelsLast) {
  // Conv -> Q -> DQ -> MaxPool -> Q of the same scale and zero point: the pool runs on the
  // channels-last bytes (u8 and s8), with no DequantizeLinear, QuantizeLinear or Transpose between
  // the two; of another scale it stays a float MaxPool.
  for (const char *type : {"u8", "i8"}) {
    for (const char *poolScale : {"0.01", "0.02"}) {
      const bool u8 = std::string(type) == "u8", same = std::string(poolScale) == "0.01";
      std::string body = constant("xs", "f32", {}, "0.008") + constant("xz", "u8", {}, "128") +
                         constant("w", "i8", {16, 3, 3, 3}, fmt::format("{}", fmt::join(sequence(432, 8, -127, 127), ", "))) +
                         constant("ws", "f32", {}, "0.0025") + constant("wz", "i8", {}, "0") +
                         constant("cs", "f32", {}, "0.01") + constant("cz", type, {}, u8 ? "100" : "-20") +
                         constant("ps", "f32", {}, poolScale) +
                         "  %xq = QuantizeLinear(%x, %xs, %xz)\n"
                         "  %xd = DequantizeLinear(%xq, %xs, %xz)\n"
                         "  %wd = DequantizeLinear(%w, %ws, %wz)\n"
                         "  %c = Conv(%xd, %wd) {pads = [1, 1, 1, 1]}\n"
                         "  %cq = QuantizeLinear(%c, %cs, %cz)\n"
                         "  %cd = DequantizeLinear(%cq, %cs, %cz)\n"
                         "  %p = MaxPool(%cd) {kernel_shape = [3, 3], strides = [2, 2], pads = [1, 1, 1, 1]}\n"
                         "  %y = QuantizeLinear(%p, %ps, %cz)\n"
                         "  return %y\n";
      const auto kernels = check(model("%x: f32[1,3,15,13]", "%y: ?", body), 1.0, /*optLevel=*/3);
      const std::string bytesPool = u8 ? "max_pool2d_nhwc_u8" : "max_pool2d_nhwc_s8";
      EXPECT_EQ(ran(kernels, bytesPool), same) << fmt::format("{}", fmt::join(kernels, "; "));
      if (same) {
        EXPECT_FALSE(ran(kernels, "DequantizeLinear")) << fmt::format("{}", fmt::join(kernels, "; "));
        int transposes = 0;
        for (const std::string &k : kernels) transposes += k.rfind("Transpose", 0) == 0;
        EXPECT_EQ(transposes, 2) << fmt::format("{}", fmt::join(kernels, "; "));
      }
    }
  }
}

}  // namespace
}  // namespace tessel::cpu
