// Pooling on NCHW f32 for the cpu target: MaxPool and AveragePool over 2-D windows (1-D pools are
// 2-D ones with height 1), and the global forms. A windowed pool works one output row at a time:
// each kernel row that lands in the input is folded into the row over the output width (the
// vectorized loop), with the taps that reach into the padding trimmed off the row's ends, as in
// the depthwise convolution. The loops are compiled per ISA (isa/<family>/pool_2d.cpp) and chosen
// at run time; every pool is threaded over (image, channel) planes.
//
// The channels-last forms (X [N, H, W, C], Y [N, OH, OW, C]) fold each window's taps along the
// contiguous channels (pool_nhwc_impl.h, compiled per ISA as isa/<family>/pool_nhwc.cpp) and are
// threaded over (image, output row range, channel range) blocks, or (image, channel range) for the
// global pool.
#pragma once

#include <cstdint>
#include <span>

#include "support/thread_pool.h"
#include "targets/cpu/kernels/cpu_features.h"
#include "targets/cpu/kernels/pool_nhwc_variants.h"

namespace tessel::cpu {

/// The geometry of a 2-D pool. End pads matter only to count_include_pad.
struct Pool2dShape {
  int64_t batch = 1;
  int64_t channels = 1;
  int64_t inHeight = 1;
  int64_t inWidth = 1;
  int64_t outHeight = 1;
  int64_t outWidth = 1;
  int64_t kernelHeight = 1;
  int64_t kernelWidth = 1;
  int64_t strideHeight = 1;
  int64_t strideWidth = 1;
  int64_t dilationHeight = 1;
  int64_t dilationWidth = 1;
  int64_t padTop = 0;
  int64_t padLeft = 0;
  int64_t padBottom = 0;
  int64_t padRight = 0;
};

/// Y = the maximum over each window. Precondition: every window covers at least one input
/// element (the lowering checks it). `pool` may be null.
void maxPool2d(const Pool2dShape &shape, const float *x, float *y, ThreadPool *pool);

/// Y = the mean over each window: divided by the window's input elements, or with
/// `countIncludePad` by its elements inside the padded input (never past the end pads, which a
/// ceil_mode window can reach).
void averagePool2d(const Pool2dShape &shape, bool countIncludePad, const float *x, float *y, ThreadPool *pool);

/// Y[p] = the mean (or maximum) of plane p of X, for `planes` planes of `planeSize` floats.
void globalAveragePool(int64_t planes, int64_t planeSize, const float *x, float *y, ThreadPool *pool);
void globalMaxPool(int64_t planes, int64_t planeSize, const float *x, float *y, ThreadPool *pool);

/// The variant the host runs, e.g. "f32_pool2d__avx512".
const char *poolKernelName();

/// maxPool2d and averagePool2d channels-last: X [N, H, W, C], Y [N, OH, OW, C]; the same window,
/// padding, dilation and ceil-mode conventions.
void maxPool2dNhwc(const Pool2dShape &shape, const float *x, float *y, ThreadPool *pool);
void averagePool2dNhwc(const Pool2dShape &shape, bool countIncludePad, const float *x, float *y, ThreadPool *pool);
/// MaxPool of X [N, H, W, C] of bytes (u8, or s8 when `isSigned`: quantized activations, whose
/// maximum is that of their dequantized values) into Y [N, OH, OW, C]; padding is never the maximum.
void maxPool2dNhwcBytes(const Pool2dShape &shape, const void *x, bool isSigned, void *y, ThreadPool *pool);
/// Y[n, c] = mean over the `plane` positions of X [N, plane, C].
void globalAveragePoolNhwc(int64_t batch, int64_t plane, int64_t channels, const float *x, float *y, ThreadPool *pool);

/// The channels-last variant the host runs, e.g. "f32_pool2d_nhwc__avx512".
const char *poolNhwcKernelName();

/// A build of the channels-last pooling loops: its name and the ISA bits it needs.
struct PoolNhwcVariant {
  const char *name;
  Isa isa;
  const PoolNhwcFunctions *functions;
};
/// Every channels-last variant, best first, so tests can run each one the host can.
std::span<const PoolNhwcVariant> poolNhwcVariants();
/// The channels-last pools with the given variant instead of the host's choice. Precondition: the
/// host has the variant's ISA bits.
void maxPool2dNhwcWith(const PoolNhwcVariant &variant, const Pool2dShape &shape, const float *x, float *y,
                       ThreadPool *pool);
void maxPool2dNhwcBytesWith(const PoolNhwcVariant &variant, const Pool2dShape &shape, const void *x, bool isSigned,
                            void *y, ThreadPool *pool);
void averagePool2dNhwcWith(const PoolNhwcVariant &variant, const Pool2dShape &shape, bool countIncludePad,
                           const float *x, float *y, ThreadPool *pool);
void globalAveragePoolNhwcWith(const PoolNhwcVariant &variant, int64_t batch, int64_t plane, int64_t channels,
                               const float *x, float *y, ThreadPool *pool);

}  // namespace tessel::cpu
