// 2-D convolution channels-last (NHWC) for the cpu target: Y = act(Conv(X, W) + bias + Z) with
// X [N, H, W, Cin], Y and Z [N, OH, OW, Cout], group 1 (depthwise convs have their own kernel).
//
// Channels-last, a convolution is one GEMM: Y[N*OH*OW, Cout] = A[N*OH*OW, K] x B[K, Cout] with
// K = (kh, kw, cin) and B the weights, packed once at compile time. Output channels lie along the
// microkernel's vector width (Cout is a multiple of 16 in most networks, so no lane is wasted),
// and output pixels along its rows. Row r of A is output pixel r's window: for one kernel tap it
// is the Cin consecutive floats of one input pixel (or of a zero row where the tap falls in the
// padding), so A is never built: the GEMM reads it in place through row pointers (IndirectA,
// gemm.h) in K blocks that stay inside one tap. Only with few input channels (an RGB stem), where
// a tap's run is too short for a K block, are the rows gathered into scratch, a chunk of pixels
// at a time, with all of K contiguous.
//
// Threading: the GEMM splits the output over the pool; gathered chunks are split over the pool,
// each task with its own scratch slot.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "support/thread_pool.h"
#include "targets/cpu/kernels/conv.h"
#include "targets/cpu/kernels/gemm.h"

namespace tessel::cpu {

/// How convNhwc runs one shape; built at compile time by planConvNhwc.
struct ConvNhwcPlan {
  Conv2dShape shape;
  const GemmKernel *kernel = nullptr;
  bool gathersRows = false;  // Few input channels: windows gathered into scratch chunks.
  int64_t rowChunk = 0;      // Output pixels per gathered chunk.
  int64_t chunks = 0;
  int slots = 1;               // Scratch slots: one per task over gathered chunks.
  size_t zerosBytes = 0;       // The zero row padding taps point at (read in place).
  size_t rowsBytes = 0;        // One gathered chunk.
  size_t gemmScratchBytes = 0;
  size_t slotBytes = 0;
};

/// True when convNhwc runs `shape`: group 1.
bool runsConvNhwc(const Conv2dShape &shape);

/// True when a GEMM variant taking kPack values of K per word can run `shape`: its window rows are
/// gathered, or each pixel's channels are a whole number of words.
bool convNhwcTakesPacked(const Conv2dShape &shape, int kPack);

/// Chooses the mode, chunking and scratch for `shape` on `threads` threads with GEMM variant
/// `kernel` (one convNhwcTakesPacked allows). Precondition: runsConvNhwc(shape), positive sizes.
ConvNhwcPlan planConvNhwc(const Conv2dShape &shape, int threads, const GemmKernel &kernel);

/// Bytes of the packed weights.
size_t convNhwcPackedWeightsBytes(const ConvNhwcPlan &plan);

/// Packs W [Cout, Cin, KH, KW] as the GEMM's B [(kh, kw, cin), Cout] into dst
/// (convNhwcPackedWeightsBytes bytes, 64-byte aligned).
void packConvNhwcWeights(const ConvNhwcPlan &plan, const float *weights, float *dst);

/// Scratch bytes convNhwc needs.
size_t convNhwcScratchBytes(const ConvNhwcPlan &plan);

/// Y = act(Conv(X, W) + bias + Z) channels-last, with W packed by packConvNhwcWeights. The
/// residual may be Y itself. `scratch` holds convNhwcScratchBytes bytes, 64-byte aligned; `pool`
/// may be null (one thread). Allocates nothing.
void convNhwc(const ConvNhwcPlan &plan, const float *x, const float *packedWeights, const ConvEpilogue &epilogue,
              float *y, std::byte *scratch, ThreadPool *pool);

/// The kernel's name for reports, e.g. "conv2d_nhwc_indirect_gemm f32_gemm_6x32__avx512".
std::string convNhwcKernelName(const ConvNhwcPlan &plan);

}  // namespace tessel::cpu
