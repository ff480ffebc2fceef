// The contract between the channels-last depthwise convolution driver (depthwise_conv.cpp) and its
// per-ISA builds (isa/<family>/depthwise_conv_nhwc.cpp). Included by translation units compiled
// with AVX flags, so it holds only a plain struct and declarations (see gemm_microkernel.h for why).
#pragma once

#include <cstdint>

namespace tessel::cpu {

/// Channels per block of the packed weights: a multiple of every variant's vector width, so the
/// packing (stored in artifacts) is the same whichever ISA runs it, and a task's channel range,
/// made of whole blocks, is made of whole vectors.
constexpr int64_t kDepthwiseNhwcChannelBlock = 16;

/// Output rows [rowBegin, rowEnd) of one image, channels [channelBegin, channelEnd):
/// y = min(max(conv(x, weights) + bias + residual, clampLow), clampHigh): ReLU and Clip in
/// registers; -inf and +inf without them.
struct DepthwiseNhwcArgs {
  const float *x = nullptr;         // One image, [inHeight, inWidth, channels].
  const float *weights = nullptr;   // [kernelHeight * kernelWidth, paddedChannels], zero padded.
  const float *bias = nullptr;      // channels floats, or null.
  const float *residual = nullptr;  // One image, [outHeight, outWidth, channels], or null. May equal y.
  float *y = nullptr;               // One image, [outHeight, outWidth, channels].
  int64_t channels = 0, paddedChannels = 0;
  int64_t channelBegin = 0, channelEnd = 0;  // channelBegin is a multiple of kDepthwiseNhwcChannelBlock.
  int64_t rowBegin = 0, rowEnd = 0;
  int64_t inHeight = 0, inWidth = 0, outHeight = 0, outWidth = 0;
  int64_t kernelHeight = 0, kernelWidth = 0;
  int64_t strideHeight = 1, strideWidth = 1, dilationHeight = 1, dilationWidth = 1;
  int64_t padTop = 0, padLeft = 0;
  float clampLow = -__builtin_inff(), clampHigh = __builtin_inff();
};

using DepthwiseNhwcFn = void (*)(const DepthwiseNhwcArgs &args);

void depthwiseNhwcRows__avx512(const DepthwiseNhwcArgs &args);
void depthwiseNhwcRows__avx2(const DepthwiseNhwcArgs &args);
void depthwiseNhwcRows__generic(const DepthwiseNhwcArgs &args);

}  // namespace tessel::cpu
