// Scales, zero points and quantized constants. Rounding is half to even (std::nearbyint in the
// default mode), as numpy's round and ONNX's QuantizeLinear do, and scales are float32 products and
// quotients as in ORT, so the integers match what quantize_static writes.
#include "quantize/quant_params.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace tessel {

namespace {

/// ORT replaces a scale too small to divide by with 1 (an all-zero tensor).
float usableScale(float scale) { return scale < std::numeric_limits<float>::min() ? 1.0f : scale; }

/// `x` rounded and clamped to [lo, hi]; NaN becomes 0 (casting it to an integer is undefined).
double roundClamped(double x, double lo, double hi) { return std::isnan(x) ? 0 : std::clamp(std::nearbyint(x), lo, hi); }

/// The weight's element count before, along and after `axis`.
struct AxisSplit {
  int64_t outer = 1, channels = 1, inner = 1;
};

AxisSplit splitAt(const Tensor &t, int64_t axis) {
  AxisSplit s;
  if (axis < 0) {
    s.inner = t.numel();
    return s;
  }
  for (int64_t i = 0; i < axis; ++i) s.outer *= t.size(static_cast<size_t>(i));
  s.channels = t.size(static_cast<size_t>(axis));
  for (size_t i = static_cast<size_t>(axis) + 1; i < t.rank(); ++i) s.inner *= t.size(i);
  return s;
}

}  // namespace

QuantParams activationParams(FloatRange range, bool symmetric) {
  const float lo = std::min(range.min, 0.0f);
  const float hi = std::max(range.max, 0.0f);
  QuantParams p;
  if (symmetric) {
    p.dtype = DType::Int8;
    p.scales = {usableScale(std::max(-lo, hi) / 127.0f)};
    p.zeroPoints = {0};
    return p;
  }
  p.dtype = DType::UInt8;
  const float scale = (hi - lo) / 255.0f;
  if (scale < std::numeric_limits<float>::min()) {
    p.scales = {1.0f};
    p.zeroPoints = {0};
    return p;
  }
  p.scales = {scale};
  p.zeroPoints = {static_cast<int32_t>(roundClamped(-lo / scale, 0, 255))};
  return p;
}

QuantizedConstant quantizeWeight(const Tensor &weight, int64_t axis) {
  const AxisSplit s = splitAt(weight, axis);
  const float *w = weight.data<float>();
  auto index = [&](int64_t o, int64_t c, int64_t i) { return (o * s.channels + c) * s.inner + i; };
  QuantizedConstant q{Tensor(DType::Int8, weight.sizes()), {}};
  q.params.dtype = DType::Int8;
  q.params.axis = axis;
  q.params.scales.assign(static_cast<size_t>(s.channels), 0.0f);
  q.params.zeroPoints.assign(static_cast<size_t>(s.channels), 0);
  int8_t *out = q.values.data<int8_t>();
  for (int64_t c = 0; c < s.channels; ++c) {
    float maxAbs = 0;
    for (int64_t o = 0; o < s.outer; ++o)
      for (int64_t i = 0; i < s.inner; ++i)
        if (std::isfinite(w[index(o, c, i)])) maxAbs = std::max(maxAbs, std::fabs(w[index(o, c, i)]));
    const float scale = usableScale(maxAbs / 127.0f);
    q.params.scales[static_cast<size_t>(c)] = scale;
    for (int64_t o = 0; o < s.outer; ++o) {
      for (int64_t i = 0; i < s.inner; ++i) {
        const int64_t k = index(o, c, i);
        out[k] = static_cast<int8_t>(roundClamped(w[k] / scale, -127, 127));
      }
    }
  }
  return q;
}

QuantizedConstant quantizeBias(const Tensor &bias, float inputScale, const std::vector<float> &weightScales) {
  const bool perChannel = weightScales.size() > 1;
  QuantizedConstant q{Tensor(DType::Int32, bias.sizes()), {}};
  q.params.dtype = DType::Int32;
  q.params.axis = perChannel ? 0 : -1;
  for (float ws : weightScales) q.params.scales.push_back(usableScale(inputScale * ws));
  q.params.zeroPoints.assign(weightScales.size(), 0);
  const float *b = bias.data<float>();
  int32_t *out = q.values.data<int32_t>();
  for (int64_t c = 0; c < bias.numel(); ++c) {
    const float scale = q.params.scales[perChannel ? static_cast<size_t>(c) : 0];
    // The quotient in float, as ORT computes it; the clamp in double, where int32's bounds are exact.
    out[c] = static_cast<int32_t>(roundClamped(b[c] / scale, -2147483648.0, 2147483647.0));
  }
  return q;
}

}  // namespace tessel
