// The channels-last convolution (see conv_nhwc.h): planning, weight packing, the row pointers of
// the implicit GEMM and the gathered-chunk loop.
#include "targets/cpu/kernels/conv_nhwc.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "targets/cpu/kernels/conv_parallel.h"

namespace tessel::cpu {
namespace {

constexpr size_t kAlignBytes = 64;
// Below this many input channels a tap's run is too short a K block for the microkernel (its
// accumulators are loaded and stored once per block), so windows are gathered instead.
constexpr int64_t kMinChannelsInPlace = 16;
// A gathered chunk stays in L2 while the GEMM streams it.
constexpr int64_t kGatheredChunkBytes = 256 * 1024;
// Chunks per thread, so uneven chunks still balance.
constexpr int64_t kChunksPerThread = 4;

size_t roundUpBytes(size_t bytes) { return (bytes + kAlignBytes - 1) / kAlignBytes * kAlignBytes; }

int64_t outputPixels(const Conv2dShape &s) { return s.batch * s.outHeight * s.outWidth; }

int64_t windowSize(const Conv2dShape &s) { return s.kernelHeight * s.kernelWidth * s.inChannels; }

/// Walks output pixels in row-major (image, oh, ow) order.
struct PixelCursor {
  int64_t image, oh, ow;

  PixelCursor(const Conv2dShape &s, int64_t pixel)
      : image(pixel / (s.outHeight * s.outWidth)),
        oh(pixel / s.outWidth % s.outHeight),
        ow(pixel % s.outWidth) {}

  void advance(const Conv2dShape &s) {
    if (++ow < s.outWidth) return;
    ow = 0;
    if (++oh < s.outHeight) return;
    oh = 0;
    ++image;
  }

  /// The input pixel tap (kh, kw) reads, or null in the padding.
  const float *tap(const Conv2dShape &s, const float *x, int64_t kh, int64_t kw) const {
    const int64_t ih = oh * s.strideHeight + kh * s.dilationHeight - s.padTop;
    const int64_t iw = ow * s.strideWidth + kw * s.dilationWidth - s.padLeft;
    if (ih < 0 || ih >= s.inHeight || iw < 0 || iw >= s.inWidth) return nullptr;
    return x + ((image * s.inHeight + ih) * s.inWidth + iw) * s.inChannels;
  }
};

/// IndirectA over the input itself: K block k0 lies inside one tap.
struct InputRows {
  const Conv2dShape *shape;
  const float *x;
  const float *zeros;  // inChannels zeros.

  static void rows(const void *context, int64_t row0, int64_t count, int64_t k0, const float **out) {
    const auto &self = *static_cast<const InputRows *>(context);
    const Conv2dShape &s = *self.shape;
    const int64_t tap = k0 / s.inChannels, channel = k0 % s.inChannels;
    const int64_t kh = tap / s.kernelWidth, kw = tap % s.kernelWidth;
    PixelCursor cursor(s, row0);
    for (int64_t i = 0; i < count; ++i, cursor.advance(s)) {
      const float *pixel = cursor.tap(s, self.x, kh, kw);
      out[i] = (pixel != nullptr ? pixel : self.zeros) + channel;
    }
  }
};

/// IndirectA over a gathered chunk: row i is `window` contiguous floats.
struct ChunkRows {
  const float *chunk;
  int64_t window;

