// 2-D transposed convolution (ConvTranspose) on NCHW f32 for the cpu target, as GEMM + col2im:
// per image and group, cols[Cout/g * KH * KW, pixels] = Wᵀ[Cout/g * KH * KW, Cin/g] x X[Cin/g, pixels],
// then every column entry is added into the output pixel its tap lands on. The weights are the
// GEMM's A, packed once (transposed from W's [Cin, Cout/g, KH, KW]). X is taken a chunk of input
// rows at a time so the columns stay in L2; Y starts as the bias and the chunks accumulate into it
// in order, so taps that overlap (kernel larger than the stride) need no synchronization.
//
// Threading: the GEMM of each chunk splits over the pool; the col2im splits over output channels.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "support/thread_pool.h"
#include "targets/cpu/kernels/conv.h"
#include "targets/cpu/kernels/gemm.h"

namespace tessel::cpu {

/// How convTranspose runs one shape. In `shape`, in* are X's sizes and out* Y's, padTop/padLeft
/// how much of the full transposed result is cut from the start (the reference's padBegin), and W
/// is [inChannels, outChannels/group, kernelHeight, kernelWidth].
struct ConvTransposePlan {
  Conv2dShape shape;
  const GemmKernel *kernel = nullptr;
  int64_t chunkRows = 1;        // Input rows per GEMM.
  int threads = 1;
  size_t columnsBytes = 0;      // One chunk's columns, rounded to 64.
  size_t gemmScratchBytes = 0;  // The GEMM's buffers for one chunk.

  /// Rows of the column matrix: output channels of a group times kernel taps.
  int64_t columnRows() const { return shape.outPerGroup() * shape.kernelHeight * shape.kernelWidth; }
};

/// Chooses the chunking for `shape` on `threads` threads. Precondition: positive sizes, channels
/// divisible by group.
ConvTransposePlan planConvTranspose(const Conv2dShape &shape, int threads);

/// Bytes of the packed weights (one A panel per group, 64-byte aligned each).
size_t convTransposePackedWeightsBytes(const ConvTransposePlan &plan);

/// Packs W [Cin, Cout/g, KH, KW] into dst (convTransposePackedWeightsBytes bytes, 64-byte aligned).
void packConvTransposeWeights(const ConvTransposePlan &plan, const float *weights, float *dst);

/// Scratch bytes convTranspose needs (64-byte aligned).
size_t convTransposeScratchBytes(const ConvTransposePlan &plan);

/// Y = ConvTranspose(X, W) + bias (bias: outChannels floats, or null). `pool` may be null.
void convTranspose(const ConvTransposePlan &plan, const float *x, const float *packedWeights, const float *bias,
                   float *y, std::byte *scratch, ThreadPool *pool);

/// The kernel's name for reports, e.g. "conv_transpose2d_gemm_col2im f32_gemm_6x32__avx512".
std::string convTransposeKernelName(const ConvTransposePlan &plan);

}  // namespace tessel::cpu
