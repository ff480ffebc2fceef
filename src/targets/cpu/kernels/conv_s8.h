// ConvInteger and QLinearConv (group 1) on the int8 GEMM (gemm_s8.h) as the transposed product, so
// the constant weights are the GEMM's B: C[pixels, Cout] = patches[pixels, K] x W^T[K, Cout],
// K = KH * KW * Cin. A channels-first image is first copied channels-last into scratch with its
// padding; a channels-last one is read where it is. A patch row is then KH * KW copies of Cin
// contiguous bytes, in (kh, kw, c) order, the order W^T is packed in, gathered straight into the
// GEMM's packed A, with taps in the padding filled with the input zero point (so they add nothing
// once it is subtracted). A 1x1 conv with stride 1 needs no gather: its patch rows are the
// channels-last image itself. Pixels run in chunks that keep the packed patches (and any int32
// sums) about L2-sized; the GEMM requantizes a channels-last chunk straight into Y, and a
// channels-first chunk's results are transposed into the NCHW output.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "support/thread_pool.h"
#include "targets/cpu/kernels/conv.h"
#include "targets/cpu/kernels/gemm_s8.h"

namespace tessel::cpu {

/// How convS8 runs one shape; built at lowering by planConvS8.
struct ConvS8Plan {
  Conv2dShape shape;
  const S8GemmKernel *kernel = nullptr;
  int64_t paddedHeight = 0, paddedWidth = 0;  // The extent the windows read (a channels-first X's copy).
  int64_t chunkRows = 0;                      // Output pixels per GEMM call.
  bool direct = false;                        // 1x1, stride 1 (no padding when channels-last): X's
                                              // channels-last pixels are the GEMM's A.
  bool channelsLast = false;                  // X [N, H, W, C], read in place, and Y [N, OH, OW, Cout].

  int64_t k() const { return shape.kernelHeight * shape.kernelWidth * shape.inChannels; }
};

/// The plan for a group-1 `shape` on `kernel`, X and Y channels-first or (`channelsLast`, with a
/// requantized Y only) channels-last. Requires shape.group == 1 and k() <= kS8GemmMaxK.
ConvS8Plan planConvS8(const Conv2dShape &shape, const S8GemmKernel &kernel, bool channelsLast = false);

/// Bytes packConvS8Weights writes.
size_t convS8PackedWeightsBytes(const ConvS8Plan &plan);

/// Packs W [Cout, Cin, KH, KW] (u8, or s8 when `wSigned`) as the GEMM's B = W^T in (kh, kw, c)
/// row order, with one zero point per output channel, into dst (64-byte aligned).
void packConvS8Weights(const ConvS8Plan &plan, const void *w, bool wSigned, const int32_t *zeroPoints,
                       std::byte *dst);

/// Scratch bytes convS8 needs (64-byte aligned), the same for any number of threads.
size_t convS8ScratchBytes(const ConvS8Plan &plan);

/// y [N, Cout, OH, OW] = (x - xZero) conv (w - wZero), exact, for x [N, Cin, H, W] (u8, or s8 when
/// `xSigned`) and weights packed by packConvS8Weights: int32 when `requantize` is null, else u8 or
/// s8 requantized (per output channel) by the GEMM while the sums are in registers. A channels-last
/// plan reads x [N, H, W, Cin] and writes y [N, OH, OW, Cout], and requires `requantize`.
void convS8(const ConvS8Plan &plan, const void *x, bool xSigned, int32_t xZero, const std::byte *packedW, void *y,
            const S8Requantization *requantize, ThreadPool *pool, std::span<std::byte> scratch);

}  // namespace tessel::cpu
