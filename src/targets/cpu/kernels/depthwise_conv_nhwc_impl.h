// The float channels-last depthwise loop: depthwise_conv_nhwc_rows.h with float elements, compiled
// per ISA by isa/<family>/depthwise_conv_nhwc.cpp, which defines TESSEL_DEPTHWISE_NHWC_FN (the
// exported name) and the row loop's TESSEL_DEPTHWISE_NHWC_{LANES,PIXELS}.
#include "targets/cpu/kernels/depthwise_conv_nhwc_variants.h"

#ifndef TESSEL_DEPTHWISE_NHWC_FN
#error "define TESSEL_DEPTHWISE_NHWC_FN before including depthwise_conv_nhwc_impl.h"
#endif

#include "targets/cpu/kernels/depthwise_conv_nhwc_rows.h"

namespace tessel::cpu {
namespace {

static_assert(kDepthwiseNhwcChannelBlock % kLanes == 0, "a channel block must hold whole vectors");

/// Loads `count` channels (all of a vector unless kPartial); the lanes past count are zero. The
/// partial form is only for the last vector of an image's channels, which may end at the buffer's end.
template <bool kPartial>
TESSEL_DW_NHWC_INLINE Vec loadChannels(const float *p, int count) {
  if constexpr (!kPartial) {
    return loadVec(p);
  } else {
    Vec v = {};
    for (int i = 0; i < count; ++i) v[i] = p[i];
    return v;
  }
}

/// The float element policy of the row loop: y = clamp(sum + bias + residual).
struct FloatDepthwise {
  using Args = DepthwiseNhwcArgs;
  using Input = float;

  const float *weights;  // This vector's first tap; taps are paddedChannels apart (zero padded).
  int64_t tapStride, kernelWidthValue, channels;
  const float *residualRow;  // Null without a residual.
  float *yRow;
  Vec bias, low, high;
  int count;

  TESSEL_DW_NHWC_INLINE FloatDepthwise(const Args &a, int64_t oh, int64_t channel, int channelCount)
      : weights(a.weights + channel),
        tapStride(a.paddedChannels),
        kernelWidthValue(a.kernelWidth),
        channels(a.channels),
        residualRow(a.residual != nullptr ? a.residual + oh * a.outWidth * a.channels + channel : nullptr),
        yRow(a.y + oh * a.outWidth * a.channels + channel),
        bias(a.bias != nullptr ? (channelCount == kLanes ? loadChannels<false>(a.bias + channel, kLanes)
                                                         : loadChannels<true>(a.bias + channel, channelCount))
                               : Vec{}),
        // Bounds of -inf and +inf when there is no ReLU/Clip: cheaper than a second instantiation.
        low(Vec{} + a.clampLow),
        high(Vec{} + a.clampHigh),
        count(channelCount) {}

  TESSEL_DW_NHWC_INLINE int64_t kernelWidth() const { return kernelWidthValue; }
  TESSEL_DW_NHWC_INLINE Vec tap(int64_t t) const { return loadVec(weights + t * tapStride); }

  template <bool kPartial>
  TESSEL_DW_NHWC_INLINE Vec load(const float *p) const {
    return loadChannels<kPartial>(p, count);
  }

  template <bool kPartial>
  TESSEL_DW_NHWC_INLINE Vec start(int64_t ow) const {
    Vec v = bias;
    if (residualRow != nullptr) v += loadChannels<kPartial>(residualRow + ow * channels, count);
    return v;
  }

  template <bool kPartial>
  TESSEL_DW_NHWC_INLINE void finish(int64_t ow, Vec v) const {
    v = v < low ? low : v;
    v = v > high ? high : v;
    float *out = yRow + ow * channels;
    if constexpr (!kPartial) {
      storeVec(out, v);
    } else {
      for (int i = 0; i < count; ++i) out[i] = v[i];
    }
  }
};

}  // namespace

void TESSEL_DEPTHWISE_NHWC_FN(const DepthwiseNhwcArgs &args) {
  convolveDepthwiseRows<FloatDepthwise>(args, args.channelBegin, args.channelEnd);
}

}  // namespace tessel::cpu
