// The channels-last depthwise loop, written once and compiled per ISA: included by exactly one file
// in each isa/<family>/ folder, which defines
//   TESSEL_DEPTHWISE_NHWC_FN      the exported name,
//   TESSEL_DEPTHWISE_NHWC_LANES   floats per vector (16, 8 or 4),
//   TESSEL_DEPTHWISE_NHWC_PIXELS  output pixels per register block.
// Channels are contiguous, so one vector holds one pixel's taps of `lanes` channels: the loop keeps
// a fixed kernel's tap vectors in registers and accumulates a block of output pixels at once; with
// unit dilation each input column of a kernel row is loaded once and feeds every tap that reads it.
// Pixels near the left and right edges, and rows whose window leaves the input, skip the taps in
// the padding. Vectors are GCC vector extensions, so the same source becomes zmm, ymm or xmm code
// with this folder's flags.
// Everything here has internal linkage and calls no inline library templates, so no code built
// with AVX flags can be shared with (and picked by the linker for) a generic build.
#include "targets/cpu/kernels/depthwise_conv_nhwc_variants.h"

#if !defined(TESSEL_DEPTHWISE_NHWC_FN) || !defined(TESSEL_DEPTHWISE_NHWC_LANES) || \
    !defined(TESSEL_DEPTHWISE_NHWC_PIXELS)
#error "define TESSEL_DEPTHWISE_NHWC_{FN,LANES,PIXELS} before including depthwise_conv_nhwc_impl.h"
#endif

namespace tessel::cpu {
namespace {

constexpr int kLanes = TESSEL_DEPTHWISE_NHWC_LANES;
constexpr int kPixels = TESSEL_DEPTHWISE_NHWC_PIXELS;
static_assert(kDepthwiseNhwcChannelBlock % kLanes == 0, "a channel block must hold whole vectors");
static_assert(kPixels == 1 || kPixels == 2 || kPixels == 4 || kPixels == 8, "blocks halve down to one pixel");

typedef float Vec __attribute__((vector_size(kLanes * sizeof(float))));
// The same vector at any float alignment: channel offsets c * 4 bytes are not vector aligned. Not
// may_alias: a vector of floats aliases floats only, so the compiler need not reload the geometry
// (integers) after every store to y.
typedef float UnalignedVec __attribute__((vector_size(kLanes * sizeof(float)), aligned(alignof(float))));

#define TESSEL_DW_NHWC_INLINE inline __attribute__((always_inline))

TESSEL_DW_NHWC_INLINE Vec loadVec(const float *p) { return *reinterpret_cast<const UnalignedVec *>(p); }
TESSEL_DW_NHWC_INLINE void storeVec(float *p, Vec v) { *reinterpret_cast<UnalignedVec *>(p) = v; }

/// Hides a pointer's origin from the optimizer: without it, GCC gives every (kernel tap, pixel)
/// address of a block its own induction variable, and the dozens of them spill to the stack.
TESSEL_DW_NHWC_INLINE void opaque(const float *&p) { __asm__("" : "+r"(p)); }

/// Loads `count` channels (all of a vector unless kPartial); the lanes past count are zero. The
/// partial form is only for the last vector of an image's channels, which may end at the buffer's end.
template <bool kPartial>
TESSEL_DW_NHWC_INLINE Vec loadChannels(const float *p, int count) {
  if constexpr (!kPartial) {
    return loadVec(p);
  } else {
    Vec v = {};
    for (int i = 0; i < count; ++i) v[i] = p[i];
    return v;
  }
}

template <bool kPartial>
TESSEL_DW_NHWC_INLINE void storeChannels(float *p, Vec v, int count) {
  if constexpr (!kPartial) {
    storeVec(p, v);
  } else {
    for (int i = 0; i < count; ++i) p[i] = v[i];
  }
}

/// A fixed kernel's tap vectors for one channel vector, loaded once per row into registers.
template <int kKernelHeight, int kKernelWidth>
struct Taps {
  Vec v[kKernelHeight * kKernelWidth];
  TESSEL_DW_NHWC_INLINE Taps(const DepthwiseNhwcArgs &a, int64_t channel) {
#pragma GCC unroll 32
    for (int t = 0; t < kKernelHeight * kKernelWidth; ++t) v[t] = loadVec(a.weights + t * a.paddedChannels + channel);
  }
  TESSEL_DW_NHWC_INLINE Vec at(int64_t kh, int64_t kw) const { return v[kh * kKernelWidth + kw]; }
};

/// A kernel known only at run time reads each tap vector where it is used (from L1).
template <>
struct Taps<0, 0> {
  const float *w;
  int64_t kernelWidth, stride;
  TESSEL_DW_NHWC_INLINE Taps(const DepthwiseNhwcArgs &a, int64_t channel)
      : w(a.weights + channel), kernelWidth(a.kernelWidth), stride(a.paddedChannels) {}
  TESSEL_DW_NHWC_INLINE Vec at(int64_t kh, int64_t kw) const { return loadVec(w + (kh * kernelWidth + kw) * stride); }
};

/// The output columns where every tap of a kernel row lands inside the input (the block loop needs
/// no bounds checks there); the same for every row.
struct MiddleColumns {
  int64_t begin = 0, end = 0;
};

MiddleColumns middleColumns(const DepthwiseNhwcArgs &a) {
  MiddleColumns m;
  m.begin = (a.padLeft + a.strideWidth - 1) / a.strideWidth;
  const int64_t lastStart = a.inWidth - 1 + a.padLeft - (a.kernelWidth - 1) * a.dilationWidth;
  m.end = lastStart < 0 ? 0 : lastStart / a.strideWidth + 1;
  if (m.end > a.outWidth) m.end = a.outWidth;
  if (m.begin > a.outWidth) m.begin = a.outWidth;
  if (m.end < m.begin) m.end = m.begin;
  return m;
}

/// fn(i) for i in [kBegin, kEnd), unrolled at compile time so that fixed taps index registers.
template <int kBegin, int kEnd, class Fn>
TESSEL_DW_NHWC_INLINE void unrolled(const Fn &fn) {
  if constexpr (kBegin < kEnd) {
    fn(int64_t(kBegin));
    unrolled<kBegin + 1, kEnd>(fn);
  }
}

/// One output row of one channel vector. kKernelHeight/kKernelWidth/kStride are 0 when known only
/// at run time; kPartial for the last vector of a channel count that is not a multiple of kLanes.
/// The geometry is copied out of the args so that it lives in registers.
template <int kKernelHeight, int kKernelWidth, int kStride, bool kPartial>
struct RowKernel {
  static constexpr bool kFixedKernel = kKernelHeight > 0;

