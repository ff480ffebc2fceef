// The spatial part of a Conv2dShape from the window geometry the reference computes (1-D windows
// have width only), shared by the Conv and ConvTranspose lowerings; and the whole shape of the
// integer convolutions (ConvInteger, QLinearConv).
#pragma once

#include <string_view>

#include "ops/reference/nn_common.h"
#include "targets/cpu/kernels/conv.h"
#include "targets/cpu/step.h"

namespace tessel::cpu {

inline void setSpatialSizes(const ref::WindowGeometry &g, Conv2dShape &s) {
  const size_t last = g.spatialRank() - 1;  // Width; height is the axis before it, if any.
  s.inWidth = g.inSizes[last];
  s.outWidth = g.outSizes[last];
  s.kernelWidth = g.kernel[last];
  s.strideWidth = g.strides[last];
  s.dilationWidth = g.dilations[last];
  s.padLeft = g.padBegin[last];
  if (g.spatialRank() == 2) {
    s.inHeight = g.inSizes[0];
    s.outHeight = g.outSizes[0];
    s.kernelHeight = g.kernel[0];
    s.strideHeight = g.strides[0];
    s.dilationHeight = g.dilations[0];
    s.padTop = g.padBegin[0];
  }
}

/// Reads and checks the geometry of an integer convolution whose X and W are inputs `x` and `w`
/// (NCHW, or NHWC with `channelsLast`; a 1-D conv gets height 1). Errors name `op`. Precondition:
/// X has rank 3 or 4 (4 when channels-last).
Expected<Conv2dShape> readQuantizedConvShape(const LowerContext &ctx, size_t x, size_t w, std::string_view op,
                                             bool channelsLast = false);

}  // namespace tessel::cpu
