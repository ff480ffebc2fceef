// The convolution shapes the cpu kernel tests build.
#pragma once

#include <cstdint>

#include "targets/cpu/kernels/conv.h"

namespace tessel::cpu::testing {

/// A shape with its output sizes derived from the end pads, as ONNX does (floor mode).
inline Conv2dShape convShape(int64_t batch, int64_t inChannels, int64_t height, int64_t width, int64_t outChannels,
                             int64_t group, int64_t kernelH, int64_t kernelW, int64_t stride, int64_t dilation,
                             int64_t padTop, int64_t padLeft, int64_t padBottom, int64_t padRight) {
  Conv2dShape s;
  s.batch = batch;
  s.inChannels = inChannels;
  s.inHeight = height;
  s.inWidth = width;
  s.outChannels = outChannels;
  s.group = group;
  s.kernelHeight = kernelH;
  s.kernelWidth = kernelW;
  s.strideHeight = s.strideWidth = stride;
  s.dilationHeight = s.dilationWidth = dilation;
  s.padTop = padTop;
  s.padLeft = padLeft;
  s.outHeight = (height + padTop + padBottom - ((kernelH - 1) * dilation + 1)) / stride + 1;
  s.outWidth = (width + padLeft + padRight - ((kernelW - 1) * dilation + 1)) / stride + 1;
  return s;
}

}  // namespace tessel::cpu::testing
