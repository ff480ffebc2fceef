// Depthwise 2-D convolution on NCHW f32 (group == Cin, each output channel reads one input
// channel; Cout may be a multiple of Cin): a direct kernel, since a GEMM with K = KH*KW would be
// all packing and no arithmetic. Each output row accumulates one kernel row at a time over the
// output width, the loop the compiler vectorizes, with the taps that reach into the padding
// trimmed off the ends of the row rather than tested per element. Bias and the residual seed the
// row; the activation runs on each finished plane while it is in cache. Threaded over
// (image, channel) planes; the loop is compiled once per ISA (isa/<family>/depthwise_conv.cpp) and
// chosen at run time.
//
// The channels-last kernel (depthwiseConv2dNhwc, X [N, H, W, C]) vectorizes across channels, which
// are contiguous: for each output row and vector of channels it keeps a fixed kernel's tap vectors
// in registers and accumulates a block of output pixels at once (depthwise_conv_nhwc_rows.h, the
// row loop the int8 kernel shares, with float elements in depthwise_conv_nhwc_impl.h). The
// weights are packed once as [KH, KW, C padded to 16]. Threaded over (image, output row range,
// channel range) so that even a 7x7 plane splits evenly.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "support/thread_pool.h"
#include "targets/cpu/kernels/conv.h"
#include "targets/cpu/kernels/cpu_features.h"
#include "targets/cpu/kernels/depthwise_conv_nhwc_variants.h"

namespace tessel::cpu {

/// True when `shape` is a depthwise convolution this kernel runs: one input channel per group.
bool isDepthwise(const Conv2dShape &shape);

/// Y = act(Conv(X, W) + bias + Z). W is [Cout, 1, KH, KW], dense. Precondition: isDepthwise(shape).
/// `pool` may be null (one thread). Allocates nothing.
void depthwiseConv2d(const Conv2dShape &shape, const float *x, const float *weights, const ConvEpilogue &epilogue,
                     float *y, ThreadPool *pool);

/// The variant the host runs, e.g. "f32_depthwise_conv2d__avx512".
const char *depthwiseConvKernelName();

/// True when `shape` is a depthwise convolution the channels-last kernel runs: group == Cin == Cout
/// > 1.
bool isDepthwiseNhwc(const Conv2dShape &shape);
/// Bytes of the channels-last packed weights (64-byte aligned size).
size_t depthwiseNhwcWeightsBytes(const Conv2dShape &shape);
/// Packs W [C, 1, KH, KW] into dst (depthwiseNhwcWeightsBytes bytes, 64-byte aligned) in the layout
/// the kernel wants: [KH, KW, C] with C padded with zeros to a multiple of 16 (every variant's
/// vector width divides it, so the packing does not depend on the host's ISA).
void packDepthwiseWeightsNhwc(const Conv2dShape &shape, const float *weights, float *dst);
/// Y = act(Conv(X, W) + bias + Z) channels-last: X [N, H, W, C], Y and Z [N, OH, OW, C] dense (Z may
/// equal Y: read each element before writing it). Precondition: isDepthwiseNhwc(shape). `pool` may
/// be null. Allocates nothing.
void depthwiseConv2dNhwc(const Conv2dShape &shape, const float *x, const float *packedWeights,
                         const ConvEpilogue &epilogue, float *y, ThreadPool *pool);
/// The variant the host runs, e.g. "f32_depthwise_conv2d_nhwc__avx512".
const char *depthwiseConvNhwcKernelName();

/// A build of the channels-last kernel: its name and the ISA bits it needs.
struct DepthwiseNhwcVariant {
  const char *name;
  Isa isa;
  DepthwiseNhwcFn rows;
};
/// Every channels-last variant, best first, so tests and benchmarks can run each one the host can.
std::span<const DepthwiseNhwcVariant> depthwiseNhwcVariants();
/// depthwiseConv2dNhwc with the given variant instead of the host's choice. Precondition: the
/// host has the variant's ISA bits.
void depthwiseConv2dNhwcWith(const DepthwiseNhwcVariant &variant, const Conv2dShape &shape, const float *x,
                             const float *packedWeights, const ConvEpilogue &epilogue, float *y, ThreadPool *pool);

}  // namespace tessel::cpu
