// The contract between the int8 channels-last depthwise convolution driver (depthwise_conv_s8.cpp)
// and its per-ISA builds (isa/<family>/depthwise_conv_s8.cpp). Included by translation units
// compiled with AVX flags, so it holds only a plain struct and declarations.
#pragma once

#include <cstdint>

namespace tessel::cpu {

/// The most taps (kernel height x width) the kernel takes: its float sums are exact up to here
/// (depthwise_conv_s8_impl.h).
constexpr int64_t kMaxExactTaps = 256;

/// Output rows [rowBegin, rowEnd) of one image, every channel: acc = sum over the taps inside the
/// image of (x - xZero) * w (padding adds nothing; at most kMaxExactTaps taps), then y = round((acc + bias) * multiplier) +
/// yZero, saturated, per channel.
struct DepthwiseS8Args {
  const void *x = nullptr;          // One image, [inHeight, inWidth, channels], u8 or s8.
  const int16_t *weights = nullptr; // [kernelHeight * kernelWidth, channels], minus the weight zero points.
  const int32_t *bias = nullptr;    // channels values.
  const float *multiplier = nullptr;// channels values: x_scale * w_scale / y_scale.
  void *y = nullptr;                // One image, [outHeight, outWidth, channels], u8 or s8.
  bool xSigned = false, ySigned = false;
  int32_t xZero = 0;
  float yZero = 0.0f;
  int64_t channels = 0;
  int64_t rowBegin = 0, rowEnd = 0;
  int64_t inHeight = 0, inWidth = 0, outWidth = 0;
  int64_t kernelHeight = 0, kernelWidth = 0;
  int64_t strideHeight = 1, strideWidth = 1, dilationHeight = 1, dilationWidth = 1;
  int64_t padTop = 0, padLeft = 0;
};

void depthwiseS8Rows__avx512(const DepthwiseS8Args &args);
void depthwiseS8Rows__avx2(const DepthwiseS8Args &args);
void depthwiseS8Rows__generic(const DepthwiseS8Args &args);

}  // namespace tessel::cpu
