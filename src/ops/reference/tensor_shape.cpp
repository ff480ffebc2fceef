// Reference kernels of the tensor family that change only a tensor's shape, or read it:
// Reshape, Flatten, Squeeze, Unsqueeze, Expand, Shape, Size and Identity. Apart from Expand they
// keep the element order, so the output shares the input's storage under new sizes.
#include <algorithm>

#include "ops/reference/tensor_copy.h"

namespace tessel::ref {

namespace {

/// The axes of Squeeze/Unsqueeze: an attribute before opset 13, an optional input from 13 on.
Expected<std::optional<std::vector<int64_t>>> readAxes(const KernelContext &ctx) {
  if (ctx.opset() < 13) {
    if (!ctx.node().hasAttr("axes")) return std::optional<std::vector<int64_t>>{};
    return std::optional<std::vector<int64_t>>{ctx.node().attrInts("axes")};
  }
  if (!ctx.hasInput(1)) return std::optional<std::vector<int64_t>>{};
  TESSEL_ASSIGN_OR_RETURN(std::vector<int64_t> axes, readIntInput(ctx, 1, "axes"));
  return std::optional<std::vector<int64_t>>{std::move(axes)};
}

/// Normalises `axes` against `rank` and fails on a repeated axis.
Expected<std::vector<int64_t>> normalizeAxes(const std::vector<int64_t> &axes, int64_t rank) {
  std::vector<int64_t> out;
  for (int64_t axis : axes) {
    TESSEL_ASSIGN_OR_RETURN(int64_t a, normalizeExistingAxis(axis, rank));
    if (std::find(out.begin(), out.end(), a) != out.end()) {
      return makeError(ErrorCode::InvalidArgument, "axis {} is listed twice", axis);
    }
    out.push_back(a);
  }
  return out;
}

/// Resolves a Reshape target (with 0 = copy and one -1 = infer) against the input sizes.
Expected<std::vector<int64_t>> resolveReshape(const std::vector<int64_t> &inSizes, std::vector<int64_t> shape,
                                              bool allowZero) {
  int64_t inferAxis = -1;
  int64_t known = 1;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == 0 && !allowZero) {
      if (i >= inSizes.size()) {
        return makeError(ErrorCode::ShapeMismatch, "shape[{}] is 0 (copy) but the input {} has rank {}", i,
                         formatSizes(inSizes), inSizes.size());
      }
      shape[i] = inSizes[i];
    }
    if (shape[i] == -1) {
      if (inferAxis >= 0) {
        return makeError(ErrorCode::InvalidArgument, "shape {} has more than one -1", formatSizes(shape));
      }
      inferAxis = static_cast<int64_t>(i);
      continue;
    }
    if (shape[i] < 0) {
      return makeError(ErrorCode::InvalidArgument, "shape[{}] is {}; dims must be >= -1", i, shape[i]);
    }
    if (shape[i] != 0 && known > (int64_t{1} << 62) / shape[i]) {
      return makeError(ErrorCode::ShapeMismatch, "shape {} is too large", formatSizes(shape));
    }
    known *= shape[i];
  }
  const int64_t total = numElements(inSizes);
  if (inferAxis >= 0) {
    if (known == 0 || total % known != 0) {
      return makeError(ErrorCode::ShapeMismatch, "cannot reshape {} to {}: the -1 dim cannot be inferred",
                       formatSizes(inSizes), formatSizes(shape));
    }
    shape[static_cast<size_t>(inferAxis)] = total / known;
  } else if (known != total) {
    return makeError(ErrorCode::ShapeMismatch, "cannot reshape {} ({} elements) to {} ({} elements)",
                     formatSizes(inSizes), total, formatSizes(shape), known);
  }
  return shape;
}

}  // namespace

Status refReshape(KernelContext &ctx) {
  const Tensor &x = ctx.tensor(0);
  std::vector<int64_t> shape;
  if (ctx.opset() < 5) {
    shape = ctx.node().attrInts("shape");
  } else {
    TESSEL_ASSIGN_OR_RETURN(shape, readIntInput(ctx, 1, "shape"));
  }
  const bool allowZero = ctx.node().attrInt("allowzero", 0) != 0;
  TESSEL_ASSIGN_OR_RETURN(std::vector<int64_t> outSizes, resolveReshape(x.sizes(), std::move(shape), allowZero));
  ctx.setOutput(0, x.reshaped(std::move(outSizes)));
  return Status::success();
}

Status refFlatten(KernelContext &ctx) {
  const Tensor &x = ctx.tensor(0);
  const auto rank = static_cast<int64_t>(x.rank());
  int64_t axis = ctx.node().attrInt("axis", 1);
  if (axis < -rank || axis > rank) {
    return makeError(ErrorCode::InvalidArgument, "axis {} is out of range [{}, {}]", axis, -rank, rank);
  }
  if (axis < 0) axis += rank;
  int64_t outer = 1;
  for (int64_t i = 0; i < axis; ++i) outer *= x.size(static_cast<size_t>(i));
  int64_t inner = 1;
  for (int64_t i = axis; i < rank; ++i) inner *= x.size(static_cast<size_t>(i));
  ctx.setOutput(0, x.reshaped({outer, inner}));
  return Status::success();
}

