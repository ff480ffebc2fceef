// Shared pieces of the nn reference kernels: window geometry for Conv, ConvTranspose and the
// pools, and conversions of whole tensors to and from double.
#include "ops/reference/nn_common.h"

#include <algorithm>

#include "ops/reference/tensor_copy.h"

namespace tessel::ref {

namespace {

/// Bound on window attributes (sizes, strides, pads), so that size arithmetic cannot overflow;
/// any real model is many orders of magnitude below it.
constexpr int64_t kMaxWindowValue = int64_t{1} << 40;

Status checkMagnitudes(const char *name, const std::vector<int64_t> &values) {
  for (int64_t v : values) {
    if (v > kMaxWindowValue || v < -kMaxWindowValue) {
      return makeError(ErrorCode::InvalidArgument, "{} {} has a value beyond {}", name, formatSizes(values),
                       kMaxWindowValue);
    }
  }
  return Status::success();
}

/// An attribute with one value per spatial axis (`perAxis` = 1) or two (`perAxis` = 2, pads), or
/// `fallback` when absent.
Expected<std::vector<int64_t>> readAxisAttr(const Node &node, const char *name, size_t spatialRank, size_t perAxis,
                                            int64_t fallback) {
  if (!node.hasAttr(name)) return std::vector<int64_t>(spatialRank * perAxis, fallback);
  std::vector<int64_t> values = node.attrInts(name);
  if (values.size() != spatialRank * perAxis) {
    return makeError(ErrorCode::InvalidArgument, "{} has {} values; expected {} for {} spatial axes", name,
                     values.size(), spatialRank * perAxis, spatialRank);
  }
  TESSEL_RETURN_IF_ERROR(checkMagnitudes(name, values));
  return values;
}

/// Reads strides and dilations (both positive) into `geometry`.
Status readStridesAndDilations(const Node &node, WindowGeometry &geometry) {
  size_t rank = geometry.spatialRank();
  TESSEL_ASSIGN_OR_RETURN(geometry.strides, readAxisAttr(node, "strides", rank, 1, 1));
  TESSEL_ASSIGN_OR_RETURN(geometry.dilations, readAxisAttr(node, "dilations", rank, 1, 1));
  for (size_t i = 0; i < rank; ++i) {
    if (geometry.strides[i] <= 0) {
      return makeError(ErrorCode::InvalidArgument, "strides {} has a non-positive value; expected all >= 1",
                       formatSizes(geometry.strides));
    }
    if (geometry.dilations[i] <= 0) {
      return makeError(ErrorCode::InvalidArgument, "dilations {} has a non-positive value; expected all >= 1",
                       formatSizes(geometry.dilations));
    }
  }
  return Status::success();
}

/// Splits explicit `pads` (begins, then ends) into the geometry; pads must be >= 0.
Status readPads(const Node &node, WindowGeometry &geometry) {
  size_t rank = geometry.spatialRank();
  TESSEL_ASSIGN_OR_RETURN(std::vector<int64_t> pads, readAxisAttr(node, "pads", rank, 2, 0));
  for (int64_t pad : pads) {
    if (pad < 0) return makeError(ErrorCode::InvalidArgument, "pads {} has a negative value", formatSizes(pads));
  }
  geometry.padBegin.assign(pads.begin(), pads.begin() + static_cast<std::ptrdiff_t>(rank));
  geometry.padEnd.assign(pads.begin() + static_cast<std::ptrdiff_t>(rank), pads.end());
  return Status::success();
}

Expected<std::string> readAutoPad(const Node &node) {
  std::string autoPad = node.attrString("auto_pad", "NOTSET");
  if (autoPad == "NOTSET" || autoPad == "SAME_UPPER" || autoPad == "SAME_LOWER" || autoPad == "VALID") return autoPad;
  return makeError(ErrorCode::InvalidArgument, "auto_pad is '{}'; expected NOTSET, SAME_UPPER, SAME_LOWER or VALID",
                   autoPad);
}

int64_t ceilDiv(int64_t a, int64_t b) { return a >= 0 ? (a + b - 1) / b : -((-a) / b); }

}  // namespace

Expected<std::vector<int64_t>> readKernelShape(const Node &node, size_t spatialRank,
                                               const std::vector<int64_t> &fromWeight) {
  if (!node.hasAttr("kernel_shape") && fromWeight.empty()) {
    return makeError(ErrorCode::InvalidArgument, "the kernel_shape attribute is required");
  }
  std::vector<int64_t> kernel = node.hasAttr("kernel_shape") ? node.attrInts("kernel_shape") : fromWeight;
  if (kernel.size() != spatialRank) {
    return makeError(ErrorCode::InvalidArgument, "kernel_shape has {} values; expected {} for a {}-D input",
                     kernel.size(), spatialRank, spatialRank + 2);
  }
  TESSEL_RETURN_IF_ERROR(checkMagnitudes("kernel_shape", kernel));
  for (int64_t k : kernel) {
    if (k <= 0) {
      return makeError(ErrorCode::InvalidArgument, "kernel_shape {} has a non-positive value", formatSizes(kernel));
    }
  }
  if (!fromWeight.empty() && kernel != fromWeight) {
    return makeError(ErrorCode::ShapeMismatch, "kernel_shape is {} but the weight's spatial sizes are {}",
                     formatSizes(kernel), formatSizes(fromWeight));
  }
  return kernel;
}

Expected<WindowGeometry> forwardWindow(const Node &node, const std::vector<int64_t> &inSpatial,
                                       std::vector<int64_t> kernel, bool ceilMode) {
  WindowGeometry g;
  g.kernel = std::move(kernel);
  g.inSizes = inSpatial;
  size_t rank = g.spatialRank();
  TESSEL_RETURN_IF_ERROR(readStridesAndDilations(node, g));
  TESSEL_ASSIGN_OR_RETURN(std::string autoPad, readAutoPad(node));
  TESSEL_RETURN_IF_ERROR(readPads(node, g));
  g.outSizes.resize(rank);
  for (size_t i = 0; i < rank; ++i) {
    int64_t in = inSpatial[i];
    int64_t stride = g.strides[i];
    int64_t extent = (g.kernel[i] - 1) * g.dilations[i] + 1;
    if (autoPad == "SAME_UPPER" || autoPad == "SAME_LOWER") {
      g.outSizes[i] = ceilDiv(in, stride);
      int64_t total = std::max<int64_t>(0, (g.outSizes[i] - 1) * stride + extent - in);
      // An odd total puts the extra element at the end for SAME_UPPER, at the start for SAME_LOWER.
      g.padBegin[i] = autoPad == "SAME_UPPER" ? total / 2 : total - total / 2;
      g.padEnd[i] = total - g.padBegin[i];
      continue;
    }
    if (autoPad == "VALID") g.padBegin[i] = g.padEnd[i] = 0;
    int64_t span = in + g.padBegin[i] + g.padEnd[i] - extent;
    if (span < 0) {
      return makeError(ErrorCode::ShapeMismatch,
                       "axis {}: the window spans {} elements (kernel {}, dilation {}) but the padded input has {}",
                       i + 2, extent, g.kernel[i], g.dilations[i], in + g.padBegin[i] + g.padEnd[i]);
    }
    g.outSizes[i] = (ceilMode ? ceilDiv(span, stride) : span / stride) + 1;
    // As in PyTorch: with ceil_mode, a last window starting in the end padding is dropped.
    if (ceilMode && (g.outSizes[i] - 1) * stride >= in + g.padBegin[i]) --g.outSizes[i];
  }
  return g;
}

Expected<WindowGeometry> transposedWindow(const Node &node, const std::vector<int64_t> &inSpatial,
                                          std::vector<int64_t> kernel) {
  WindowGeometry g;
  g.kernel = std::move(kernel);
  g.inSizes = inSpatial;
  size_t rank = g.spatialRank();
  TESSEL_RETURN_IF_ERROR(readStridesAndDilations(node, g));
  TESSEL_ASSIGN_OR_RETURN(std::string autoPad, readAutoPad(node));
  TESSEL_RETURN_IF_ERROR(readPads(node, g));
  TESSEL_ASSIGN_OR_RETURN(std::vector<int64_t> outputPadding, readAxisAttr(node, "output_padding", rank, 1, 0));
  std::vector<int64_t> outputShape = node.attrInts("output_shape");
  // Some exporters write the full N, C, spatial... shape; only the spatial part matters.
  if (outputShape.size() == rank + 2) outputShape.erase(outputShape.begin(), outputShape.begin() + 2);
  if (!outputShape.empty() && outputShape.size() != rank) {
    return makeError(ErrorCode::InvalidArgument, "output_shape has {} values; expected {} for {} spatial axes",
                     outputShape.size(), rank, rank);
  }
  TESSEL_RETURN_IF_ERROR(checkMagnitudes("output_shape", outputShape));
  g.outSizes.resize(rank);
  for (size_t i = 0; i < rank; ++i) {
    if (outputPadding[i] < 0 || outputPadding[i] >= std::max(g.strides[i], g.dilations[i])) {
      return makeError(ErrorCode::InvalidArgument,
                       "output_padding {} must be >= 0 and less than the stride or dilation",
                       formatSizes(outputPadding));
    }
    int64_t full = g.strides[i] * (inSpatial[i] - 1) + outputPadding[i] + (g.kernel[i] - 1) * g.dilations[i] + 1;
    bool same = autoPad == "SAME_UPPER" || autoPad == "SAME_LOWER";
    if (!outputShape.empty() || same) {
      g.outSizes[i] = outputShape.empty() ? inSpatial[i] * g.strides[i] : outputShape[i];
      // A requested size beyond the full result leaves zeros at the end, as in onnxruntime.
      int64_t total = std::max<int64_t>(0, full - g.outSizes[i]);
      g.padBegin[i] = autoPad == "SAME_UPPER" ? total / 2 : total - total / 2;
      g.padEnd[i] = total - g.padBegin[i];
    } else {
      if (autoPad == "VALID") g.padBegin[i] = g.padEnd[i] = 0;
      g.outSizes[i] = full - g.padBegin[i] - g.padEnd[i];
    }
    if (g.outSizes[i] <= 0) {
      return makeError(ErrorCode::ShapeMismatch, "axis {}: the output size is {}; expected a positive size", i + 2,
                       g.outSizes[i]);
    }
  }
  return g;
}

Status checkWorkSize(const std::vector<int64_t> &sizes, const char *what) {
  return checkOutputSize(DType::Float64, sizes, what);
}

Status requireInputs(const KernelContext &ctx, size_t count) {
  for (size_t i = 0; i < count; ++i) {
    if (!ctx.hasInput(i) || !ctx.input(i).isTensor()) {
      return makeError(ErrorCode::InvalidModel, "input {} of {} is required (a tensor); got none", i,
                       ctx.node().opType());
    }
  }
  return Status::success();
}

Status expectFloatInput(const KernelContext &ctx, size_t index) {
  DType dtype = ctx.tensor(index).dtype();
  if (isFloatingPoint(dtype)) return Status::success();
  return makeError(ErrorCode::TypeMismatch, "input {} of {} must be floating-point; got {}", index,
                   ctx.node().opType(), dtypeName(dtype));
}

Status expectRank(const KernelContext &ctx, size_t index, size_t rank, bool orMore) {
  size_t got = ctx.tensor(index).rank();
  if (got == rank || (orMore && got > rank)) return Status::success();
  return makeError(ErrorCode::ShapeMismatch, "input {} of {} has rank {} (shape {}); expected {}{}", index,
                   ctx.node().opType(), got, formatSizes(ctx.tensor(index).sizes()), orMore ? "at least " : "", rank);
}

}  // namespace tessel::ref