  const Taps<kKernelHeight, kKernelWidth> &taps;
  const float *xImage;       // At this vector's first channel.
  const float *residualRow;  // Null without a residual.
  float *yRow;
  Vec bias, low, high;
  int64_t channels, inWidth, outWidth;
  int64_t kernelHeight, kernelWidth, stride, dilationHeight, dilationWidth, padLeft;
  int64_t top;               // Input row of kernel row 0.
  int64_t rowBegin, rowEnd;  // Kernel rows inside the input.
  int count;                 // Channels of this vector.

  template <class Fn>
  TESSEL_DW_NHWC_INLINE void forEachKernelRow(const Fn &fn) const {
    if constexpr (kFixedKernel) {
      unrolled<0, kKernelHeight>([&](int64_t kh) __attribute__((always_inline)) {
        if (kh >= rowBegin && kh < rowEnd) fn(kh);
      });
    } else {
      for (int64_t kh = rowBegin; kh < rowEnd; ++kh) fn(kh);
    }
  }

  template <class Fn>
  TESSEL_DW_NHWC_INLINE void forEachKernelColumn(const Fn &fn) const {
    if constexpr (kFixedKernel) {
      unrolled<0, kKernelWidth>(fn);
    } else {
      for (int64_t kw = 0; kw < kernelWidth; ++kw) fn(kw);
    }
  }

  TESSEL_DW_NHWC_INLINE Vec start(int64_t ow) const {
    Vec v = bias;
    if (residualRow != nullptr) v += loadChannels<kPartial>(residualRow + ow * channels, count);
    return v;
  }

