// 2-D convolution on NCHW f32 for the cpu target: Y = act(Conv(X, W) + bias + Z).
//
// Two kernels cover the convolutions of the target models:
//   - convGemm: per image and group, Y[Cout/g, OH*OW] = W[Cout/g, K] x cols[K, OH*OW] with
//     K = Cin/g * KH * KW. The weights are the GEMM's A operand, packed once at compile time
//     (packConvWeights). A 1x1 stride-1 unpadded conv reads X as B directly; any other conv
//     gathers its columns (im2col.h) into scratch, a chunk of output positions at a time so the
//     chunk stays in L2 while the GEMM streams it. Bias, residual and activation run in the GEMM
//     epilogue.
//   - depthwiseConv2d (depthwise_conv.h): one input channel per group, a direct kernel.
//
// Threading: convGemm splits (image, group, column chunk) items over the pool when there are
// enough of them to balance, each task with its own scratch slot; otherwise it runs the items in
// order and lets the GEMM split each product over the pool. The choice is made once per shape
// (planConvGemm), so the scratch size is known at compile time.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "support/thread_pool.h"
#include "targets/cpu/kernels/activation.h"
#include "targets/cpu/kernels/gemm.h"

namespace tessel::cpu {

/// The geometry of one 2-D convolution (1-D convs are 2-D ones with height 1). The end pads are
/// implied by the output sizes.
struct Conv2dShape {
  int64_t batch = 1;
  int64_t inChannels = 1;
  int64_t inHeight = 1;
  int64_t inWidth = 1;
  int64_t outChannels = 1;
  int64_t outHeight = 1;
  int64_t outWidth = 1;
  int64_t group = 1;
  int64_t kernelHeight = 1;
  int64_t kernelWidth = 1;
  int64_t strideHeight = 1;
  int64_t strideWidth = 1;
  int64_t dilationHeight = 1;
  int64_t dilationWidth = 1;
  int64_t padTop = 0;
  int64_t padLeft = 0;

  int64_t inPerGroup() const { return inChannels / group; }
  int64_t outPerGroup() const { return outChannels / group; }
  int64_t inPlane() const { return inHeight * inWidth; }
  int64_t outPlane() const { return outHeight * outWidth; }
  /// Rows of the im2col matrix (the GEMM's K): input channels of a group times kernel taps.
  int64_t columnRows() const { return inPerGroup() * kernelHeight * kernelWidth; }
  /// Multiply-adds times two, for reports.
  double flops() const {
    return 2.0 * double(batch) * double(outChannels) * double(outPlane()) * double(columnRows());
  }
};

/// What happens to each output of a convolution: y = act(conv + bias[channel] + residual).
struct ConvEpilogue {
  const float *bias = nullptr;      // outChannels floats, or null.
  const float *residual = nullptr;  // Y's shape (N, Cout, OH, OW), dense, or null. May be Y itself.
  Activation activation;
};

/// How convGemm runs one shape; built at compile time by planConvGemm.
struct ConvGemmPlan {
  Conv2dShape shape;
  const GemmKernel *kernel = nullptr;
  bool readsInputDirectly = false;  // 1x1, stride 1, no pads: X is the GEMM's B.
  int64_t columnChunk = 0;          // Output positions per item.
  int64_t chunksPerPlane = 0;
  int threads = 1;                  // Threads the plan was made for.
  bool splitItems = false;          // Items over the pool (else the GEMM splits each product).
  size_t columnsBytes = 0;          // One im2col chunk (0 when reading X directly).
  size_t gemmScratchBytes = 0;      // The GEMM's packing buffers for one call.
  size_t slotBytes = 0;             // columnsBytes + gemmScratchBytes, rounded to 64.
  int slots = 1;                    // Scratch slots: one per task when splitting items.
};

/// Chooses the chunking and partition for `shape` on `threads` threads with the selected GEMM
/// variant. Precondition: the shape is valid (positive sizes, channels divisible by group).
ConvGemmPlan planConvGemm(const Conv2dShape &shape, int threads);

/// Bytes of the packed weights (every group's A panel, 64-byte aligned each).
size_t convPackedWeightsBytes(const ConvGemmPlan &plan);

/// Packs W [Cout, Cin/g, KH, KW] into dst (convPackedWeightsBytes bytes, 64-byte aligned).
void packConvWeights(const ConvGemmPlan &plan, const float *weights, float *dst);

/// Scratch bytes convGemm needs.
size_t convGemmScratchBytes(const ConvGemmPlan &plan);

/// Y = act(Conv(X, W) + bias + Z) with W packed by packConvWeights. `scratch` holds
/// convGemmScratchBytes bytes, 64-byte aligned. `pool` may be null (one thread).
void convGemm(const ConvGemmPlan &plan, const float *x, const float *packedWeights, const ConvEpilogue &epilogue,
              float *y, std::byte *scratch, ThreadPool *pool);

/// The kernel's name for reports, e.g. "conv2d_im2col_gemm f32_gemm_6x32__avx512".
std::string convGemmKernelName(const ConvGemmPlan &plan);

}  // namespace tessel::cpu