Status refSqueeze(KernelContext &ctx) {
  const Tensor &x = ctx.tensor(0);
  const auto rank = static_cast<int64_t>(x.rank());
  TESSEL_ASSIGN_OR_RETURN(std::optional<std::vector<int64_t>> axes, readAxes(ctx));
  std::vector<bool> drop(x.rank(), false);
  if (!axes) {
    for (size_t i = 0; i < x.rank(); ++i) drop[i] = x.size(i) == 1;
  } else {
    TESSEL_ASSIGN_OR_RETURN(std::vector<int64_t> normalized, normalizeAxes(*axes, rank));
    for (int64_t axis : normalized) {
      if (x.size(static_cast<size_t>(axis)) != 1) {
        return makeError(ErrorCode::ShapeMismatch, "cannot squeeze axis {} of {}: its size is {}, not 1", axis,
                         formatSizes(x.sizes()), x.size(static_cast<size_t>(axis)));
      }
      drop[static_cast<size_t>(axis)] = true;
    }
  }
  std::vector<int64_t> outSizes;
  for (size_t i = 0; i < x.rank(); ++i) {
    if (!drop[i]) outSizes.push_back(x.size(i));
  }
  ctx.setOutput(0, x.reshaped(std::move(outSizes)));
  return Status::success();
}

Status refUnsqueeze(KernelContext &ctx) {
  const Tensor &x = ctx.tensor(0);
  TESSEL_ASSIGN_OR_RETURN(std::optional<std::vector<int64_t>> axes, readAxes(ctx));
  if (!axes) return makeError(ErrorCode::InvalidArgument, "Unsqueeze needs axes");
  const auto outRank = static_cast<int64_t>(x.rank() + axes->size());
  TESSEL_ASSIGN_OR_RETURN(std::vector<int64_t> normalized, normalizeAxes(*axes, outRank));
  std::vector<bool> inserted(static_cast<size_t>(outRank), false);
  for (int64_t axis : normalized) inserted[static_cast<size_t>(axis)] = true;
  std::vector<int64_t> outSizes;
  size_t next = 0;
  for (size_t i = 0; i < inserted.size(); ++i) outSizes.push_back(inserted[i] ? 1 : x.size(next++));
  ctx.setOutput(0, x.reshaped(std::move(outSizes)));
  return Status::success();
}

Status refExpand(KernelContext &ctx) {
  const Tensor &x = ctx.tensor(0);
  TESSEL_ASSIGN_OR_RETURN(std::vector<int64_t> shape, readIntInput(ctx, 1, "shape"));
  for (int64_t s : shape) {
    if (s < 0) return makeError(ErrorCode::InvalidArgument, "Expand shape {} has a negative dim", formatSizes(shape));
  }
  TESSEL_ASSIGN_OR_RETURN(std::vector<int64_t> outSizes, broadcastShapes({x.sizes(), shape}));
  TESSEL_RETURN_IF_ERROR(checkOutputSize(x.dtype(), outSizes, "Expand output"));
  ctx.setOutput(0, takeElements(x, outSizes, broadcastIndexMap(x.sizes(), outSizes)));
  return Status::success();
}

Status refShape(KernelContext &ctx) {
  const Tensor &x = ctx.tensor(0);
  const auto rank = static_cast<int64_t>(x.rank());
  // Opset 15 added start/end, clamped to [0, rank] after adding rank to negative values.
  auto clampToRank = [&](int64_t v) { return std::clamp<int64_t>(v < 0 ? v + rank : v, 0, rank); };
  const int64_t start = clampToRank(ctx.node().attrInt("start", 0));
  const int64_t end = clampToRank(ctx.node().attrInt("end", rank));
  std::vector<int64_t> dims;
  for (int64_t i = start; i < end; ++i) dims.push_back(x.size(static_cast<size_t>(i)));
  ctx.setOutput(0, Tensor::fromVector<int64_t>({static_cast<int64_t>(dims.size())}, dims));
  return Status::success();
}

Status refSize(KernelContext &ctx) {
  ctx.setOutput(0, Tensor::scalar<int64_t>(ctx.tensor(0).numel()));
  return Status::success();
}

Status refIdentity(KernelContext &ctx) {
  // Tensors, sequences and optionals all pass through unchanged.
  if (ctx.numInputs() == 0 || ctx.node().input(0) == nullptr) {
    return makeError(ErrorCode::InvalidArgument, "Identity needs an input");
  }
  ctx.setOutput(0, ctx.input(0));
  return Status::success();
}

}  // namespace tessel::ref
