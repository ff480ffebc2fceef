// The pooling loops, written once and compiled per ISA: included by exactly one file in each
// isa/<family>/ folder, which defines TESSEL_POOL_FUNCTIONS to its exported table's name.
// Everything here has internal linkage and calls no inline library templates, so no code built
// with AVX flags can be shared with (and picked by the linker for) a generic build.
#include "targets/cpu/kernels/pool_folds.h"
#include "targets/cpu/kernels/pool_variants.h"

#ifndef TESSEL_POOL_FUNCTIONS
#error "define TESSEL_POOL_FUNCTIONS before including pool_impl.h"
#endif

namespace tessel::cpu {
namespace {

/// yRow[ow] = Op over kw of (yRow[ow], xRow[ow * stride + kw * dilation - padLeft]) for taps inside
/// the row: the middle run (all taps inside) with fixed trip counts, the edges tap by tap.
template <class Op, int kKernelWidth, int kStride>
void foldRow(const PoolPlaneArgs &a, const float *xRow, float *yRow) {
  const int64_t kernelWidth = kKernelWidth > 0 ? kKernelWidth : a.kernelWidth;
  const int64_t stride = kStride > 0 ? kStride : a.strideWidth;
  const int64_t dilation = a.dilationWidth;
  int64_t allBegin = 0, allEnd = 0, unused = 0;
  indicesInside(-a.padLeft, stride, a.outWidth, 0, a.inWidth, &allBegin, &unused);
  indicesInside((kernelWidth - 1) * dilation - a.padLeft, stride, a.outWidth, 0, a.inWidth, &unused, &allEnd);
  if (allEnd < allBegin) allEnd = allBegin;
  for (int64_t kw = 0; kw < kernelWidth; ++kw) {
    const int64_t offset = kw * dilation - a.padLeft;
    int64_t begin = 0, end = 0;
    indicesInside(offset, stride, a.outWidth, 0, a.inWidth, &begin, &end);
    for (int64_t ow = begin; ow < end && ow < allBegin; ++ow) {
      yRow[ow] = Op::apply(yRow[ow], xRow[ow * stride + offset]);
    }
    for (int64_t ow = allEnd > begin ? allEnd : begin; ow < end; ++ow) {
      yRow[ow] = Op::apply(yRow[ow], xRow[ow * stride + offset]);
    }
  }
  const float *x0 = xRow - a.padLeft;
  for (int64_t ow = allBegin; ow < allEnd; ++ow) {
    float acc = yRow[ow];
    for (int64_t kw = 0; kw < kernelWidth; ++kw) acc = Op::apply(acc, x0[ow * stride + kw * dilation]);
    yRow[ow] = acc;
  }
}

/// Folds every kernel row that lands in the input into each output row, so the plane holds Op
/// over each window's input elements.
template <class Op, int kKernelWidth, int kStride>
void foldPlane(const PoolPlaneArgs &a) {
  for (int64_t oh = 0; oh < a.outHeight; ++oh) {
    float *yRow = a.y + oh * a.outWidth;
    for (int64_t ow = 0; ow < a.outWidth; ++ow) yRow[ow] = Op::identity();
    for (int64_t kh = 0; kh < a.kernelHeight; ++kh) {
      const int64_t ih = oh * a.strideHeight + kh * a.dilationHeight - a.padTop;
      if (ih < 0 || ih >= a.inHeight) continue;
      foldRow<Op, kKernelWidth, kStride>(a, a.x + ih * a.inWidth, yRow);
    }
  }
}

template <class Op>
void dispatchFold(const PoolPlaneArgs &a) {
  if (a.kernelWidth == 3 && a.strideWidth == 2) return foldPlane<Op, 3, 2>(a);
  if (a.kernelWidth == 3 && a.strideWidth == 1) return foldPlane<Op, 3, 1>(a);
  if (a.kernelWidth == 2 && a.strideWidth == 2) return foldPlane<Op, 2, 2>(a);
  if (a.strideWidth == 1) return foldPlane<Op, 0, 1>(a);
  foldPlane<Op, 0, 0>(a);
}

void maxPlane(const PoolPlaneArgs &a) { dispatchFold<MaxOp>(a); }

/// Taps of a window along one axis that land in [lo, hi).
inline int64_t tapsInside(int64_t start, int64_t kernel, int64_t dilation, int64_t lo, int64_t hi) {
  int64_t begin = 0, end = 0;
  indicesInside(start, dilation, kernel, lo, hi, &begin, &end);
  return end - begin;
}

void averagePlane(const PoolPlaneArgs &a) {
  dispatchFold<SumOp>(a);
  // The divisor is separable: rows counted times columns counted.
  const bool padded = a.countIncludePad;
  const int64_t rowLo = padded ? -a.padTop : 0, rowHi = padded ? a.inHeight + a.padBottom : a.inHeight;
  const int64_t colLo = padded ? -a.padLeft : 0, colHi = padded ? a.inWidth + a.padRight : a.inWidth;
  for (int64_t oh = 0; oh < a.outHeight; ++oh) {
    const int64_t rows =
        tapsInside(oh * a.strideHeight - a.padTop, a.kernelHeight, a.dilationHeight, rowLo, rowHi);
    float *yRow = a.y + oh * a.outWidth;
    for (int64_t ow = 0; ow < a.outWidth; ++ow) {
      const int64_t cols =
          tapsInside(ow * a.strideWidth - a.padLeft, a.kernelWidth, a.dilationWidth, colLo, colHi);
      yRow[ow] = yRow[ow] / float(rows * cols);
    }
  }
}

constexpr int kLanes = 16;  // Independent partial results, so the reductions vectorize.

float sum(const float *x, int64_t n) {
  float partial[kLanes] = {};
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    for (int j = 0; j < kLanes; ++j) partial[j] += x[i + j];
  }
  float total = 0.0f;
  for (int j = 0; j < kLanes; ++j) total += partial[j];
  for (; i < n; ++i) total += x[i];
  return total;
}

float max(const float *x, int64_t n) {
  float partial[kLanes];
  for (int j = 0; j < kLanes; ++j) partial[j] = MaxOp::identity();
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    for (int j = 0; j < kLanes; ++j) partial[j] = MaxOp::apply(partial[j], x[i + j]);
  }
  float result = MaxOp::identity();
  for (int j = 0; j < kLanes; ++j) result = MaxOp::apply(result, partial[j]);
  for (; i < n; ++i) result = MaxOp::apply(result, x[i]);
  return result;
}

}  // namespace

extern const PoolFunctions TESSEL_POOL_FUNCTIONS = {&maxPlane, &averagePlane, &sum, &max};

}  // namespace tessel::cpu
