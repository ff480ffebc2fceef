// The channels-last depthwise row loop, written once for every element type and compiled per ISA:
// included by depthwise_conv_nhwc_impl.h (float) and depthwise_conv_s8_impl.h (8-bit), each built
// once in every isa/<family>/ folder, which defines
//   TESSEL_DEPTHWISE_NHWC_LANES   channels per vector (16, 8 or 4),
//   TESSEL_DEPTHWISE_NHWC_PIXELS  output pixels per register block.
// Channels are contiguous, so one vector holds one pixel's taps of `lanes` channels: the loop keeps
// a fixed kernel's tap vectors in registers and accumulates a block of output pixels at once; with
// unit dilation each input column of a kernel row is loaded once and feeds every tap that reads it.
// Pixels near the left and right edges, and rows whose window leaves the input, skip the taps in
// the padding. Sums are float vectors (8-bit products sum exactly in them, see
// depthwise_conv_s8_impl.h); an element policy (`Io`) loads the input as floats and starts and
// finishes each output pixel. Vectors are GCC vector extensions, so the same source becomes zmm,
// ymm or xmm code with the folder's flags.
// Everything here has internal linkage and calls no inline library templates, so no code built
// with AVX flags can be shared with (and picked by the linker for) a generic build.
#pragma once

#include <cstdint>
#include <type_traits>

#if !defined(TESSEL_DEPTHWISE_NHWC_LANES) || !defined(TESSEL_DEPTHWISE_NHWC_PIXELS)
#error "define TESSEL_DEPTHWISE_NHWC_{LANES,PIXELS} before including depthwise_conv_nhwc_rows.h"
#endif

