// Reference kernels of the convolutions: Conv, ConvTranspose, and the integer and quantized forms
// ConvInteger and QLinearConv, for any number of spatial axes. All four widen to double, run one
// of two direct loops (a forward and a transposed convolution over the N-D index space) and
// narrow the result; window geometry comes from nn_common so pools read attributes the same way.
#include <algorithm>
#include <cmath>

#include "ops/reference/nn_common.h"

namespace tessel::ref {

namespace {

/// The sizes a convolution works with. For Conv the weight is [M, C/group, k...]; for
/// ConvTranspose it is [C, M/group, k...].
struct ConvShapes {
  int64_t batch = 0;
  int64_t inChannels = 0;   // C.
  int64_t outChannels = 0;  // M.
  int64_t group = 1;
  WindowGeometry window;
};

std::vector<int64_t> outputSizes(const ConvShapes &s) {
  std::vector<int64_t> sizes = {s.batch, s.outChannels};
  sizes.insert(sizes.end(), s.window.outSizes.begin(), s.window.outSizes.end());
  return sizes;
}

/// Checks X against W and `group`, reads the window geometry, and returns the shapes.
Expected<ConvShapes> readConvShapes(const KernelContext &ctx, const Tensor &x, const Tensor &w, bool transposed) {
  if (x.rank() < 3) {
    return makeError(ErrorCode::ShapeMismatch, "X has shape {}; expected [N, C, spatial...] with at least 3 dims",
                     formatSizes(x.sizes()));
  }
  if (w.rank() != x.rank()) {
    return makeError(ErrorCode::ShapeMismatch, "W has rank {} (shape {}); expected {} like X {}", w.rank(),
                     formatSizes(w.sizes()), x.rank(), formatSizes(x.sizes()));
  }
  ConvShapes s;
  s.batch = x.size(0);
  s.inChannels = x.size(1);
  s.group = ctx.node().attrInt("group", 1);
  if (s.group <= 0) return makeError(ErrorCode::InvalidArgument, "group is {}; expected >= 1", s.group);
  if (s.inChannels % s.group != 0) {
    return makeError(ErrorCode::ShapeMismatch, "X has {} channels, not divisible by group {}", s.inChannels, s.group);
  }
  if (transposed) {
    if (w.size(0) != s.inChannels) {
      return makeError(ErrorCode::ShapeMismatch, "W has shape {}; expected {} (X's channels) in dim 0",
                       formatSizes(w.sizes()), s.inChannels);
    }
    s.outChannels = w.size(1) * s.group;
  } else {
    if (w.size(1) != s.inChannels / s.group) {
      return makeError(ErrorCode::ShapeMismatch, "W has shape {}; expected {} (channels {} / group {}) in dim 1",
                       formatSizes(w.sizes()), s.inChannels / s.group, s.inChannels, s.group);
    }
    s.outChannels = w.size(0);
    if (s.outChannels % s.group != 0) {
      return makeError(ErrorCode::ShapeMismatch, "W has {} output channels, not divisible by group {}", s.outChannels,
                       s.group);
    }
  }
  std::vector<int64_t> inSpatial(x.sizes().begin() + 2, x.sizes().end());
  std::vector<int64_t> weightSpatial(w.sizes().begin() + 2, w.sizes().end());
  TESSEL_ASSIGN_OR_RETURN(std::vector<int64_t> kernel, readKernelShape(ctx.node(), inSpatial.size(), weightSpatial));
  if (transposed) {
    TESSEL_ASSIGN_OR_RETURN(s.window, transposedWindow(ctx.node(), inSpatial, std::move(kernel)));
  } else {
    TESSEL_ASSIGN_OR_RETURN(s.window, forwardWindow(ctx.node(), inSpatial, std::move(kernel), /*ceilMode=*/false));
  }
  TESSEL_RETURN_IF_ERROR(checkWorkSize(outputSizes(s), "the output"));
  return s;
}

/// The offset of input position `out * stride + k * dilation - padBegin` in the spatial block of
/// an input channel, or -1 when it falls in the padding.
int64_t inputOffset(const WindowGeometry &g, const std::vector<int64_t> &out, const std::vector<int64_t> &k) {
  int64_t offset = 0;
  for (size_t d = 0; d < g.spatialRank(); ++d) {
    int64_t pos = out[d] * g.strides[d] + k[d] * g.dilations[d] - g.padBegin[d];
    if (pos < 0 || pos >= g.inSizes[d]) return -1;
    offset = offset * g.inSizes[d] + pos;
  }
  return offset;
}

/// Y[n, m, o] = bias[m] + sum over c in m's group, k of X[n, c, o * s + k * d - p] * W[m, c, k].
std::vector<double> convolve(const ConvShapes &s, const std::vector<double> &x, const std::vector<double> &w,
                             const std::vector<double> &bias) {
  const WindowGeometry &g = s.window;
  const int64_t inPlane = numElements(g.inSizes);
  const int64_t outPlane = numElements(g.outSizes);
  const int64_t kernelSize = numElements(g.kernel);
  const int64_t inPerGroup = s.inChannels / s.group;
  const int64_t outPerGroup = s.outChannels / s.group;
  std::vector<double> y(static_cast<size_t>(s.batch * s.outChannels * outPlane));
  size_t flat = 0;
  for (int64_t n = 0; n < s.batch; ++n) {
    for (int64_t m = 0; m < s.outChannels; ++m) {
      const int64_t firstChannel = (m / outPerGroup) * inPerGroup;
      std::vector<int64_t> out(g.spatialRank(), 0);
      for (int64_t o = 0; o < outPlane; ++o, nextIndex(out, g.outSizes)) {
        double acc = bias.empty() ? 0.0 : bias[static_cast<size_t>(m)];
        std::vector<int64_t> k(g.spatialRank(), 0);
        for (int64_t kFlat = 0; kFlat < kernelSize; ++kFlat, nextIndex(k, g.kernel)) {
          int64_t offset = inputOffset(g, out, k);
          if (offset < 0) continue;
          for (int64_t c = 0; c < inPerGroup; ++c) {
            double xv = x[static_cast<size_t>((n * s.inChannels + firstChannel + c) * inPlane + offset)];
            double wv = w[static_cast<size_t>((m * inPerGroup + c) * kernelSize + kFlat)];
            acc += xv * wv;
          }
        }
        y[flat++] = acc;
      }
    }
  }
  return y;
}

/// Scatters each X[n, c, i] * W[c, m, k] into Y[n, m, i * s + k * d - padBegin] (dropping what
/// falls outside the output), then adds the bias.
std::vector<double> convolveTransposed(const ConvShapes &s, const std::vector<double> &x, const std::vector<double> &w,
                                       const std::vector<double> &bias) {
  const WindowGeometry &g = s.window;
  const int64_t inPlane = numElements(g.inSizes);
  const int64_t outPlane = numElements(g.outSizes);
  const int64_t kernelSize = numElements(g.kernel);
  const int64_t inPerGroup = s.inChannels / s.group;
  const int64_t outPerGroup = s.outChannels / s.group;
  std::vector<double> y(static_cast<size_t>(s.batch * s.outChannels * outPlane), 0.0);
  for (int64_t n = 0; n < s.batch; ++n) {
    for (int64_t c = 0; c < s.inChannels; ++c) {
      const int64_t firstOut = (c / inPerGroup) * outPerGroup;
      std::vector<int64_t> in(g.spatialRank(), 0);
      for (int64_t i = 0; i < inPlane; ++i, nextIndex(in, g.inSizes)) {
        double xv = x[static_cast<size_t>((n * s.inChannels + c) * inPlane + i)];
        std::vector<int64_t> k(g.spatialRank(), 0);
        for (int64_t kFlat = 0; kFlat < kernelSize; ++kFlat, nextIndex(k, g.kernel)) {
          int64_t offset = 0;
          bool inside = true;
          for (size_t d = 0; d < g.spatialRank() && inside; ++d) {
            int64_t pos = in[d] * g.strides[d] + k[d] * g.dilations[d] - g.padBegin[d];
            inside = pos >= 0 && pos < g.outSizes[d];
            offset = offset * g.outSizes[d] + pos;
          }
          if (!inside) continue;
          for (int64_t m = 0; m < outPerGroup; ++m) {
            double wv = w[static_cast<size_t>((c * outPerGroup + m) * kernelSize + kFlat)];
            y[static_cast<size_t>((n * s.outChannels + firstOut + m) * outPlane + offset)] += xv * wv;
          }
        }
      }
    }
  }
  if (!bias.empty()) {
    for (size_t i = 0; i < y.size(); ++i) y[i] += bias[(i / static_cast<size_t>(outPlane)) % bias.size()];
  }
  return y;
}

/// The bias input (index `index`), checked to hold one value per output channel; empty if absent.
Expected<std::vector<double>> readBias(const KernelContext &ctx, size_t index, int64_t outChannels) {
  if (!ctx.hasInput(index)) return std::vector<double>{};
  const Tensor &b = ctx.tensor(index);
  if (b.rank() != 1 || b.size(0) != outChannels) {
    return makeError(ErrorCode::ShapeMismatch, "bias has shape {}; expected [{}] (one per output channel)",
                     formatSizes(b.sizes()), outChannels);
  }
  return toDoubles(b);
}

/// A zero point or scale that is a scalar or has one value per channel: `count` values, or a
/// Diagnostic naming the input.
Expected<std::vector<double>> readPerChannel(const KernelContext &ctx, size_t index, int64_t count, const char *what) {
  if (!ctx.hasInput(index)) return std::vector<double>(static_cast<size_t>(count), 0.0);
  const Tensor &t = ctx.tensor(index);
  if (t.numel() == 1) return std::vector<double>(static_cast<size_t>(count), t.scalarAsDouble());
  if (t.rank() != 1 || t.size(0) != count) {
    return makeError(ErrorCode::ShapeMismatch, "{} has shape {}; expected a scalar or [{}]", what,
                     formatSizes(t.sizes()), count);
  }
  return toDoubles(t);
}

/// Subtracts a per-output-channel value from a weight laid out [M, ...].
void subtractPerChannel(std::vector<double> &w, const std::vector<double> &perChannel) {
  if (perChannel.empty()) return;  // No output channels, so no weights.
  size_t block = w.size() / perChannel.size();
  for (size_t i = 0; i < w.size(); ++i) w[i] -= perChannel[i / block];
}

/// Subtracts a scalar zero point (input `index`, 0 when absent) from every element.
Expected<std::vector<double>> centered(const KernelContext &ctx, const Tensor &t, size_t index, const char *what) {
  TESSEL_ASSIGN_OR_RETURN(std::vector<double> zero, readPerChannel(ctx, index, 1, what));
  std::vector<double> values = toDoubles(t);
  for (double &v : values) v -= zero[0];
  return values;
}

Status expectQuantizedInput(const KernelContext &ctx, size_t index) {
  return expectDType(ctx, index, {DType::UInt8, DType::Int8});
}

}  // namespace

Status refConv(KernelContext &ctx) {
  TESSEL_RETURN_IF_ERROR(requireInputs(ctx, 2));
  TESSEL_RETURN_IF_ERROR(expectFloatInput(ctx, 0));
  TESSEL_RETURN_IF_ERROR(expectSameDType(ctx, 0, 1));
  const Tensor &x = ctx.tensor(0);
  const Tensor &w = ctx.tensor(1);
  TESSEL_ASSIGN_OR_RETURN(ConvShapes shapes, readConvShapes(ctx, x, w, /*transposed=*/false));
  TESSEL_ASSIGN_OR_RETURN(std::vector<double> bias, readBias(ctx, 2, shapes.outChannels));
  std::vector<double> y = convolve(shapes, toDoubles(x), toDoubles(w), bias);
  ctx.setOutput(0, fromDoubles(x.dtype(), outputSizes(shapes), y));
  return Status::success();
}

Status refConvTranspose(KernelContext &ctx) {
  TESSEL_RETURN_IF_ERROR(requireInputs(ctx, 2));
  TESSEL_RETURN_IF_ERROR(expectFloatInput(ctx, 0));
  TESSEL_RETURN_IF_ERROR(expectSameDType(ctx, 0, 1));
  const Tensor &x = ctx.tensor(0);
  const Tensor &w = ctx.tensor(1);
  TESSEL_ASSIGN_OR_RETURN(ConvShapes shapes, readConvShapes(ctx, x, w, /*transposed=*/true));
  TESSEL_ASSIGN_OR_RETURN(std::vector<double> bias, readBias(ctx, 2, shapes.outChannels));
  std::vector<double> y = convolveTransposed(shapes, toDoubles(x), toDoubles(w), bias);
  ctx.setOutput(0, fromDoubles(x.dtype(), outputSizes(shapes), y));
  return Status::success();
}

Status refConvInteger(KernelContext &ctx) {
  TESSEL_RETURN_IF_ERROR(requireInputs(ctx, 2));
  TESSEL_RETURN_IF_ERROR(expectQuantizedInput(ctx, 0));
  TESSEL_RETURN_IF_ERROR(expectQuantizedInput(ctx, 1));
  const Tensor &x = ctx.tensor(0);
  const Tensor &w = ctx.tensor(1);
  TESSEL_ASSIGN_OR_RETURN(ConvShapes shapes, readConvShapes(ctx, x, w, /*transposed=*/false));
  // Padding must read as the zero point, i.e. contribute 0 after centring, which the direct loop
  // does by skipping padded positions.
  TESSEL_ASSIGN_OR_RETURN(std::vector<double> xc, centered(ctx, x, 2, "x_zero_point"));
  TESSEL_ASSIGN_OR_RETURN(std::vector<double> wZero, readPerChannel(ctx, 3, shapes.outChannels, "w_zero_point"));
  std::vector<double> wc = toDoubles(w);
  subtractPerChannel(wc, wZero);
  std::vector<double> y = convolve(shapes, xc, wc, {});
  ctx.setOutput(0, fromDoubles(DType::Int32, outputSizes(shapes), y));
  return Status::success();
}

Status refQLinearConv(KernelContext &ctx) {
  TESSEL_RETURN_IF_ERROR(requireInputs(ctx, 8));
  TESSEL_RETURN_IF_ERROR(expectQuantizedInput(ctx, 0));
  TESSEL_RETURN_IF_ERROR(expectQuantizedInput(ctx, 3));
  const Tensor &x = ctx.tensor(0);
  const Tensor &w = ctx.tensor(3);
  TESSEL_ASSIGN_OR_RETURN(ConvShapes shapes, readConvShapes(ctx, x, w, /*transposed=*/false));
  TESSEL_ASSIGN_OR_RETURN(std::vector<double> xScale, readPerChannel(ctx, 1, 1, "x_scale"));
  TESSEL_ASSIGN_OR_RETURN(std::vector<double> xc, centered(ctx, x, 2, "x_zero_point"));
  TESSEL_ASSIGN_OR_RETURN(std::vector<double> wScale, readPerChannel(ctx, 4, shapes.outChannels, "w_scale"));
  TESSEL_ASSIGN_OR_RETURN(std::vector<double> wZero, readPerChannel(ctx, 5, shapes.outChannels, "w_zero_point"));
  TESSEL_ASSIGN_OR_RETURN(std::vector<double> yScale, readPerChannel(ctx, 6, 1, "y_scale"));
  TESSEL_ASSIGN_OR_RETURN(std::vector<double> yZero, readPerChannel(ctx, 7, 1, "y_zero_point"));
  TESSEL_ASSIGN_OR_RETURN(std::vector<double> bias, readBias(ctx, 8, shapes.outChannels));
  std::vector<double> wc = toDoubles(w);
  subtractPerChannel(wc, wZero);
  std::vector<double> y = convolve(shapes, xc, wc, bias);
  const DType outType = ctx.tensor(7).dtype();
  if (outType != DType::UInt8 && outType != DType::Int8) {  // y's type (T3) need not be x's (T1).
    return makeError(ErrorCode::TypeMismatch, "y_zero_point is {}; expected u8 or i8", dtypeName(outType));
  }
  const bool isSigned = outType == DType::Int8;
  const double lo = isSigned ? -128.0 : 0.0;
  const double hi = isSigned ? 127.0 : 255.0;
  const size_t plane = static_cast<size_t>(numElements(shapes.window.outSizes));
  for (size_t i = 0; i < y.size(); ++i) {
    size_t m = (i / plane) % static_cast<size_t>(shapes.outChannels);
    double scaled = y[i] * (xScale[0] * wScale[m] / yScale[0]);
    y[i] = std::clamp(std::nearbyint(scaled) + yZero[0], lo, hi);  // Ties round to even.
  }
  ctx.setOutput(0, fromDoubles(outType, outputSizes(shapes), y));
  return Status::success();
}

}  // namespace tessel::ref
