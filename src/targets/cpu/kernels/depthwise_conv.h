// Depthwise 2-D convolution on NCHW f32 (group == Cin, each output channel reads one input
// channel; Cout may be a multiple of Cin): a direct kernel, since a GEMM with K = KH*KW would be
// all packing and no arithmetic. Each output row accumulates one kernel row at a time over the
// output width, the loop the compiler vectorizes, with the taps that reach into the padding
// trimmed off the ends of the row rather than tested per element. Bias and the residual seed the
// row; the activation runs on each finished plane while it is in cache. Threaded over
// (image, channel) planes; the loop is compiled once per ISA (isa/<family>/depthwise_conv.cpp) and
// chosen at run time.
#pragma once

#include <cstdint>

#include "support/thread_pool.h"
#include "targets/cpu/kernels/conv.h"

namespace tessel::cpu {

/// True when `shape` is a depthwise convolution this kernel runs: one input channel per group.
bool isDepthwise(const Conv2dShape &shape);

/// Y = act(Conv(X, W) + bias + Z). W is [Cout, 1, KH, KW], dense. Precondition: isDepthwise(shape).
/// `pool` may be null (one thread). Allocates nothing.
void depthwiseConv2d(const Conv2dShape &shape, const float *x, const float *weights, const ConvEpilogue &epilogue,
                     float *y, ThreadPool *pool);

/// The variant the host runs, e.g. "f32_depthwise_conv2d__avx512".
const char *depthwiseConvKernelName();

}  // namespace tessel::cpu
