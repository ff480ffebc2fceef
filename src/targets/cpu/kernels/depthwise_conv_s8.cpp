// Int8 channels-last depthwise convolution: the run-time choice of the ISA build and the threaded
// driver; the loop is in depthwise_conv_s8_impl.h.
#include "targets/cpu/kernels/depthwise_conv_s8.h"

#include <algorithm>

#include "support/diagnostic.h"
#include "targets/cpu/kernels/elementwise.h"

namespace tessel::cpu {

namespace {

constexpr DepthwiseS8Variant kVariants[] = {
    {"s8_depthwise_conv2d_nhwc__avx512", Isa::Avx512 | Isa::Fma, depthwiseS8Rows__avx512},
    {"s8_depthwise_conv2d_nhwc__avx2", Isa::Avx2 | Isa::Fma, depthwiseS8Rows__avx2},
    {"s8_depthwise_conv2d_nhwc__generic", Isa::None, depthwiseS8Rows__generic},
};

const DepthwiseS8Variant &selected() {
  static const DepthwiseS8Variant &variant = []() -> const DepthwiseS8Variant & {
    for (const DepthwiseS8Variant &v : kVariants) {
      if (hasAll(hostIsa(), v.isa)) return v;
    }
    return kVariants[std::size(kVariants) - 1];
  }();
  return variant;
}

// Output elements (pixels times channels) per task.
constexpr int64_t kTaskElements = 16384;

}  // namespace

bool runsDepthwiseConvS8(const Conv2dShape &shape) {
  return shape.group > 1 && shape.group == shape.inChannels && shape.group == shape.outChannels &&
         shape.kernelHeight * shape.kernelWidth <= kMaxExactTaps;
}

std::vector<int16_t> packDepthwiseS8Weights(const Conv2dShape &shape, const void *w, bool wSigned,
                                            const std::vector<int32_t> &zeroPoints) {
  const int64_t c = shape.outChannels, taps = shape.kernelHeight * shape.kernelWidth;
  std::vector<int16_t> packed(static_cast<size_t>(taps * c));
  for (int64_t ch = 0; ch < c; ++ch) {
    for (int64_t t = 0; t < taps; ++t) {
      const int32_t v = wSigned ? int32_t(static_cast<const int8_t *>(w)[ch * taps + t])
                                : int32_t(static_cast<const uint8_t *>(w)[ch * taps + t]);
      packed[size_t(t * c + ch)] = int16_t(v - zeroPoints[size_t(ch)]);
    }
  }
  return packed;
}

void depthwiseConvS8With(const DepthwiseS8Variant &variant, const Conv2dShape &shape, const void *x, bool xSigned,
                         int32_t xZero, const int16_t *weights, const DepthwiseS8Output &output, void *y,
                         ThreadPool *pool) {
  TESSEL_CHECK(hasAll(hostIsa(), variant.isa), "depthwise variant {} needs ISA this host lacks", variant.name);
  const int64_t c = shape.outChannels, rows = shape.batch * shape.outHeight;
  const int64_t rowElements = shape.outWidth * c;
  parallelRanges(pool, rows, std::max<int64_t>(1, kTaskElements / std::max<int64_t>(rowElements, 1)),
                 [&](int64_t begin, int64_t end) {
                   // A task's rows may span images: one call per image.
                   for (int64_t row = begin; row < end;) {
                     const int64_t image = row / shape.outHeight;
                     const int64_t last = std::min(end, (image + 1) * shape.outHeight);
                     DepthwiseS8Args a;
                     a.x = static_cast<const uint8_t *>(x) + image * shape.inPlane() * c;
                     a.weights = weights;
                     a.bias = output.bias;
                     a.multiplier = output.multiplier;
                     a.y = static_cast<uint8_t *>(y) + image * shape.outPlane() * c;
                     a.xSigned = xSigned;
                     a.ySigned = output.ySigned;
                     a.xZero = xZero;
                     a.yZero = output.zeroPoint;
                     a.channels = c;
                     a.rowBegin = row - image * shape.outHeight;
                     a.rowEnd = last - image * shape.outHeight;
                     a.inHeight = shape.inHeight;
                     a.inWidth = shape.inWidth;
                     a.outWidth = shape.outWidth;
                     a.kernelHeight = shape.kernelHeight;
                     a.kernelWidth = shape.kernelWidth;
                     a.strideHeight = shape.strideHeight;
                     a.strideWidth = shape.strideWidth;
                     a.dilationHeight = shape.dilationHeight;
                     a.dilationWidth = shape.dilationWidth;
                     a.padTop = shape.padTop;
                     a.padLeft = shape.padLeft;
                     variant.rows(a);
                     row = last;
                   }
                 });
}

void depthwiseConvS8(const Conv2dShape &shape, const void *x, bool xSigned, int32_t xZero, const int16_t *weights,
                     const DepthwiseS8Output &output, void *y, ThreadPool *pool) {
  depthwiseConvS8With(selected(), shape, x, xSigned, xZero, weights, output, y, pool);
}

const char *depthwiseConvS8KernelName() { return selected().name; }

std::span<const DepthwiseS8Variant> depthwiseConvS8Variants() { return kVariants; }

}  // namespace tessel::cpu
