// The depthwise plane loop, written once and compiled per ISA: included by exactly one file in
// each isa/<family>/ folder, which defines TESSEL_DEPTHWISE_PLANE_FN to its exported name.
// Everything here has internal linkage and calls no inline library templates, so no code built
// with AVX flags can be shared with (and picked by the linker for) a generic build.
#include "targets/cpu/kernels/depthwise_conv_variants.h"

#ifndef TESSEL_DEPTHWISE_PLANE_FN
#error "define TESSEL_DEPTHWISE_PLANE_FN before including depthwise_conv_impl.h"
#endif

namespace tessel::cpu {
namespace {

/// Output columns [*begin, *end) whose input column ow * stride + offset lies in [0, inWidth).
inline void tapColumns(int64_t inWidth, int64_t outWidth, int64_t stride, int64_t offset, int64_t *begin,
                       int64_t *end) {
  int64_t b = offset >= 0 ? 0 : (-offset + stride - 1) / stride;
  int64_t e = inWidth - 1 - offset < 0 ? 0 : (inWidth - 1 - offset) / stride + 1;
  if (e > outWidth) e = outWidth;
  if (b > e) b = e;
  *begin = b;
  *end = e;
}

// Kernel widths up to this get their per-tap column ranges computed once per plane; wider ones
// (rare) recompute them per row.
constexpr int64_t kMaxPlannedTaps = 16;

/// The columns each tap of a kernel row reaches inside the input, and the middle run where all
/// of them do (the loops there need no bounds checks). The same for every row of a plane.
struct RowColumns {
  int64_t middleBegin = 0, middleEnd = 0;
  int64_t tapBegin[kMaxPlannedTaps], tapEnd[kMaxPlannedTaps];
  bool planned = false;  // tapBegin/tapEnd hold every tap.
};

inline RowColumns rowColumns(const DepthwisePlaneArgs &a, int64_t kernelWidth, int64_t stride) {
  RowColumns columns;
  int64_t unused = 0;
  tapColumns(a.inWidth, a.outWidth, stride, -a.padLeft, &columns.middleBegin, &unused);
  tapColumns(a.inWidth, a.outWidth, stride, (kernelWidth - 1) * a.dilationWidth - a.padLeft, &unused,
             &columns.middleEnd);
  if (columns.middleEnd < columns.middleBegin) columns.middleEnd = columns.middleBegin;
  columns.planned = kernelWidth <= kMaxPlannedTaps;
  for (int64_t kw = 0; columns.planned && kw < kernelWidth; ++kw) {
    tapColumns(a.inWidth, a.outWidth, stride, kw * a.dilationWidth - a.padLeft, &columns.tapBegin[kw],
               &columns.tapEnd[kw]);
  }
  return columns;
}

/// yRow[ow] += taps[kw] * xRow[ow * stride + kw * dilation - padLeft] for the columns outside the
/// middle run, tap by tap over each tap's valid columns.
void accumulateEdges(const DepthwisePlaneArgs &a, int64_t kernelWidth, int64_t stride, const RowColumns &columns,
                     const float *xRow, const float *taps, float *yRow) {
  for (int64_t kw = 0; kw < kernelWidth; ++kw) {
    const int64_t offset = kw * a.dilationWidth - a.padLeft;
    int64_t begin = 0, end = 0;
    if (columns.planned) {
      begin = columns.tapBegin[kw];
      end = columns.tapEnd[kw];
    } else {
      tapColumns(a.inWidth, a.outWidth, stride, offset, &begin, &end);
    }
    const float w = taps[kw];
    for (int64_t ow = begin; ow < end && ow < columns.middleBegin; ++ow) yRow[ow] += w * xRow[ow * stride + offset];
    for (int64_t ow = columns.middleEnd > begin ? columns.middleEnd : begin; ow < end; ++ow) {
      yRow[ow] += w * xRow[ow * stride + offset];
    }
  }
}

/// The same over the middle run, one kernel row at a time. kKernelWidth and kStride are 0 when
/// only known at run time; fixed ones give the compiler fixed trip counts to vectorize over ow.
template <int kKernelWidth, int kStride>
void accumulateMiddle(const DepthwisePlaneArgs &a, const RowColumns &middle, const float *xRow, const float *taps,
                      float *yRow) {
  const int64_t stride = kStride > 0 ? kStride : a.strideWidth;
  const int64_t dilation = a.dilationWidth;
  const float *x0 = xRow - a.padLeft;
  if constexpr (kKernelWidth > 0) {
    float w[kKernelWidth];
    for (int kw = 0; kw < kKernelWidth; ++kw) w[kw] = taps[kw];
    for (int64_t ow = middle.middleBegin; ow < middle.middleEnd; ++ow) {
      float acc = yRow[ow];
      for (int kw = 0; kw < kKernelWidth; ++kw) acc += w[kw] * x0[ow * stride + kw * dilation];
      yRow[ow] = acc;
    }
  } else {
    for (int64_t kw = 0; kw < a.kernelWidth; ++kw) {
      const float w = taps[kw];
      const float *xTap = x0 + kw * dilation;
      for (int64_t ow = middle.middleBegin; ow < middle.middleEnd; ++ow) yRow[ow] += w * xTap[ow * stride];
    }
  }
}

/// A row whose kernel rows all land inside the input, with a fixed kernel: every tap of the
/// window in one pass over the middle run, the sum kept in registers.
template <int kKernelHeight, int kKernelWidth, int kStride>
void accumulateFullWindow(const DepthwisePlaneArgs &a, const RowColumns &middle, const float *xTop, float *yRow) {
  const int64_t dilation = a.dilationWidth;
  const float *rows[kKernelHeight];
  float w[kKernelHeight][kKernelWidth];
  for (int kh = 0; kh < kKernelHeight; ++kh) {
    rows[kh] = xTop + kh * a.dilationHeight * a.inWidth - a.padLeft;
    for (int kw = 0; kw < kKernelWidth; ++kw) w[kh][kw] = a.taps[kh * kKernelWidth + kw];
  }
  for (int64_t ow = middle.middleBegin; ow < middle.middleEnd; ++ow) {
    float acc = yRow[ow];
    for (int kh = 0; kh < kKernelHeight; ++kh) {
      for (int kw = 0; kw < kKernelWidth; ++kw) acc += w[kh][kw] * rows[kh][ow * kStride + kw * dilation];
    }
    yRow[ow] = acc;
  }
}

/// kKernelHeight is 0 unless both kernel sizes are fixed.
template <int kKernelHeight, int kKernelWidth, int kStride>
void depthwisePlane(const DepthwisePlaneArgs &a) {
  const int64_t kernelWidth = kKernelWidth > 0 ? kKernelWidth : a.kernelWidth;
  const int64_t stride = kStride > 0 ? kStride : a.strideWidth;
  const RowColumns middle = rowColumns(a, kernelWidth, stride);
  for (int64_t oh = 0; oh < a.outHeight; ++oh) {
    float *yRow = a.y + oh * a.outWidth;
    if (a.residual != nullptr) {
      const float *rRow = a.residual + oh * a.outWidth;
      for (int64_t ow = 0; ow < a.outWidth; ++ow) yRow[ow] = rRow[ow] + a.bias;
    } else {
      for (int64_t ow = 0; ow < a.outWidth; ++ow) yRow[ow] = a.bias;
    }
    const int64_t top = oh * a.strideHeight - a.padTop;
    if constexpr (kKernelHeight > 0) {
      if (top >= 0 && top + (kKernelHeight - 1) * a.dilationHeight < a.inHeight) {
        for (int64_t kh = 0; kh < kKernelHeight; ++kh) {
          accumulateEdges(a, kernelWidth, stride, middle, a.x + (top + kh * a.dilationHeight) * a.inWidth,
                          a.taps + kh * kernelWidth, yRow);
        }
        accumulateFullWindow<kKernelHeight, kKernelWidth, kStride>(a, middle, a.x + top * a.inWidth, yRow);
        continue;
      }
    }
    for (int64_t kh = 0; kh < a.kernelHeight; ++kh) {
      const int64_t ih = top + kh * a.dilationHeight;
      if (ih < 0 || ih >= a.inHeight) continue;
      const float *xRow = a.x + ih * a.inWidth;
      const float *taps = a.taps + kh * a.kernelWidth;
      accumulateEdges(a, kernelWidth, stride, middle, xRow, taps, yRow);
      accumulateMiddle<kKernelWidth, kStride>(a, middle, xRow, taps, yRow);
    }
  }
}

}  // namespace

void TESSEL_DEPTHWISE_PLANE_FN(const DepthwisePlaneArgs &args) {
  // The target models' shapes get fixed trip counts; anything else takes the general loop.
  const bool square3 = args.kernelHeight == 3 && args.kernelWidth == 3;
  const bool square5 = args.kernelHeight == 5 && args.kernelWidth == 5;
  if (square3 && args.strideWidth == 1) return depthwisePlane<3, 3, 1>(args);
  if (square3 && args.strideWidth == 2) return depthwisePlane<3, 3, 2>(args);
  if (square5 && args.strideWidth == 1) return depthwisePlane<5, 5, 1>(args);
  if (square5 && args.strideWidth == 2) return depthwisePlane<5, 5, 2>(args);
  if (args.kernelWidth == 3 && args.strideWidth == 1) return depthwisePlane<0, 3, 1>(args);
  if (args.strideWidth == 1) return depthwisePlane<0, 0, 1>(args);
  depthwisePlane<0, 0, 0>(args);
}

}  // namespace tessel::cpu
