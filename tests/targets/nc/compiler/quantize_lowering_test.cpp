// Dynamically quantized products on the accelerator (onnxruntime's quantize_dynamic form:
// DynamicQuantizeLinear -> ConvInteger / MatMulInteger -> Cast -> Mul by the scales), checked
// against the reference running the integer ops as written: float-dynamic-quantization makes them
// tessel DynamicQuantizeCentered and float products, all on the device.
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "targets/nc/compiler/nc_model_check.h"

namespace tessel::nc::compiler {
namespace {

/// `dense<u8[shape]: ...>` with seeded values in [0, 255].
std::string bytesText(const std::vector<int64_t> &shape, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int> byte(0, 255);
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  std::vector<int> values(static_cast<size_t>(n));
  for (int &v : values) v = byte(rng);
  return fmt::format("dense<u8[{}]: {}>", fmt::join(shape, ","), fmt::join(values, ", "));
}

/// Runs `ir` on nc-v2 and the reference: all on the device, and within `tolerance` of the
/// reference, absolute and relative. The products are exact integers in float; what may differ is
/// an element within an ulp of a rounding tie (x times 1 / scale instead of x / scale), one
/// quantization step, which these seeded inputs do not meet.
void expectOnDeviceAndMatches(const std::string &ir, double tolerance) {
  SCOPED_TRACE(ir);
  auto check = checkModelOnNc(ir, {}, tolerance, tolerance);
  ASSERT_TRUE(check.ok()) << check.diag().str();
  EXPECT_LE(check->maxErrorRatio, 1.0) << check->worst;
  EXPECT_EQ(check->hostNodes, 0);
}

TEST(QuantizeLowering, DynamicallyQuantizedConvOnTheDevice) {
  // 160 input channels (two partition blocks, one ragged), uint8 weights with a zero point per
  // output channel, the product rescaled by the run-time scale, then bias and Relu: isnet_quint8's
  // pattern. The input is shifted so that its range is not symmetric (zero point off 128).
  const std::string ir = fmt::format(R"(model opset(ai.onnx=13) ir_version=8 {{
func @main(%x: f32[1,160,9,9]) -> (%y: f32[1,24,9,9]) {{
  const %shift = dense<f32[]: 0.3>
  const %w = {}
  const %wz = {}
  const %ws = dense<f32[]: 0.0021>
  const %b = {}
  %xs = Add(%x, %shift)
  %q, %s, %zp = DynamicQuantizeLinear(%xs)
  %c = ConvInteger(%q, %w, %zp, %wz) {{kernel_shape = [3, 3], pads = [1, 1, 1, 1]}}
  %cf = Cast(%c) {{to = 1}}
  %k = Mul(%s, %ws)
  %m = Mul(%cf, %k)
  %a = Add(%m, %b)
  %y = Relu(%a)
  return %y
}}
}})",
                                     bytesText({24, 160, 3, 3}, 11), bytesText({24}, 12), denseText({1, 24, 1, 1}, 13));
  expectOnDeviceAndMatches(ir, 1e-4);
}

TEST(QuantizeLowering, DynamicallyQuantizedMatMulOnTheDevice) {
  // A dynamically quantized linear layer (BERT's form): 200 features, uint8 weights and zero point.
  const std::string ir = fmt::format(R"(model opset(ai.onnx=13) ir_version=8 {{
func @main(%x: f32[1,8,200]) -> (%y: f32[1,8,64]) {{
  const %w = {}
  const %wz = dense<u8[]: 131>
  const %ws = dense<f32[]: 0.0037>
  %q, %s, %zp = DynamicQuantizeLinear(%x)
  %p = MatMulInteger(%q, %w, %zp, %wz)
  %pf = Cast(%p) {{to = 1}}
  %k = Mul(%s, %ws)
  %y = Mul(%pf, %k)
  return %y
}}
}})",
                                     bytesText({200, 64}, 21));
  expectOnDeviceAndMatches(ir, 1e-4);
}

}  // namespace
}  // namespace tessel::nc::compiler
