// Reference kernels of the linear quantization ops: QuantizeLinear and DequantizeLinear (per
// tensor, or per axis from opset 13) and DynamicQuantizeLinear. Quantizing divides by the scale
// in the input's own precision (float32 for float inputs, as numpy and onnxruntime do, so ties
// land where the test data expects), rounds half to even and saturates to the output type.
#include <algorithm>
#include <cmath>

#include "ops/reference/nn_common.h"

namespace tessel::ref {

namespace {

/// The range of a quantized type. Precondition: `dtype` is u8, i8 or i32.
std::pair<double, double> quantizedRange(DType dtype) {
  if (dtype == DType::Int8) return {-128.0, 127.0};
  if (dtype == DType::Int32) return {-2147483648.0, 2147483647.0};
  return {0.0, 255.0};
}

/// round-half-to-even(value) + zeroPoint, clamped to the range of `dtype`.
double saturate(double value, double zeroPoint, DType dtype) {
  auto [lo, hi] = quantizedRange(dtype);
  return std::clamp(std::nearbyint(value) + zeroPoint, lo, hi);
}

/// For each element of X, which element of a scale (or zero point) applies: all the same for a
/// one-element tensor, else the element's index along `axis` (opset 13's per-axis form).
Expected<std::vector<int64_t>> parameterIndex(const KernelContext &ctx, const Tensor &x, const Tensor &param,
                                              const char *what) {
  if (param.numel() == 1) return std::vector<int64_t>(static_cast<size_t>(x.numel()), 0);
  const int64_t rank = static_cast<int64_t>(x.rank());
  TESSEL_ASSIGN_OR_RETURN(int64_t axis, normalizeAxis(ctx.node().attrInt("axis", 1), rank));
  if (ctx.opset() < 13 || param.rank() != 1 || param.size(0) != x.size(static_cast<size_t>(axis))) {
    return makeError(ErrorCode::ShapeMismatch, "{} has shape {}; expected a scalar or [{}] (X's axis {}) from opset 13",
                     what, formatSizes(param.sizes()), x.size(static_cast<size_t>(axis)), axis);
  }
  std::vector<int64_t> kept(x.rank(), 1);
  kept[static_cast<size_t>(axis)] = x.size(static_cast<size_t>(axis));
  return broadcastIndexMap(kept, x.sizes());
}

/// x / scale in x's precision: float for float32 (and narrower) inputs, double otherwise.
double divideInPrecision(double x, double scale, DType xType) {
  if (xType == DType::Float64 || !isFloatingPoint(xType)) return x / scale;
  return static_cast<double>(static_cast<float>(x) / static_cast<float>(scale));
}

}  // namespace

Status refQuantizeLinear(KernelContext &ctx) {
  TESSEL_RETURN_IF_ERROR(requireInputs(ctx, 2));
  const Tensor &x = ctx.tensor(0);
  if (!isFloatingPoint(x.dtype()) && x.dtype() != DType::Int32) {
    return makeError(ErrorCode::TypeMismatch, "x must be floating-point or i32; got {}", dtypeName(x.dtype()));
  }
  const Tensor &scaleT = ctx.tensor(1);
  const DType outType = ctx.hasInput(2) ? ctx.tensor(2).dtype() : DType::UInt8;
  if (outType != DType::UInt8 && outType != DType::Int8) {
    return makeError(ErrorCode::TypeMismatch, "y_zero_point must be u8 or i8; got {}", dtypeName(outType));
  }
  TESSEL_ASSIGN_OR_RETURN(std::vector<int64_t> scaleIndex, parameterIndex(ctx, x, scaleT, "y_scale"));
  std::vector<double> scale = toDoubles(scaleT);
  std::vector<double> zero(scale.size(), 0.0);
  if (ctx.hasInput(2)) {
    zero = toDoubles(ctx.tensor(2));
    if (zero.size() != scale.size()) {
      return makeError(ErrorCode::ShapeMismatch, "y_zero_point has shape {}; expected y_scale's shape {}",
                       formatSizes(ctx.tensor(2).sizes()), formatSizes(scaleT.sizes()));
    }
  }
  std::vector<double> y = toDoubles(x);
  for (size_t i = 0; i < y.size(); ++i) {
    size_t p = static_cast<size_t>(scaleIndex[i]);
    y[i] = saturate(divideInPrecision(y[i], scale[p], x.dtype()), zero[p], outType);
  }
  ctx.setOutput(0, fromDoubles(outType, x.sizes(), y));
  return Status::success();
}

Status refDequantizeLinear(KernelContext &ctx) {
  TESSEL_RETURN_IF_ERROR(requireInputs(ctx, 2));
  TESSEL_RETURN_IF_ERROR(expectDType(ctx, 0, {DType::UInt8, DType::Int8, DType::Int32}));
  const Tensor &x = ctx.tensor(0);
  const Tensor &scaleT = ctx.tensor(1);
  TESSEL_RETURN_IF_ERROR(expectFloatInput(ctx, 1));
  TESSEL_ASSIGN_OR_RETURN(std::vector<int64_t> scaleIndex, parameterIndex(ctx, x, scaleT, "x_scale"));
  std::vector<double> scale = toDoubles(scaleT);
  std::vector<double> zero(scale.size(), 0.0);
  if (ctx.hasInput(2)) {
    TESSEL_RETURN_IF_ERROR(expectSameDType(ctx, 0, 2));
    zero = toDoubles(ctx.tensor(2));
    if (zero.size() != scale.size()) {
      return makeError(ErrorCode::ShapeMismatch, "x_zero_point has shape {}; expected x_scale's shape {}",
                       formatSizes(ctx.tensor(2).sizes()), formatSizes(scaleT.sizes()));
    }
  }
  std::vector<double> y = toDoubles(x);
  for (size_t i = 0; i < y.size(); ++i) {
    size_t p = static_cast<size_t>(scaleIndex[i]);
    y[i] = (y[i] - zero[p]) * scale[p];
  }
  ctx.setOutput(0, fromDoubles(scaleT.dtype(), x.sizes(), y));
  return Status::success();
}

namespace {

/// DynamicQuantizeLinear of `x` to uint8, as ONNX defines it: the range widened to include 0 (so
/// that 0 quantizes exactly), scale = range / 255 and the zero point in float32 (as its test data
/// has it); the values as doubles. A zero range (x all zeros) quantizes to the zero point, 0.
struct DynamicQuantized {
  float scale = 0.0f;
  float zeroPoint = 0.0f;
  std::vector<double> values;
};

DynamicQuantized quantizeDynamic(const Tensor &x) {
  float lo = 0.0f, hi = 0.0f;
  for (float v : x.span<float>()) lo = std::min(lo, v), hi = std::max(hi, v);
  DynamicQuantized q;
  q.scale = (hi - lo) / 255.0f;
  if (q.scale != 0.0f) q.zeroPoint = std::clamp(std::nearbyint((0.0f - lo) / q.scale), 0.0f, 255.0f);
  q.values.assign(static_cast<size_t>(x.numel()), q.zeroPoint);
  if (q.scale != 0.0f) {
    const float *in = x.data<float>();
    for (size_t i = 0; i < q.values.size(); ++i) q.values[i] = saturate(in[i] / q.scale, q.zeroPoint, DType::UInt8);
  }
  return q;
}

}  // namespace

Status refDynamicQuantizeLinear(KernelContext &ctx) {
  TESSEL_RETURN_IF_ERROR(requireInputs(ctx, 1));
  TESSEL_RETURN_IF_ERROR(expectDType(ctx, 0, {DType::Float32}));
  const Tensor &x = ctx.tensor(0);
  DynamicQuantized q = quantizeDynamic(x);
  ctx.setOutput(0, fromDoubles(DType::UInt8, x.sizes(), q.values));
  ctx.setOutput(1, Tensor::scalar<float>(q.scale));
  ctx.setOutput(2, Tensor::scalar<uint8_t>(static_cast<uint8_t>(q.zeroPoint)));
  return Status::success();
}

Status refDynamicQuantizeCentered(KernelContext &ctx) {
  TESSEL_RETURN_IF_ERROR(requireInputs(ctx, 1));
  TESSEL_RETURN_IF_ERROR(expectDType(ctx, 0, {DType::Float32}));
  const Tensor &x = ctx.tensor(0);
  DynamicQuantized q = quantizeDynamic(x);
  for (double &v : q.values) v -= q.zeroPoint;
  ctx.setOutput(0, fromDoubles(DType::Float32, x.sizes(), q.values));
  ctx.setOutput(1, Tensor::scalar<float>(q.scale));
  return Status::success();
}

}  // namespace tessel::ref
