// im2col for the GEMM convolution (see im2col.h). Each row is filled one output row segment at a
// time: the taps that fall inside the input form one contiguous range of output columns, so a
// segment is zeros, a copy (a memcpy at stride 1) and zeros, with no per-element bounds checks.
#include "targets/cpu/kernels/im2col.h"

#include <algorithm>
#include <cstring>

namespace tessel::cpu {
namespace {

int64_t ceilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

/// Output columns [begin, end) of a row whose taps land inside the input, for input column
/// iw = ow * stride + offset.
void validColumns(int64_t inSize, int64_t outSize, int64_t stride, int64_t offset, int64_t *begin, int64_t *end) {
  *begin = offset >= 0 ? 0 : ceilDiv(-offset, stride);
  *end = inSize - 1 - offset < 0 ? 0 : std::min(outSize, (inSize - 1 - offset) / stride + 1);
  *begin = std::min(*begin, outSize);
  *end = std::max(*end, *begin);
}

}  // namespace

void im2colChunk(const Conv2dShape &shape, const float *xGroup, int64_t columnBegin, int64_t columns,
                 int64_t rowBegin, int64_t rowEnd, float *cols) {
  const int64_t taps = shape.kernelHeight * shape.kernelWidth;
  const int64_t outWidth = shape.outWidth;
  const int64_t strideW = shape.strideWidth;
  for (int64_t r = rowBegin; r < rowEnd; ++r) {
    const int64_t channel = r / taps;
    const int64_t kh = (r % taps) / shape.kernelWidth;
    const int64_t kw = r % shape.kernelWidth;
    const float *xChannel = xGroup + channel * shape.inPlane();
    const int64_t offset = kw * shape.dilationWidth - shape.padLeft;
    int64_t validBegin = 0, validEnd = 0;
    validColumns(shape.inWidth, outWidth, strideW, offset, &validBegin, &validEnd);

    float *dst = cols + r * columns;
    int64_t oh = columnBegin / outWidth;
    int64_t ow = columnBegin % outWidth;
    for (int64_t done = 0; done < columns; ++oh, ow = 0) {
      const int64_t count = std::min(outWidth - ow, columns - done);
      const int64_t ih = oh * shape.strideHeight - shape.padTop + kh * shape.dilationHeight;
      if (ih < 0 || ih >= shape.inHeight) {
        std::fill(dst, dst + count, 0.0f);
      } else {
        const float *xRow = xChannel + ih * shape.inWidth;
        const int64_t end = ow + count;
        const int64_t copyBegin = std::clamp(validBegin, ow, end);
        const int64_t copyEnd = std::clamp(validEnd, copyBegin, end);
        std::fill(dst, dst + (copyBegin - ow), 0.0f);
        float *copyDst = dst + (copyBegin - ow);
        if (strideW == 1) {
          std::memcpy(copyDst, xRow + copyBegin + offset, size_t(copyEnd - copyBegin) * sizeof(float));
        } else {
          const float *src = xRow + copyBegin * strideW + offset;
          for (int64_t o = 0; o < copyEnd - copyBegin; ++o) copyDst[o] = src[o * strideW];
        }
        std::fill(dst + (copyEnd - ow), dst + count, 0.0f);
      }
      dst += count;
      done += count;
    }
  }
}

}  // namespace tessel::cpu
