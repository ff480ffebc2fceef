// The int8 channels-last depthwise loop, compiled per ISA by isa/<family>/depthwise_conv_s8.cpp
// (which defines TESSEL_DEPTHWISE_S8_FN). Every loop runs over the channels, contiguous in x, the
// weights and y, so it vectorizes on int32 lanes; the requantization is quantize_impl.h's.
#pragma once

#include <cstddef>
#include <vector>

#include "targets/cpu/kernels/depthwise_conv_s8_variants.h"
#include "targets/cpu/kernels/vector_math.h"

namespace tessel::cpu {
namespace {

/// round_half_to_even(v) for |v| <= 2^22 (as quantize_impl.h).
inline float roundHalfEvenS8(float v) {
  constexpr float kShift = 12582912.0f;  // 1.5 * 2^23.
  return (v + kShift) - kShift;
}

// Channels per register block: 16 int32 sums are one zmm (two ymm), kept in registers over all
// the taps of a pixel; the sums of the last, narrower block go through the same loops at a runtime
// width.
constexpr int64_t kChannelBlock = 16;

/// One tap of an output pixel inside the image: where its input pixel and its weights start.
struct DepthwiseTap {
  int64_t input, weight;  // Element offsets into x and into the weights.
};

/// The sums and output of `width` channels (kWidth when it is not 0) from `channel` on, over the
/// pixel's taps inside the image.
template <int64_t kWidth, class X, class Y>
inline void depthwisePixel(const DepthwiseS8Args &a, const X *x, const DepthwiseTap *taps, int64_t tapCount,
                           Y *__restrict out, int64_t channel, int64_t width, float lo, float hi) {
  if constexpr (kWidth != 0) width = kWidth;
  const int32_t xZero = a.xZero;
  const int16_t *weights = a.weights + channel;
  x += channel;
  int32_t acc[kChannelBlock] = {};
  for (int64_t t = 0; t < tapCount; ++t) {
    const X *__restrict in = x + taps[t].input;
    const int16_t *__restrict w = weights + taps[t].weight;
    for (int64_t i = 0; i < width; ++i) acc[i] += (int32_t(in[i]) - xZero) * int32_t(w[i]);
  }
  // Locals, not reads through `a`: a store of 8-bit y may alias anything, which would reload them
  // every channel and keep the loop scalar.
  out += channel;
  const int32_t *__restrict bias = a.bias + channel;
  const float *__restrict multiplier = a.multiplier + channel;
  // Clamped to the integers that land in [lo, hi] after adding yZero, then rounded: the same as
  // rounding first (the bounds are integers), and small enough for roundHalfEvenS8.
  const float yZero = a.yZero, below = lo - yZero, above = hi - yZero;
  int32_t q[kChannelBlock];
  for (int64_t i = 0; i < width; ++i) {
    const float v = minFloat(maxFloat(float(acc[i] + bias[i]) * multiplier[i], below), above);
    q[i] = int32_t(roundHalfEvenS8(v) + yZero);
  }
  for (int64_t i = 0; i < width; ++i) out[i] = Y(q[i]);
}

template <class X, class Y>
void depthwiseRows(const DepthwiseS8Args &a) {
  const X *x = static_cast<const X *>(a.x);
  Y *y = static_cast<Y *>(a.y);
  const int64_t c = a.channels;
  const int64_t whole = c / kChannelBlock * kChannelBlock;
  const float lo = a.ySigned ? -128.0f : 0.0f, hi = a.ySigned ? 127.0f : 255.0f;
  // The taps inside the image, found once per pixel and shared by all its channel blocks.
  std::vector<DepthwiseTap> taps(static_cast<std::size_t>(a.kernelHeight * a.kernelWidth));
  for (int64_t oh = a.rowBegin; oh < a.rowEnd; ++oh) {
    for (int64_t ow = 0; ow < a.outWidth; ++ow) {
      int64_t count = 0;
      for (int64_t kh = 0; kh < a.kernelHeight; ++kh) {
        const int64_t ih = oh * a.strideHeight - a.padTop + kh * a.dilationHeight;
        if (ih < 0 || ih >= a.inHeight) continue;
        for (int64_t kw = 0; kw < a.kernelWidth; ++kw) {
          const int64_t iw = ow * a.strideWidth - a.padLeft + kw * a.dilationWidth;
          if (iw < 0 || iw >= a.inWidth) continue;
          taps[std::size_t(count++)] = {(ih * a.inWidth + iw) * c, (kh * a.kernelWidth + kw) * c};
        }
      }
      Y *out = y + (oh * a.outWidth + ow) * c;
      for (int64_t channel = 0; channel < whole; channel += kChannelBlock) {
        depthwisePixel<kChannelBlock>(a, x, taps.data(), count, out, channel, kChannelBlock, lo, hi);
      }
      if (whole < c) depthwisePixel<0>(a, x, taps.data(), count, out, whole, c - whole, lo, hi);
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