  static void rows(const void *context, int64_t row0, int64_t count, int64_t k0, const float **out) {
    const auto &self = *static_cast<const ChunkRows *>(context);
    for (int64_t i = 0; i < count; ++i) out[i] = self.chunk + (row0 + i) * self.window + k0;
  }
};

/// Writes the windows of output pixels [first, first + count) into rows of `window` floats. With
/// dilation 1 along the width, one kernel row's taps read consecutive input pixels: one copy of
/// the run inside the input, zeros for the taps in the padding.
void gatherWindows(const Conv2dShape &s, const float *x, int64_t first, int64_t count, float *rows) {
  const int64_t c = s.inChannels;
  const int64_t rowFloats = s.kernelWidth * c;  // One kernel row of the window.
  PixelCursor cursor(s, first);
  for (int64_t i = 0; i < count; ++i, cursor.advance(s)) {
    float *row = rows + i * windowSize(s);
    const int64_t iw0 = cursor.ow * s.strideWidth - s.padLeft;
    for (int64_t kh = 0; kh < s.kernelHeight; ++kh, row += rowFloats) {
      const int64_t ih = cursor.oh * s.strideHeight + kh * s.dilationHeight - s.padTop;
      if (ih < 0 || ih >= s.inHeight) {
        std::fill(row, row + rowFloats, 0.0f);
        continue;
      }
      const float *inputRow = x + (cursor.image * s.inHeight + ih) * s.inWidth * c;
      if (s.dilationWidth == 1) {
        const int64_t begin = std::clamp<int64_t>(-iw0, 0, s.kernelWidth);
        const int64_t end = std::clamp<int64_t>(s.inWidth - iw0, begin, s.kernelWidth);
        std::fill(row, row + begin * c, 0.0f);
        std::copy(inputRow + (iw0 + begin) * c, inputRow + (iw0 + end) * c, row + begin * c);
        std::fill(row + end * c, row + rowFloats, 0.0f);
        continue;
      }
      for (int64_t kw = 0; kw < s.kernelWidth; ++kw) {
        const int64_t iw = iw0 + kw * s.dilationWidth;
        float *tap = row + kw * c;
        if (iw < 0 || iw >= s.inWidth) {
          std::fill(tap, tap + c, 0.0f);
        } else {
          std::copy(inputRow + iw * c, inputRow + (iw + 1) * c, tap);
        }
      }
    }
  }
}

GemmEpilogue gemmEpilogueAt(const ConvEpilogue &epilogue, int64_t firstPixel, int64_t outChannels) {
  GemmEpilogue e;
  e.bias = epilogue.bias;
  e.residual = epilogue.residual != nullptr ? epilogue.residual + firstPixel * outChannels : nullptr;
  e.ldr = outChannels;
  e.activation = epilogue.activation;
  return e;
}

PackedBView packedWeightsView(const ConvNhwcPlan &plan, const float *packedWeights) {
  return {plan.kernel, windowSize(plan.shape), plan.shape.outChannels, packedWeights};
}

}  // namespace

bool runsConvNhwc(const Conv2dShape &shape) { return shape.group == 1; }

namespace {

bool gathersRows(const Conv2dShape &shape) {
  const bool pointwise = shape.kernelHeight == 1 && shape.kernelWidth == 1;
  return shape.inChannels < kMinChannelsInPlace && !pointwise;
}

}  // namespace

bool convNhwcTakesPacked(const Conv2dShape &shape, int kPack) {
  return gathersRows(shape) || shape.inChannels % kPack == 0;
}

ConvNhwcPlan planConvNhwc(const Conv2dShape &shape, int threads, const GemmKernel &kernel) {
  ConvNhwcPlan plan;
  plan.shape = shape;
  plan.kernel = &kernel;
  threads = std::max(threads, 1);
  const int64_t pixels = outputPixels(shape);
  const int64_t window = windowSize(shape);
  plan.gathersRows = gathersRows(shape);
  const GemmPacking packing{/*a=*/false, /*b=*/true};
  if (!plan.gathersRows) {
    plan.zerosBytes = roundUpBytes(size_t(shape.inChannels) * sizeof(float));
    plan.gemmScratchBytes =
        roundUpBytes(sgemmScratchBytes(*plan.kernel, {pixels, shape.outChannels, window}, threads, packing));
    plan.slotBytes = plan.zerosBytes + plan.gemmScratchBytes;
    return plan;
  }
  const int64_t mr = plan.kernel->mr;
  int64_t chunk = std::max<int64_t>(kGatheredChunkBytes / (window * int64_t(sizeof(float))) / mr * mr, mr);
  // Enough chunks for every thread to get several.
  const int64_t wanted = kChunksPerThread * threads;
  if (threads > 1 && (pixels + chunk - 1) / chunk < wanted) {
    chunk = std::max<int64_t>((pixels + wanted - 1) / wanted, mr);
  }
  plan.rowChunk = std::min(chunk, pixels);
  plan.chunks = (pixels + plan.rowChunk - 1) / plan.rowChunk;
  plan.slots = int(std::min<int64_t>(threads, plan.chunks));
  plan.rowsBytes = roundUpBytes(size_t(plan.rowChunk * window) * sizeof(float));
  plan.gemmScratchBytes =
      roundUpBytes(sgemmScratchBytes(*plan.kernel, {plan.rowChunk, shape.outChannels, window}, 1, packing));
  plan.slotBytes = plan.rowsBytes + plan.gemmScratchBytes;
  return plan;
}

size_t convNhwcPackedWeightsBytes(const ConvNhwcPlan &plan) {
  return packedBSize(*plan.kernel, windowSize(plan.shape), plan.shape.outChannels);
}

void packConvNhwcWeights(const ConvNhwcPlan &plan, const float *weights, float *dst) {
  const Conv2dShape &s = plan.shape;
  const int64_t taps = s.kernelHeight * s.kernelWidth;
  const int64_t window = windowSize(s);
  // W [Cout, Cin, KH, KW] reordered to [Cout, (tap, cin)]: B's transpose, which packBInto reads.
  std::vector<float> reordered(size_t(s.outChannels * window));
  for (int64_t co = 0; co < s.outChannels; ++co) {
    for (int64_t ci = 0; ci < s.inChannels; ++ci) {
      for (int64_t tap = 0; tap < taps; ++tap) {
        reordered[size_t(co * window + tap * s.inChannels + ci)] = weights[(co * s.inChannels + ci) * taps + tap];
      }
    }
  }
  packBInto(*plan.kernel, window, s.outChannels, reordered.data(), window, dst, /*transposed=*/true);
}

size_t convNhwcScratchBytes(const ConvNhwcPlan &plan) { return plan.slotBytes * size_t(plan.slots); }

void convNhwc(const ConvNhwcPlan &plan, const float *x, const float *packedWeights, const ConvEpilogue &epilogue,
              float *y, std::byte *scratch, ThreadPool *pool) {
  const Conv2dShape &s = plan.shape;
  const PackedBView weights = packedWeightsView(plan, packedWeights);
  const int64_t window = windowSize(s);
  if (!plan.gathersRows) {
    auto *zeros = reinterpret_cast<float *>(scratch);
    std::fill(zeros, zeros + s.inChannels, 0.0f);
    const InputRows rows{&s, x, zeros};
    const IndirectA a{&rows, &InputRows::rows, /*segment=*/s.inChannels};
    sgemmIndirect({outputPixels(s), s.outChannels, window}, a, weights, y, s.outChannels,
                  gemmEpilogueAt(epilogue, 0, s.outChannels), pool,
                  std::span<std::byte>(scratch + plan.zerosBytes, plan.gemmScratchBytes));
    return;
  }
  // Static chunk ranges, one per scratch slot: the task index names the slot.
  runTasks(pool, plan.slots, [&](int64_t task) {
    std::byte *slot = scratch + size_t(task) * plan.slotBytes;
    auto *chunk = reinterpret_cast<float *>(slot);
    const std::span<std::byte> gemmScratch(slot + plan.rowsBytes, plan.gemmScratchBytes);
    const int64_t end = plan.chunks * (task + 1) / plan.slots;
    for (int64_t index = plan.chunks * task / plan.slots; index < end; ++index) {
      const int64_t first = index * plan.rowChunk;
      const int64_t count = std::min(plan.rowChunk, outputPixels(s) - first);
      gatherWindows(s, x, first, count, chunk);
      const ChunkRows rows{chunk, window};
      sgemmIndirect({count, s.outChannels, window}, IndirectA{&rows, &ChunkRows::rows, 0}, weights,
                    y + first * s.outChannels, s.outChannels, gemmEpilogueAt(epilogue, first, s.outChannels),
                    /*pool=*/nullptr, gemmScratch);
    }
  });
}

std::string convNhwcKernelName(const ConvNhwcPlan &plan) {
  return std::string(plan.gathersRows ? "conv2d_nhwc_gathered_gemm " : "conv2d_nhwc_indirect_gemm ") +
         plan.kernel->name;
}

}  // namespace tessel::cpu
