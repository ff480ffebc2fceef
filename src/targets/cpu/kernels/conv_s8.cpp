#include "targets/cpu/kernels/conv_s8.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "support/diagnostic.h"
#include "targets/cpu/kernels/elementwise.h"

namespace tessel::cpu {
namespace {

constexpr int64_t kAlign = 64;
constexpr int64_t kChunkBytes = 1 << 20;  // Patches or results per chunk: about L2.
constexpr int64_t kChunkRowUnit = 96;     // A multiple of the 6-row tile, split over a few threads.
constexpr int64_t kGrainBytes = 16384;    // Bytes copied per task.
constexpr int64_t kTransposeBlock = 16;   // Channels or pixels per step of a transpose.
constexpr int64_t kGatherBlockBytes = 65536;  // Patches gathered, then multiplied, at a time on one thread.

int64_t alignUp(int64_t bytes) { return (bytes + kAlign - 1) / kAlign * kAlign; }

/// int32 sums land in scratch unless a channels-last product requantizes them in registers.
bool keepsSums(const ConvS8Plan &p) { return !p.channelsLast || s8GemmSplitsK(*p.kernel, p.k()); }

int64_t paddedBytes(const ConvS8Plan &p) {
  return p.channelsLast ? 0 : alignUp(p.paddedHeight * p.paddedWidth * p.shape.inChannels);
}
int64_t resultBytes(const ConvS8Plan &p) { return keepsSums(p) ? alignUp(p.chunkRows * p.shape.outChannels * 4) : 0; }
int64_t requantizedBytes(const ConvS8Plan &p) { return p.channelsLast ? 0 : alignUp(p.chunkRows * p.shape.outChannels); }
GemmShape chunkShape(const ConvS8Plan &p, int64_t rows) { return GemmShape{rows, p.shape.outChannels, p.k()}; }

/// One image [C, H, W] copied to [paddedHeight, paddedWidth, C], the padding filled with `fill`.
void copyChannelsLast(const ConvS8Plan &p, const uint8_t *x, uint8_t fill, uint8_t *padded, ThreadPool *pool) {
  const Conv2dShape &s = p.shape;
  const int64_t c = s.inChannels, rowBytes = p.paddedWidth * c;
  parallelRanges(pool, p.paddedHeight, std::max<int64_t>(1, kGrainBytes / std::max<int64_t>(rowBytes, 1)),
                 [&](int64_t begin, int64_t end) {
                   for (int64_t ph = begin; ph < end; ++ph) {
                     uint8_t *dst = padded + ph * rowBytes;
                     std::memset(dst, fill, size_t(rowBytes));
                     const int64_t ih = ph - s.padTop;
                     if (ih < 0 || ih >= s.inHeight) continue;
                     const int64_t iwEnd = std::min(s.inWidth, p.paddedWidth - s.padLeft);
                     // Channels in blocks, so each pixel's writes fill part of one line while a
                     // few input rows are read in step.
                     for (int64_t c0 = 0; c0 < c; c0 += kTransposeBlock) {
                       const int64_t c1 = std::min(c, c0 + kTransposeBlock);
                       const uint8_t *src = x + (c0 * s.inHeight + ih) * s.inWidth;
                       for (int64_t iw = 0; iw < iwEnd; ++iw) {
                         uint8_t *pixel = dst + (iw + s.padLeft) * c;
                         for (int64_t ch = c0; ch < c1; ++ch) pixel[ch] = src[(ch - c0) * s.inPlane() + iw];
                       }
                     }
                   }
                 });
}

/// A channels-last image as the windows read it: `padTop` rows and `padLeft` columns of padding
/// (the input zero point) lie before its first pixel.
struct PatchSource {
  const uint8_t *image = nullptr;
  int64_t height = 0, width = 0, padTop = 0, padLeft = 0;
  uint8_t fill = 0;
};

/// n bytes, n small (a few channels of a few taps): overlapping fixed-size moves, which compile to
/// a register's load and store each, instead of a library call per tap.
inline void copyFew(uint8_t *dst, const uint8_t *src, int64_t n) {
  if (n >= 16 && n <= 32) {
    std::memcpy(dst, src, 16);
    std::memcpy(dst + n - 16, src + n - 16, 16);
  } else if (n >= 8 && n < 16) {
    std::memcpy(dst, src, 8);
    std::memcpy(dst + n - 8, src + n - 8, 8);
  } else if (n >= 4 && n < 8) {
    std::memcpy(dst, src, 4);
    std::memcpy(dst + n - 4, src + n - 4, 4);
  } else {
    std::memcpy(dst, src, size_t(n));
  }
}

/// Patch rows [begin, end) of a chunk of output pixels from p0, gathered straight into the GEMM's
/// packed A, taps outside the image filled with the zero point.
void gatherPatchRows(const ConvS8Plan &p, const PatchSource &x, int64_t p0, int64_t begin, int64_t end, bool xSigned,
                     int32_t xZero, bool sums, const PackedS8A &packed) {
  const Conv2dShape &s = p.shape;
  const int64_t c = s.inChannels, k = p.k(), rowBytes = packedS8ARowBytes(k), tapRow = s.kernelWidth * c;
  // The output pixel, stepped rather than divided out per row: a stem's few channels make each
  // row's copies cheaper than the division.
  int64_t oh = (p0 + begin) / s.outWidth, ow = (p0 + begin) % s.outWidth;
  for (int64_t r = begin; r < end; ++r, ow = ow + 1 == s.outWidth ? 0 : ow + 1, oh += ow == 0) {
    const int64_t ih0 = oh * s.strideHeight - x.padTop, iw0 = ow * s.strideWidth - x.padLeft;
    const bool rowInside = s.dilationWidth == 1 && iw0 >= 0 && iw0 + s.kernelWidth <= x.width;
    uint8_t *dst = reinterpret_cast<uint8_t *>(packed.rows) + r * rowBytes;
    for (int64_t kh = 0; kh < s.kernelHeight; ++kh, dst += tapRow) {
      const int64_t ih = ih0 + kh * s.dilationHeight;
      if (ih < 0 || ih >= x.height) {
        std::memset(dst, x.fill, size_t(tapRow));
        continue;
      }
      const uint8_t *row = x.image + ih * x.width * c;
      if (rowInside) {  // The row's taps are adjacent pixels inside the image: one copy.
        copyFew(dst, row + iw0 * c, tapRow);
        continue;
      }
      for (int64_t kw = 0; kw < s.kernelWidth; ++kw) {
        const int64_t iw = iw0 + kw * s.dilationWidth;
        if (iw < 0 || iw >= x.width) {
          std::memset(dst + kw * c, x.fill, size_t(c));
        } else {
          copyFew(dst + kw * c, row + iw * c, c);
        }
      }
    }
    finishPackedS8ARow(*p.kernel, k, xSigned, xZero, sums, packed, r);
  }
}

/// The product of a chunk of patch rows. Where the GEMM splits its rows alone (over the threads,
/// or on one thread not at all), the rows go in blocks, each gathered and at once multiplied by one
/// task (one hand-off, the patches still in the cache of the core that reads them): the grid's
/// tasks, or on one thread blocks of about kGatherBlockBytes of patches. Otherwise all rows are
/// gathered, then multiplied.
void patchProduct(const ConvS8Plan &p, const PatchSource &x, int64_t p0, const GemmShape &shape, bool xSigned,
                  int32_t xZero, bool sums, const PackedS8A &packed, const PackedS8BView &b, int32_t *result,
                  const S8GemmBytes *bytes, ThreadPool *pool) {
  const int64_t n = shape.n, mr = p.kernel->mr;
  const GemmGrid grid = s8GemmGrid(*p.kernel, shape, pool != nullptr ? pool->size() : 1);
  if (grid.taskCols == 1) {
    const int64_t rowsPerBlock =
        grid.tasks() > 1 ? grid.rowsPerTask
                         : std::max(mr, kGatherBlockBytes / packedS8ARowBytes(shape.k) / mr * mr);
    auto block = [&](int64_t task) {
      const int64_t r0 = task * rowsPerBlock, r1 = std::min(shape.m, r0 + rowsPerBlock);
      if (r0 >= r1) return;
      gatherPatchRows(p, x, p0, r0, r1, xSigned, xZero, sums, packed);
      const PackedS8A rows{packed.rows + r0 * packed.strideWords, packed.strideWords, packed.rowTerm + r0,
                           packed.zero + r0};
      S8GemmBytes part;
      if (bytes != nullptr) {
        part = *bytes;
        part.y += r0 * bytes->ldy;
      }
      // The int32 sums exist where they are kept (no requantization, or K summed in blocks).
      int32_t *sums32 = bytes == nullptr || s8GemmSplitsK(*p.kernel, shape.k) ? result + r0 * n : result;
      s8GemmPrepacked({r1 - r0, n, shape.k}, rows, b, sums32, n, bytes != nullptr ? &part : nullptr, nullptr);
    };
    const int64_t blocks = (shape.m + rowsPerBlock - 1) / rowsPerBlock;
    if (grid.tasks() > 1 && pool != nullptr) {
      pool->parallelFor(blocks, block);
    } else {
      for (int64_t task = 0; task < blocks; ++task) block(task);
    }
    return;
  }
  parallelRanges(pool, shape.m, std::max<int64_t>(1, kGrainBytes / p.k()), [&](int64_t begin, int64_t end) {
    gatherPatchRows(p, x, p0, begin, end, xSigned, xZero, sums, packed);
  });
  s8GemmPrepacked(shape, packed, b, result, n, bytes, pool);
}

}  // namespace

ConvS8Plan planConvS8(const Conv2dShape &shape, const S8GemmKernel &kernel, bool channelsLast) {
  ConvS8Plan p;
  p.shape = shape;
  p.kernel = &kernel;
  p.paddedHeight = (shape.outHeight - 1) * shape.strideHeight + (shape.kernelHeight - 1) * shape.dilationHeight + 1;
  p.paddedWidth = (shape.outWidth - 1) * shape.strideWidth + (shape.kernelWidth - 1) * shape.dilationWidth + 1;
  p.direct = shape.kernelHeight == 1 && shape.kernelWidth == 1 && shape.strideHeight == 1 && shape.strideWidth == 1;
  p.channelsLast = channelsLast;
  // Channels-last X is read in place, so its direct product needs the pixels the windows read to be
  // the image's, one after another: no padding.
  if (channelsLast && (shape.padTop != 0 || shape.padLeft != 0 || p.paddedHeight != shape.inHeight ||
                       p.paddedWidth != shape.inWidth)) {
    p.direct = false;
  }
  // A chunk's packed A, and its int32 sums where they are kept, stay about L2-sized.
  const int64_t rowBytes = std::max(packedS8ARowBytes(p.k()), keepsSums(p) ? shape.outChannels * 4 : 0);
  const int64_t rows = std::max<int64_t>(kChunkRowUnit, kChunkBytes / rowBytes / kChunkRowUnit * kChunkRowUnit);
  p.chunkRows = std::min(rows, shape.outPlane());
  return p;
}

size_t convS8PackedWeightsBytes(const ConvS8Plan &plan) {
  return packedS8BSize(*plan.kernel, plan.k(), plan.shape.outChannels);
}

void packConvS8Weights(const ConvS8Plan &plan, const void *w, bool wSigned, const int32_t *zeroPoints,
                       std::byte *dst) {
  const Conv2dShape &s = plan.shape;
  const int64_t k = plan.k(), n = s.outChannels, taps = s.kernelHeight * s.kernelWidth;
  const auto *src = static_cast<const uint8_t *>(w);
  std::vector<uint8_t> transposed(size_t(k * n));
  // W[oc][c][tap] to B[tap * Cin + c][oc].
  for (int64_t oc = 0; oc < n; ++oc) {
    for (int64_t c = 0; c < s.inChannels; ++c) {
      for (int64_t t = 0; t < taps; ++t) {
        transposed[size_t((t * s.inChannels + c) * n + oc)] = src[(oc * s.inChannels + c) * taps + t];
      }
    }
  }
  packS8BInto(*plan.kernel, k, n, transposed.data(), wSigned, zeroPoints, dst);
}

size_t convS8ScratchBytes(const ConvS8Plan &plan) {
  return size_t(paddedBytes(plan) + resultBytes(plan) + requantizedBytes(plan)) +
         s8GemmScratchBytes(chunkShape(plan, plan.chunkRows));
}

namespace {

/// Rows [r0, r1) of a chunk's [rows, n] `source` (int32 sums or their one-byte requantized values)
/// into columns p0 + r of each channel's plane of `dst`.
template <class T>
void transposeInto(const T *source, int64_t r0, int64_t r1, int64_t n, T *dst, int64_t plane, int64_t p0) {
  for (int64_t oc = 0; oc < n; ++oc) {
    T *out = dst + oc * plane + p0;
    for (int64_t r = r0; r < r1; ++r) out[r] = source[r * n + oc];
  }
}

}  // namespace

void convS8(const ConvS8Plan &plan, const void *x, bool xSigned, int32_t xZero, const std::byte *packedW, void *y,
            const S8Requantization *requantize, ThreadPool *pool, std::span<std::byte> scratch) {
  TESSEL_CHECK(!plan.channelsLast || requantize != nullptr, "a channels-last int8 conv requantizes its output");
  const Conv2dShape &s = plan.shape;
  const int64_t k = plan.k(), n = s.outChannels, plane = s.outPlane();
  auto *padded = reinterpret_cast<uint8_t *>(scratch.data());
  auto *result = reinterpret_cast<int32_t *>(padded + paddedBytes(plan));
  auto *requantized = reinterpret_cast<std::byte *>(result) + resultBytes(plan);
  std::byte *gemmScratch = requantized + requantizedBytes(plan);
  const PackedS8BView b{plan.kernel, k, n, packedW};
  const auto fill = static_cast<uint8_t>(xZero);  // The zero point's own bits, u8 or s8.
  const bool sums = s8GemmNeedsRowSums(xSigned, b);
  for (int64_t image = 0; image < s.batch; ++image) {
    const uint8_t *xImage = static_cast<const uint8_t *>(x) + image * s.inChannels * s.inPlane();
    // The channels-last image the windows read: X itself, or X's channels-first image copied
    // channels-last with its padding.
    PatchSource source{xImage, s.inHeight, s.inWidth, s.padTop, s.padLeft, fill};
    if (!plan.channelsLast) {
      copyChannelsLast(plan, xImage, fill, padded, pool);
      source = {padded, plan.paddedHeight, plan.paddedWidth, 0, 0, fill};
    }
    for (int64_t p0 = 0; p0 < plane; p0 += plan.chunkRows) {
      const int64_t rows = std::min(plan.chunkRows, plane - p0);
      const GemmShape shape = chunkShape(plan, rows);
      // Channels-last rows are rows of Y: requantized straight into it; channels-first ones into
      // a chunk of bytes (or int32 sums) transposed below.
      S8GemmBytes bytes;
      if (requantize != nullptr) {
        bytes = {*requantize, plan.channelsLast ? static_cast<std::byte *>(y) + (image * plane + p0) * n : requantized,
                 n, {}};
      }
      const S8GemmBytes *out = requantize != nullptr ? &bytes : nullptr;
      if (plan.direct) {
        const S8GemmA operand{source.image + p0 * s.inChannels, s.inChannels, xSigned, &xZero, 1};
        s8GemmPacked(shape, operand, b, result, n, pool, {gemmScratch, s8GemmScratchBytes(shape)}, out);
      } else {
        patchProduct(plan, source, p0, shape, xSigned, xZero, sums, carvePackedS8A(shape, gemmScratch), b, result, out,
                     pool);
      }
      if (plan.channelsLast) continue;
      // The chunk's [rows, Cout] to columns [p0, p0 + rows) of each channel's plane, a block of
      // pixels (one line of each channel's output) at a time.
      const int64_t blocks = (rows + kTransposeBlock - 1) / kTransposeBlock;
      parallelRanges(pool, blocks, std::max<int64_t>(1, kGrainBytes / (kTransposeBlock * n * 4)),
                     [&](int64_t begin, int64_t end) {
                       const int64_t r0 = begin * kTransposeBlock, r1 = std::min(rows, end * kTransposeBlock);
                       if (requantize == nullptr) {
                         transposeInto(result, r0, r1, n, static_cast<int32_t *>(y) + image * n * plane, plane, p0);
                       } else {
                         transposeInto(reinterpret_cast<const uint8_t *>(requantized), r0, r1, n,
                                       static_cast<uint8_t *>(y) + image * n * plane, plane, p0);
                       }
                     });
    }
  }
}

}  // namespace tessel::cpu
