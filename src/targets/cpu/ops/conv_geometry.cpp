// The shape of an integer convolution (ConvInteger, QLinearConv) from its operands and attributes.
#include "targets/cpu/ops/conv_geometry.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace tessel::cpu {

namespace {

std::string formatSizes(const std::vector<int64_t> &sizes) { return fmt::format("[{}]", fmt::join(sizes, ",")); }

/// NHWC sizes as NCHW ones.
std::vector<int64_t> channelsFirst(std::vector<int64_t> sizes) {
  if (sizes.size() == 4) sizes = {sizes[0], sizes[3], sizes[1], sizes[2]};
  return sizes;
}

}  // namespace

Expected<Conv2dShape> readQuantizedConvShape(const LowerContext &ctx, size_t xIndex, size_t wIndex,
                                             std::string_view op, bool channelsLast) {
  std::vector<int64_t> x = ctx.inputSizes(xIndex), y = ctx.outputSizes(0);
  if (channelsLast) x = channelsFirst(std::move(x)), y = channelsFirst(std::move(y));
  const std::vector<int64_t> w = ctx.inputSizes(wIndex);
  if (w.size() != x.size()) {
    return makeError(ErrorCode::ShapeMismatch, "{}: W has shape {}; expected rank {} like X {}", op, formatSizes(w),
                     x.size(), formatSizes(x));
  }
  Conv2dShape s;
  s.batch = x[0];
  s.inChannels = x[1];
  s.outChannels = w[0];
  s.group = ctx.node().attrInt("group", 1);
  if (s.group <= 0 || s.inChannels % s.group != 0 || s.outChannels % s.group != 0 || w[1] != s.inChannels / s.group) {
    return makeError(ErrorCode::ShapeMismatch, "{}: group {} does not fit X {} and W {}", op, s.group, formatSizes(x),
                     formatSizes(w));
  }
  const std::vector<int64_t> inSpatial(x.begin() + 2, x.end()), weightSpatial(w.begin() + 2, w.end());
  auto kernel = ref::readKernelShape(ctx.node(), inSpatial.size(), weightSpatial);
  if (!kernel.ok()) return makeError(kernel.diag().code, "{}: {}", op, kernel.diag().message);
  auto window = ref::forwardWindow(ctx.node(), inSpatial, *kernel, /*ceilMode=*/false);
  if (!window.ok()) return makeError(window.diag().code, "{}: {}", op, window.diag().message);
  std::vector<int64_t> expectedOut = {s.batch, s.outChannels};
  expectedOut.insert(expectedOut.end(), window->outSizes.begin(), window->outSizes.end());
  if (y != expectedOut) {
    return makeError(ErrorCode::ShapeMismatch, "{}: output is {}; X, W and the attributes give {}", op,
                     formatSizes(y), formatSizes(expectedOut));
  }
  setSpatialSizes(*window, s);
  return s;
}

}  // namespace tessel::cpu
