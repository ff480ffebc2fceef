// Int8 depthwise convolution, channels-last, for QLinearConv: each output pixel sums its taps'
// (x - x_zero_point) * (w - w_zero_point) across the channels (vector lanes, exact integers in
// float registers), padding adding nothing, and requantizes them per channel, one pass over the
// input with nothing widened in memory. Three ISA builds (isa/<family>/depthwise_conv_s8.cpp), chosen at run time.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "support/thread_pool.h"
#include "targets/cpu/kernels/conv.h"
#include "targets/cpu/kernels/cpu_features.h"
#include "targets/cpu/kernels/depthwise_conv_s8_variants.h"

namespace tessel::cpu {

/// Whether depthwiseConvS8 runs `shape`: group == Cin == Cout, at most 256 taps.
bool runsDepthwiseConvS8(const Conv2dShape &shape);

/// W [C, 1, KH, KW] (u8, or s8 when `wSigned`) minus its zero point per channel, as int16
/// [KH * KW, C]: the layout the kernel reads.
std::vector<int16_t> packDepthwiseS8Weights(const Conv2dShape &shape, const void *w, bool wSigned,
                                            const std::vector<int32_t> &zeroPoints);

/// The requantization of each channel c: round((acc + bias[c]) * multiplier[c]) + zeroPoint.
struct DepthwiseS8Output {
  const int32_t *bias = nullptr;
  const float *multiplier = nullptr;
  float zeroPoint = 0.0f;
  bool ySigned = false;
};

/// Y [N, OH, OW, C] from X [N, H, W, C] (u8, or s8 when `xSigned`) and weights from
/// packDepthwiseS8Weights. Precondition: runsDepthwiseConvS8(shape). Threaded over output rows.
void depthwiseConvS8(const Conv2dShape &shape, const void *x, bool xSigned, int32_t xZero, const int16_t *weights,
                     const DepthwiseS8Output &output, void *y, ThreadPool *pool);

/// The variant the host runs, e.g. "s8_depthwise_conv2d_nhwc__avx512".
const char *depthwiseConvS8KernelName();

/// A build of the kernel: its name and the ISA bits it needs.
struct DepthwiseS8Variant {
  const char *name;
  Isa isa;
  void (*rows)(const DepthwiseS8Args &args);
};
/// Every variant, best first, so tests can run each one the host can.
std::span<const DepthwiseS8Variant> depthwiseConvS8Variants();
/// depthwiseConvS8 with the given variant instead of the host's choice. Precondition: the host has
/// the variant's ISA bits.
void depthwiseConvS8With(const DepthwiseS8Variant &variant, const Conv2dShape &shape, const void *x, bool xSigned,
                         int32_t xZero, const int16_t *weights, const DepthwiseS8Output &output, void *y,
                         ThreadPool *pool);

}  // namespace tessel::cpu