namespace tessel::cpu {
namespace {

constexpr int kLanes = TESSEL_DEPTHWISE_NHWC_LANES;
constexpr int kPixels = TESSEL_DEPTHWISE_NHWC_PIXELS;
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
template <class T>
TESSEL_DW_NHWC_INLINE void opaque(const T *&p) {
  __asm__("" : "+r"(p));
}

/// The geometry of one call, the same for every element type.
struct DepthwiseGeometry {
  int64_t channels = 0;
  int64_t inHeight = 0, inWidth = 0, outWidth = 0;
  int64_t kernelHeight = 0, kernelWidth = 0;
  int64_t strideHeight = 1, strideWidth = 1, dilationHeight = 1, dilationWidth = 1;
  int64_t padTop = 0, padLeft = 0;
};

template <class Args>
DepthwiseGeometry geometryOf(const Args &a) {
  return {a.channels,    a.inHeight,     a.inWidth,        a.outWidth,       a.kernelHeight, a.kernelWidth,
          a.strideHeight, a.strideWidth, a.dilationHeight, a.dilationWidth, a.padTop,       a.padLeft};
}

/// A fixed kernel's tap vectors for one channel vector, loaded once per row into registers; the
/// policy converts the stored weights to floats.
template <int kKernelHeight, int kKernelWidth, class Io>
struct Taps {
  Vec v[kKernelHeight * kKernelWidth];
  TESSEL_DW_NHWC_INLINE Taps(const Io &io) {
#pragma GCC unroll 32
    for (int t = 0; t < kKernelHeight * kKernelWidth; ++t) v[t] = io.tap(t);
  }
  TESSEL_DW_NHWC_INLINE Vec at(int64_t kh, int64_t kw) const { return v[kh * kKernelWidth + kw]; }
};

/// A kernel known only at run time reads each tap vector where it is used (from L1).
template <class Io>
struct Taps<0, 0, Io> {
  const Io &io;
  int64_t kernelWidth;
  TESSEL_DW_NHWC_INLINE Taps(const Io &policy) : io(policy), kernelWidth(policy.kernelWidth()) {}
  TESSEL_DW_NHWC_INLINE Vec at(int64_t kh, int64_t kw) const { return io.tap(kh * kernelWidth + kw); }
};

/// The output columns where every tap of a kernel row lands inside the input (the block loop needs
/// no bounds checks there); the same for every row.
struct MiddleColumns {
  int64_t begin = 0, end = 0;
};

inline MiddleColumns middleColumns(const DepthwiseGeometry &g) {
  MiddleColumns m;
  m.begin = (g.padLeft + g.strideWidth - 1) / g.strideWidth;
  const int64_t lastStart = g.inWidth - 1 + g.padLeft - (g.kernelWidth - 1) * g.dilationWidth;
  m.end = lastStart < 0 ? 0 : lastStart / g.strideWidth + 1;
  if (m.end > g.outWidth) m.end = g.outWidth;
  if (m.begin > g.outWidth) m.begin = g.outWidth;
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
/// at run time; kPartial for the last vector of a channel count that is not a multiple of kLanes
/// (the policy loads and stores only `count` channels then). The geometry is copied out of the
/// args so that it lives in registers.
template <int kKernelHeight, int kKernelWidth, int kStride, bool kPartial, class Io>
struct RowKernel {
  static constexpr bool kFixedKernel = kKernelHeight > 0;
  using Input = typename Io::Input;

  const Taps<kKernelHeight, kKernelWidth, Io> &taps;
  const Io &io;
  const Input *xImage;  // At this vector's first channel.
  int64_t channels, inWidth, outWidth;
  int64_t kernelHeight, kernelWidth, stride, dilationHeight, dilationWidth, padLeft;
  int64_t top;               // Input row of kernel row 0.
  int64_t rowBegin, rowEnd;  // Kernel rows inside the input.

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

  TESSEL_DW_NHWC_INLINE Vec load(const Input *p) const { return io.template load<kPartial>(p); }

  /// A pixel near the left or right edge: taps outside the input are skipped.
  TESSEL_DW_NHWC_INLINE void edgePixel(int64_t ow) const {
    Vec acc = io.template start<kPartial>(ow);
    const int64_t left = ow * stride - padLeft;
    forEachKernelRow([&](int64_t kh) __attribute__((always_inline)) {
      const Input *xRow = xImage + (top + kh * dilationHeight) * inWidth * channels;
      forEachKernelColumn([&](int64_t kw) __attribute__((always_inline)) {
        const int64_t iw = left + kw * dilationWidth;
        if (iw < 0 || iw >= inWidth) return;
        acc += taps.at(kh, kw) * load(xRow + iw * channels);
      });
    });
    io.template finish<kPartial>(ow, acc);
  }

  /// kBlock pixels from ow on, all inside the middle columns: every tap vector is used kBlock
  /// times while it sits in a register, and the accumulators never leave registers.
  template <int kBlock>
  TESSEL_DW_NHWC_INLINE void middleBlock(int64_t ow) const {
    Vec acc[kBlock];
    unrolled<0, kBlock>([&](int64_t p) __attribute__((always_inline)) { acc[p] = io.template start<kPartial>(ow + p); });
    const int64_t pixelStep = stride * channels;
    const int64_t tapStep = dilationWidth * channels;
    forEachKernelRow([&](int64_t kh) __attribute__((always_inline)) {
      const Input *x0 = xImage + ((top + kh * dilationHeight) * inWidth + ow * stride - padLeft) * channels;
      forEachKernelColumn([&](int64_t kw) __attribute__((always_inline)) {
        const Vec w = taps.at(kh, kw);
        const Input *xTap = x0 + kw * tapStep;
        unrolled<0, kBlock>([&](int64_t p) __attribute__((always_inline)) {
          acc[p] += w * load(xTap);
          xTap += pixelStep;
          opaque(xTap);
        });
      });
    });
    unrolled<0, kBlock>([&](int64_t p) __attribute__((always_inline)) { io.template finish<kPartial>(ow + p, acc[p]); });
  }

  /// middleBlock for a fixed kernel and stride with unit dilation, where the taps of neighbouring
  /// pixels share input columns: each column is loaded once and feeds every tap that reads it.
  template <int kBlock>
  TESSEL_DW_NHWC_INLINE void middleBlockSharedColumns(int64_t ow) const {
    constexpr int kColumns = (kBlock - 1) * kStride + kKernelWidth;
    Vec acc[kBlock];
    unrolled<0, kBlock>([&](int64_t p) __attribute__((always_inline)) { acc[p] = io.template start<kPartial>(ow + p); });
    forEachKernelRow([&](int64_t kh) __attribute__((always_inline)) {
      const Input *x = xImage + ((top + kh * dilationHeight) * inWidth + ow * kStride - padLeft) * channels;
      Vec column[kColumns];
      unrolled<0, kColumns>([&](int64_t j) __attribute__((always_inline)) {
        column[j] = load(x);
        x += channels;
        opaque(x);
      });
      unrolled<0, kKernelWidth>([&](int64_t kw) __attribute__((always_inline)) {
        const Vec w = taps.at(kh, kw);
        unrolled<0, kBlock>([&](int64_t p) __attribute__((always_inline)) { acc[p] += w * column[p * kStride + kw]; });
      });
    });
    unrolled<0, kBlock>([&](int64_t p) __attribute__((always_inline)) { io.template finish<kPartial>(ow + p, acc[p]); });
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
inline void rowsInside(const DepthwiseGeometry &g, int64_t top, int64_t *begin, int64_t *end) {
  const int64_t d = g.dilationHeight;
  int64_t b = top >= 0 ? 0 : (-top + d - 1) / d;
  int64_t e = g.inHeight - 1 - top < 0 ? 0 : (g.inHeight - 1 - top) / d + 1;
  if (e > g.kernelHeight) e = g.kernelHeight;
  if (b > e) b = e;
  *begin = b;
  *end = e;
}

/// Output row oh of one channel vector (`count` channels from `channel` on). The policy is made
/// here, a local, so its vectors stay in registers: stores to y cannot alias it.
template <int kKernelHeight, int kKernelWidth, int kStride, bool kPartial, class Io>
__attribute__((flatten)) void convolveRow(const typename Io::Args &a, const DepthwiseGeometry &g,
                                          const MiddleColumns &middle, int64_t oh, int64_t channel, int count) {
  const Io io(a, oh, channel, count);
  const Taps<kKernelHeight, kKernelWidth, Io> taps(io);
  const int64_t top = oh * g.strideHeight - g.padTop;
  int64_t rowBegin = 0, rowEnd = 0;
  rowsInside(g, top, &rowBegin, &rowEnd);
  const RowKernel<kKernelHeight, kKernelWidth, kStride, kPartial, Io> row{
      taps,
      io,
      static_cast<const typename Io::Input *>(a.x) + channel,
      g.channels,
      g.inWidth,
      g.outWidth,
      kKernelHeight > 0 ? kKernelHeight : g.kernelHeight,
      kKernelWidth > 0 ? kKernelWidth : g.kernelWidth,
      kStride > 0 ? kStride : g.strideWidth,
      g.dilationHeight,
      g.dilationWidth,
      g.padLeft,
      top,
      rowBegin,
      rowEnd};
  row.run(middle);
}

template <class Io, int kKernelHeight, int kKernelWidth, int kStride>
void convolveRows(const typename Io::Args &a, int64_t channelBegin, int64_t channelEnd) {
  const DepthwiseGeometry g = geometryOf(a);
  const MiddleColumns middle = middleColumns(g);
  for (int64_t oh = a.rowBegin; oh < a.rowEnd; ++oh) {
    int64_t c = channelBegin;
    for (; c + kLanes <= channelEnd; c += kLanes) {
      convolveRow<kKernelHeight, kKernelWidth, kStride, /*kPartial=*/false, Io>(a, g, middle, oh, c, kLanes);
    }
    if (c < channelEnd) {
      convolveRow<kKernelHeight, kKernelWidth, kStride, /*kPartial=*/true, Io>(a, g, middle, oh, c,
                                                                               int(channelEnd - c));
    }
  }
}

/// Output rows [a.rowBegin, a.rowEnd), channels [channelBegin, channelEnd), with the element policy
/// Io. 3x3, by far the most common depthwise kernel, gets fixed tap counts (taps in registers);
/// anything else takes the general loop. Each fixed variant is a large flattened function, so there
/// are few of them.
template <class Io>
void convolveDepthwiseRows(const typename Io::Args &a, int64_t channelBegin, int64_t channelEnd) {
  const bool square3 = a.kernelHeight == 3 && a.kernelWidth == 3;
  if (square3 && a.strideWidth == 1) return convolveRows<Io, 3, 3, 1>(a, channelBegin, channelEnd);
  if (square3 && a.strideWidth == 2) return convolveRows<Io, 3, 3, 2>(a, channelBegin, channelEnd);
  convolveRows<Io, 0, 0, 0>(a, channelBegin, channelEnd);
}

}  // namespace
}  // namespace tessel::cpu
