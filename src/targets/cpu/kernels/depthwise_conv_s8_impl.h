// The int8 channels-last depthwise loop, compiled per ISA by isa/<family>/depthwise_conv_s8.cpp
// (which defines TESSEL_DEPTHWISE_S8_FN). Every loop runs over the channels, contiguous in x, the
// weights and y, so it vectorizes on int32 lanes; the requantization is quantize_impl.h's.
#pragma once

#include "targets/cpu/kernels/depthwise_conv_s8_variants.h"
#include "targets/cpu/kernels/vector_math.h"

namespace tessel::cpu {
namespace {

/// round_half_to_even(v) for |v| <= 2^22 (as quantize_impl.h).
inline float roundHalfEvenS8(float v) {
  constexpr float kShift = 12582912.0f;  // 1.5 * 2^23.
  return (v + kShift) - kShift;
}

template <class X>
void accumulateTap(const X *x, const int16_t *w, int32_t xZero, int32_t *acc, int64_t channels) {
  for (int64_t c = 0; c < channels; ++c) acc[c] += (int32_t(x[c]) - xZero) * int32_t(w[c]);
}

template <class Y>
void requantizeRow(const int32_t *acc, const int32_t *bias, const float *multiplier, float yZero, float lo, float hi,
                   Y *y, int64_t channels) {
  for (int64_t c = 0; c < channels; ++c) {
    const float v = minFloat(maxFloat(float(acc[c] + bias[c]) * multiplier[c], -1024.0f), 1024.0f);
    y[c] = Y(int32_t(minFloat(maxFloat(roundHalfEvenS8(v) + yZero, lo), hi)));
  }
}

template <class X, class Y>
void depthwiseRows(const DepthwiseS8Args &a) {
  const X *x = static_cast<const X *>(a.x);
  Y *y = static_cast<Y *>(a.y);
  const int64_t c = a.channels;
  const float lo = a.ySigned ? -128.0f : 0.0f, hi = a.ySigned ? 127.0f : 255.0f;
  for (int64_t oh = a.rowBegin; oh < a.rowEnd; ++oh) {
    for (int64_t ow = 0; ow < a.outWidth; ++ow) {
      for (int64_t ch = 0; ch < c; ++ch) a.acc[ch] = 0;
      for (int64_t kh = 0; kh < a.kernelHeight; ++kh) {
        const int64_t ih = oh * a.strideHeight - a.padTop + kh * a.dilationHeight;
        if (ih < 0 || ih >= a.inHeight) continue;
        for (int64_t kw = 0; kw < a.kernelWidth; ++kw) {
          const int64_t iw = ow * a.strideWidth - a.padLeft + kw * a.dilationWidth;
          if (iw < 0 || iw >= a.inWidth) continue;
          accumulateTap(x + (ih * a.inWidth + iw) * c, a.weights + (kh * a.kernelWidth + kw) * c, a.xZero, a.acc, c);
        }
      }
      requantizeRow(a.acc, a.bias, a.multiplier, a.yZero, lo, hi, y + (oh * a.outWidth + ow) * c, c);
    }
  }
}

}  // namespace

void TESSEL_DEPTHWISE_S8_FN(const DepthwiseS8Args &args) {
  if (args.xSigned) {
    args.ySigned ? depthwiseRows<int8_t, int8_t>(args) : depthwiseRows<int8_t, uint8_t>(args);
  } else {
    args.ySigned ? depthwiseRows<uint8_t, int8_t>(args) : depthwiseRows<uint8_t, uint8_t>(args);
  }
}

}  // namespace tessel::cpu