  TESSEL_DW_NHWC_INLINE void finish(int64_t ow, Vec v) const {
    // Bounds of -inf and +inf when there is no ReLU/Clip: cheaper than a second instantiation.
    v = v < low ? low : v;
    v = v > high ? high : v;
    storeChannels<kPartial>(yRow + ow * channels, v, count);
  }

  /// A pixel near the left or right edge: taps outside the input are skipped.
  TESSEL_DW_NHWC_INLINE void edgePixel(int64_t ow) const {
    Vec acc = start(ow);
    const int64_t left = ow * stride - padLeft;
    forEachKernelRow([&](int64_t kh) __attribute__((always_inline)) {
      const float *xRow = xImage + (top + kh * dilationHeight) * inWidth * channels;
      forEachKernelColumn([&](int64_t kw) __attribute__((always_inline)) {
        const int64_t iw = left + kw * dilationWidth;
        if (iw < 0 || iw >= inWidth) return;
        acc += taps.at(kh, kw) * loadChannels<kPartial>(xRow + iw * channels, count);
      });
    });
    finish(ow, acc);
  }

  /// kBlock pixels from ow on, all inside the middle columns: every tap vector is used kBlock
  /// times while it sits in a register, and the accumulators never leave registers.
  template <int kBlock>
  TESSEL_DW_NHWC_INLINE void middleBlock(int64_t ow) const {
    Vec acc[kBlock];
    unrolled<0, kBlock>([&](int64_t p) __attribute__((always_inline)) { acc[p] = start(ow + p); });
    const int64_t pixelStep = stride * channels;
    const int64_t tapStep = dilationWidth * channels;
    forEachKernelRow([&](int64_t kh) __attribute__((always_inline)) {
      const float *x0 = xImage + ((top + kh * dilationHeight) * inWidth + ow * stride - padLeft) * channels;
      forEachKernelColumn([&](int64_t kw) __attribute__((always_inline)) {
        const Vec w = taps.at(kh, kw);
        const float *xTap = x0 + kw * tapStep;
        unrolled<0, kBlock>([&](int64_t p) __attribute__((always_inline)) {
          acc[p] += w * loadChannels<kPartial>(xTap, count);
          xTap += pixelStep;
          opaque(xTap);
        });
      });
    });
    unrolled<0, kBlock>([&](int64_t p) __attribute__((always_inline)) { finish(ow + p, acc[p]); });
  }

  /// middleBlock for a fixed kernel and stride with unit dilation, where the taps of neighbouring
  /// pixels share input columns: each column is loaded once and feeds every tap that reads it.
  template <int kBlock>
  TESSEL_DW_NHWC_INLINE void middleBlockSharedColumns(int64_t ow) const {
    constexpr int kColumns = (kBlock - 1) * kStride + kKernelWidth;
    Vec acc[kBlock];
    unrolled<0, kBlock>([&](int64_t p) __attribute__((always_inline)) { acc[p] = start(ow + p); });
    forEachKernelRow([&](int64_t kh) __attribute__((always_inline)) {
      const float *x = xImage + ((top + kh * dilationHeight) * inWidth + ow * kStride - padLeft) * channels;
      Vec column[kColumns];
      unrolled<0, kColumns>([&](int64_t j) __attribute__((always_inline)) {
        column[j] = loadChannels<kPartial>(x, count);
        x += channels;
        opaque(x);
      });
      unrolled<0, kKernelWidth>([&](int64_t kw) __attribute__((always_inline)) {
        const Vec w = taps.at(kh, kw);
        unrolled<0, kBlock>([&](int64_t p) __attribute__((always_inline)) { acc[p] += w * column[p * kStride + kw]; });
      });
    });
    unrolled<0, kBlock>([&](int64_t p) __attribute__((always_inline)) { finish(ow + p, acc[p]); });
  }

  /// The middle run in blocks of kBlock pixels, the remainder in halving blocks.
  template <int kBlock>
  TESSEL_DW_NHWC_INLINE void middleRun(int64_t ow, int64_t end) const {
    if constexpr (kFixedKernel && kStride > 0) {
      if (dilationWidth == 1) {
        for (; ow + kBlock <= end; ow += kBlock) middleBlockSharedColumns<kBlock>(ow);
      }
    }
    for (; ow + kBlock <= end; ow += kBlock) middleBlock<kBlock>(ow);
    if constexpr (kBlock > 1) middleRun<kBlock / 2>(ow, end);
  }

