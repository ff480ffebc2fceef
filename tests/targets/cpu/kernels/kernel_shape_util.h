// The convolution and pooling shapes the cpu kernel tests build.
#pragma once

#include <cstdint>
#include <string>
#include <utility>

#include "targets/cpu/kernels/conv.h"
#include "targets/cpu/kernels/pool.h"

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

/// A named pooling case.
struct PoolCase {
  std::string name;
  Pool2dShape shape;
};

/// One output dim of a pool: floor or ceil mode, where ceil mode drops a last window that would
/// start inside the end padding (as ONNX and PyTorch do).
inline int64_t poolOutputSize(int64_t in, int64_t kernel, int64_t stride, int64_t dilation, int64_t padBegin,
                              int64_t padEnd, bool ceilMode) {
  const int64_t span = in + padBegin + padEnd - ((kernel - 1) * dilation + 1);
  int64_t out = (ceilMode ? (span + stride - 1) / stride : span / stride) + 1;
  if (ceilMode && (out - 1) * stride >= in + padBegin) --out;
  return out;
}

inline PoolCase poolCase(std::string name, int64_t batch, int64_t channels, int64_t height, int64_t width,
                         int64_t kernelH, int64_t kernelW, int64_t stride, int64_t dilation, int64_t padTop,
                         int64_t padLeft, int64_t padBottom, int64_t padRight, bool ceilMode) {
  Pool2dShape s;
  s.batch = batch;
  s.channels = channels;
  s.inHeight = height;
  s.inWidth = width;
  s.kernelHeight = kernelH;
  s.kernelWidth = kernelW;
  s.strideHeight = s.strideWidth = stride;
  s.dilationHeight = s.dilationWidth = dilation;
  s.padTop = padTop;
  s.padLeft = padLeft;
  s.padBottom = padBottom;
  s.padRight = padRight;
  s.outHeight = poolOutputSize(height, kernelH, stride, dilation, padTop, padBottom, ceilMode);
  s.outWidth = poolOutputSize(width, kernelW, stride, dilation, padLeft, padRight, ceilMode);
  return {std::move(name), s};
}

}  // namespace tessel::cpu::testing
