// The channels-last pooling loops, written once and compiled per ISA: included by exactly one file
// in each isa/<family>/ folder, which defines TESSEL_POOL_NHWC_FUNCTIONS to its exported table's
// name. Channels are contiguous, so every loop runs along them: a window's taps are folded into a
// chunk of kChunk channels held in registers, one tap (a contiguous run of the input) at a time.
// Everything here has internal linkage and calls no inline library templates, so no code built
// with AVX flags can be shared with (and picked by the linker for) a generic build.
#include "targets/cpu/kernels/pool_folds.h"
#include "targets/cpu/kernels/pool_nhwc_variants.h"

#ifndef TESSEL_POOL_NHWC_FUNCTIONS
#error "define TESSEL_POOL_NHWC_FUNCTIONS before including pool_nhwc_impl.h"
#endif

namespace tessel::cpu {
namespace {

// Channels folded at once: four AVX-512 vectors of floats (one of bytes), enough to hide the
// latency of each add or max.
constexpr int64_t kChunk = 64;

/// y[c] = Op over the window's input taps, times `scale` for the average, for `count` channels.
template <class T, class Op, bool kScale>
inline void foldWindow(const PoolNhwcArgs &a, int64_t top, int64_t left, int64_t khBegin, int64_t khEnd,
                       int64_t kwBegin, int64_t kwEnd, float scale, T *y, int64_t count) {
  const T *xImage = static_cast<const T *>(a.x) + a.channelBegin;
  for (int64_t c = 0; c < count; c += kChunk) {
    const int64_t n = count - c < kChunk ? count - c : kChunk;
    T acc[kChunk];
    for (int64_t j = 0; j < kChunk; ++j) acc[j] = Op::identity();
    for (int64_t kh = khBegin; kh < khEnd; ++kh) {
      for (int64_t kw = kwBegin; kw < kwEnd; ++kw) {
        const int64_t pixel = (top + kh * a.dilationHeight) * a.inWidth + left + kw * a.dilationWidth;
        const T *x = xImage + pixel * a.channels + c;
        if (n == kChunk) {
          for (int64_t j = 0; j < kChunk; ++j) acc[j] = Op::apply(acc[j], x[j]);
        } else {
          for (int64_t j = 0; j < n; ++j) acc[j] = Op::apply(acc[j], x[j]);
        }
      }
    }
    if constexpr (kScale) {
      for (int64_t j = 0; j < n; ++j) y[c + j] = acc[j] * scale;
    } else {
      for (int64_t j = 0; j < n; ++j) y[c + j] = acc[j];
    }
  }
}

template <class T, class Op, bool kAverage>
void poolRows(const PoolNhwcArgs &a) {
  const int64_t count = a.channelEnd - a.channelBegin;
  // count_include_pad counts the taps inside the padded input (never past the end pads, which a
  // ceil_mode window can reach); otherwise the taps inside the input, which are also those folded.
  const int64_t rowLo = a.countIncludePad ? -a.padTop : 0;
  const int64_t rowHi = a.countIncludePad ? a.inHeight + a.padBottom : a.inHeight;
  const int64_t colLo = a.countIncludePad ? -a.padLeft : 0;
  const int64_t colHi = a.countIncludePad ? a.inWidth + a.padRight : a.inWidth;
  for (int64_t oh = a.rowBegin; oh < a.rowEnd; ++oh) {
    const int64_t top = oh * a.strideHeight - a.padTop;
    int64_t khBegin = 0, khEnd = 0, countedBegin = 0, countedEnd = 0;
    indicesInside(top, a.dilationHeight, a.kernelHeight, 0, a.inHeight, &khBegin, &khEnd);
    indicesInside(top, a.dilationHeight, a.kernelHeight, rowLo, rowHi, &countedBegin, &countedEnd);
    const int64_t countedRows = countedEnd - countedBegin;
    for (int64_t ow = 0; ow < a.outWidth; ++ow) {
      const int64_t left = ow * a.strideWidth - a.padLeft;
      int64_t kwBegin = 0, kwEnd = 0;
      indicesInside(left, a.dilationWidth, a.kernelWidth, 0, a.inWidth, &kwBegin, &kwEnd);
      float scale = 1.0f;
      if constexpr (kAverage) {
        int64_t cb = 0, ce = 0;
        indicesInside(left, a.dilationWidth, a.kernelWidth, colLo, colHi, &cb, &ce);
        scale = 1.0f / float(countedRows * (ce - cb));
      }
      T *y = static_cast<T *>(a.y) + (oh * a.outWidth + ow) * a.channels + a.channelBegin;
      foldWindow<T, Op, kAverage>(a, top, left, khBegin, khEnd, kwBegin, kwEnd, scale, y, count);
    }
  }
}

void maxRows(const PoolNhwcArgs &a) { poolRows<float, MaxOp, /*kAverage=*/false>(a); }
void maxRowsU8(const PoolNhwcArgs &a) { poolRows<uint8_t, BytesMaxOp<uint8_t>, /*kAverage=*/false>(a); }
void maxRowsS8(const PoolNhwcArgs &a) { poolRows<int8_t, BytesMaxOp<int8_t>, /*kAverage=*/false>(a); }
void averageRows(const PoolNhwcArgs &a) { poolRows<float, SumOp, /*kAverage=*/true>(a); }

void scaledChannelSums(const float *x, int64_t pixels, int64_t channels, int64_t channelBegin, int64_t channelEnd,
                       float scale, float *y) {
  for (int64_t c = channelBegin; c < channelEnd; c += kChunk) {
    const int64_t n = channelEnd - c < kChunk ? channelEnd - c : kChunk;
    float acc[kChunk] = {};
    for (int64_t p = 0; p < pixels; ++p) {
      const float *row = x + p * channels + c;
      if (n == kChunk) {
        for (int64_t j = 0; j < kChunk; ++j) acc[j] += row[j];
      } else {
        for (int64_t j = 0; j < n; ++j) acc[j] += row[j];
      }
    }
    for (int64_t j = 0; j < n; ++j) y[c + j] = acc[j] * scale;
  }
}

}  // namespace

extern const PoolNhwcFunctions TESSEL_POOL_NHWC_FUNCTIONS = {&maxRows, &maxRowsU8, &maxRowsS8, &averageRows,
                                                             &scaledChannelSums};

}  // namespace tessel::cpu