  TESSEL_DW_NHWC_INLINE void run(const MiddleColumns &middle) const {
    for (int64_t ow = 0; ow < middle.begin; ++ow) edgePixel(ow);
    middleRun<kPixels>(middle.begin, middle.end);
    for (int64_t ow = middle.end; ow < outWidth; ++ow) edgePixel(ow);
  }
};

/// Kernel rows [*begin, *end) whose input row top + kh * dilation lies in [0, inHeight).
inline void rowsInside(const DepthwiseNhwcArgs &a, int64_t top, int64_t *begin, int64_t *end) {
  const int64_t d = a.dilationHeight;
  int64_t b = top >= 0 ? 0 : (-top + d - 1) / d;
  int64_t e = a.inHeight - 1 - top < 0 ? 0 : (a.inHeight - 1 - top) / d + 1;
  if (e > a.kernelHeight) e = a.kernelHeight;
  if (b > e) b = e;
  *begin = b;
  *end = e;
}

template <int kKernelHeight, int kKernelWidth, int kStride, bool kPartial>
__attribute__((flatten)) void convolveVectorRow(const DepthwiseNhwcArgs &a, const MiddleColumns &middle, int64_t oh,
                                                int64_t channel, int count) {
  const Taps<kKernelHeight, kKernelWidth> taps(a, channel);
  const int64_t rowOffset = oh * a.outWidth * a.channels + channel;
  const int64_t top = oh * a.strideHeight - a.padTop;
  int64_t rowBegin = 0, rowEnd = 0;
  rowsInside(a, top, &rowBegin, &rowEnd);
  const RowKernel<kKernelHeight, kKernelWidth, kStride, kPartial> row{
      taps,
      a.x + channel,
      a.residual != nullptr ? a.residual + rowOffset : nullptr,
      a.y + rowOffset,
      a.bias != nullptr ? loadChannels<kPartial>(a.bias + channel, count) : Vec{},
      Vec{} + a.clampLow,
      Vec{} + a.clampHigh,
      a.channels,
      a.inWidth,
      a.outWidth,
      kKernelHeight > 0 ? kKernelHeight : a.kernelHeight,
      kKernelWidth > 0 ? kKernelWidth : a.kernelWidth,
      kStride > 0 ? kStride : a.strideWidth,
      a.dilationHeight,
      a.dilationWidth,
      a.padLeft,
      top,
      rowBegin,
      rowEnd,
      count};
  row.run(middle);
}

template <int kKernelHeight, int kKernelWidth, int kStride>
void convolveRows(const DepthwiseNhwcArgs &a) {
  const MiddleColumns middle = middleColumns(a);
  for (int64_t oh = a.rowBegin; oh < a.rowEnd; ++oh) {
    int64_t c = a.channelBegin;
    for (; c + kLanes <= a.channelEnd; c += kLanes) {
      convolveVectorRow<kKernelHeight, kKernelWidth, kStride, /*kPartial=*/false>(a, middle, oh, c, kLanes);
    }
    if (c < a.channelEnd) {
      convolveVectorRow<kKernelHeight, kKernelWidth, kStride, /*kPartial=*/true>(a, middle, oh, c,
                                                                                 int(a.channelEnd - c));
    }
  }
}

#undef TESSEL_DW_NHWC_INLINE

}  // namespace

void TESSEL_DEPTHWISE_NHWC_FN(const DepthwiseNhwcArgs &args) {
  // 3x3, by far the most common depthwise kernel, gets fixed tap counts (taps in registers);
  // anything else takes the general loop. Each fixed variant is a large flattened function, so
  // there are few of them.
  const bool square3 = args.kernelHeight == 3 && args.kernelWidth == 3;
  if (square3 && args.strideWidth == 1) return convolveRows<3, 3, 1>(args);
  if (square3 && args.strideWidth == 2) return convolveRows<3, 3, 2>(args);
  convolveRows<0, 0, 0>(args);
}

}  // namespace tessel::cpu
