// Reference kernels of the tensor family driven by index or mask tensors: Gather, GatherElements,
// GatherND, Scatter, ScatterElements, ScatterND, OneHot, Compress and NonZero. Negative indices
// count from the end as ONNX allows; any index outside its axis is a Diagnostic, checked before
// any element is read or written.
#include <algorithm>
#include <cmath>

#include "ops/reference/tensor_copy.h"

namespace tessel::ref {

namespace {

/// The index input as int64 values; fails unless it is int32 or int64.
Expected<std::vector<int64_t>> readIndices(const KernelContext &ctx, size_t input) {
  TESSEL_RETURN_IF_ERROR(expectDType(ctx, input, {DType::Int32, DType::Int64}));
  return ctx.tensor(input).toInt64Vector();
}

int64_t product(const std::vector<int64_t> &sizes, size_t begin, size_t end) {
  int64_t p = 1;
  for (size_t i = begin; i < end; ++i) p *= sizes[i];
  return p;
}

enum class Reduction { None, Add, Mul, Max, Min };

Expected<Reduction> readReduction(const KernelContext &ctx) {
  const std::string name = ctx.node().attrString("reduction", "none");
  if (name == "none") return Reduction::None;
  if (name == "add") return Reduction::Add;
  if (name == "mul") return Reduction::Mul;
  if ((name == "max" || name == "min") && ctx.opset() < 18) {
    return makeError(ErrorCode::InvalidArgument, "reduction '{}' needs opset 18; the model imports opset {}", name,
                     ctx.opset());
  }
  if (name == "max") return Reduction::Max;
  if (name == "min") return Reduction::Min;
  return makeError(ErrorCode::InvalidArgument, "unknown reduction '{}'", name);
}

/// out = data with out[dst] (op)= updates[src] applied for each (dst, src) pair in order.
Expected<Tensor> scatterPairs(const Tensor &data, const Tensor &updates,
                              const std::vector<std::pair<int64_t, int64_t>> &pairs, Reduction reduction) {
  if (updates.dtype() != data.dtype()) {
    return makeError(ErrorCode::TypeMismatch, "updates are {}; data is {}", dtypeName(updates.dtype()),
                     dtypeName(data.dtype()));
  }
  Tensor out = data.clone();
  if (reduction == Reduction::None) {
    ElementCopier copy(updates, out);
    for (auto [dst, src] : pairs) copy(dst, src);
    return out;
  }
  Status status;
  visitDType(data.dtype(), [&]<class T>(TypeTag<T>) {
    if constexpr (!kIsNumeric<T>) {
      status = makeError(ErrorCode::TypeMismatch, "a scatter reduction does not take {}", dtypeName(data.dtype()));
    } else {
      T *o = out.data<T>();
      const T *u = updates.data<T>();
      for (auto [dst, src] : pairs) {
        const double a = toDouble(o[dst]);
        const double b = toDouble(u[src]);
        if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
          // Integers combine in their own type so int64 keeps every bit.
          if (reduction == Reduction::Add) o[dst] = wrappingAdd(o[dst], u[src]);
          if (reduction == Reduction::Mul) o[dst] = wrappingMul(o[dst], u[src]);
          if (reduction == Reduction::Max && u[src] > o[dst]) o[dst] = u[src];
          if (reduction == Reduction::Min && u[src] < o[dst]) o[dst] = u[src];
        } else {
          if (reduction == Reduction::Add) o[dst] = fromDouble<T>(a + b);
          if (reduction == Reduction::Mul) o[dst] = fromDouble<T>(a * b);
          // NaN propagates, as numpy's maximum and minimum do.
          if (reduction == Reduction::Max && (b > a || b != b)) o[dst] = u[src];
          if (reduction == Reduction::Min && (b < a || b != b)) o[dst] = u[src];
        }
      }
    }
  });
  if (!status.ok()) return status;
  return out;
}

/// For GatherElements and ScatterElements: the flat offset into data of each element of
/// `indexTensor` (same rank as data), its coordinate on `axis` replaced by its index value.
Expected<std::vector<int64_t>> elementOffsets(const Tensor &data, const Tensor &indexTensor,
                                              const std::vector<int64_t> &indices, int64_t axis) {
  if (indexTensor.rank() != data.rank()) {
    return makeError(ErrorCode::ShapeMismatch, "indices {} must have data {}'s rank", formatSizes(indexTensor.sizes()),
                     formatSizes(data.sizes()));
  }
  for (size_t a = 0; a < data.rank(); ++a) {
    if (static_cast<int64_t>(a) != axis && indexTensor.size(a) > data.size(a)) {
      return makeError(ErrorCode::ShapeMismatch, "indices {} exceed data {} on axis {}",
                       formatSizes(indexTensor.sizes()), formatSizes(data.sizes()), a);
    }
  }
  const std::vector<int64_t> strides = stridesOf(data.sizes());
  const int64_t dim = data.size(static_cast<size_t>(axis));
  std::vector<int64_t> offsets;
  offsets.reserve(indices.size());
  Status status;
  forEachIndex(indexTensor.sizes(), [&](const std::vector<int64_t> &index) {
    if (!status.ok()) return;
    Expected<int64_t> at = normalizeIndex(indices[offsets.size()], dim, "index");
    if (!at.ok()) {
      status = at.status();
      return;
    }
    int64_t flat = 0;
    for (size_t a = 0; a < index.size(); ++a) flat += (static_cast<int64_t>(a) == axis ? *at : index[a]) * strides[a];
    offsets.push_back(flat);
  });
  TESSEL_RETURN_IF_ERROR(status);
  return offsets;
}

/// Shared body of Scatter and ScatterElements.
Status scatterElements(KernelContext &ctx) {
  const Tensor &data = ctx.tensor(0);
  const Tensor &indexTensor = ctx.tensor(1);
  const Tensor &updates = ctx.tensor(2);
  TESSEL_ASSIGN_OR_RETURN(std::vector<int64_t> indices, readIndices(ctx, 1));
  TESSEL_ASSIGN_OR_RETURN(Reduction reduction, readReduction(ctx));
  TESSEL_ASSIGN_OR_RETURN(int64_t axis, readAxisAttr(ctx, data.rank(), 0));
  if (indexTensor.sizes() != updates.sizes()) {
    return makeError(ErrorCode::ShapeMismatch, "indices {} and updates {} must have one shape",
                     formatSizes(indexTensor.sizes()), formatSizes(updates.sizes()));
  }
  TESSEL_ASSIGN_OR_RETURN(std::vector<int64_t> offsets, elementOffsets(data, indexTensor, indices, axis));
  std::vector<std::pair<int64_t, int64_t>> pairs;
  pairs.reserve(offsets.size());
  for (size_t i = 0; i < offsets.size(); ++i) pairs.emplace_back(offsets[i], static_cast<int64_t>(i));
  TESSEL_ASSIGN_OR_RETURN(Tensor out, scatterPairs(data, updates, pairs, reduction));
  ctx.setOutput(0, std::move(out));
  return Status::success();
}

/// Resolves each k-tuple of `indices` (the last axis of `indexSizes`) against data's first k dims
/// after `batchDims`, into flat element offsets within one batch of data.
Expected<std::vector<int64_t>> resolveTuples(const std::vector<int64_t> &indices, int64_t k,
                                             const std::vector<int64_t> &dataSizes, size_t batchDims) {
  std::vector<int64_t> offsets;
  const int64_t slice = product(dataSizes, batchDims + static_cast<size_t>(k), dataSizes.size());
  for (size_t t = 0; t + static_cast<size_t>(k) <= indices.size(); t += static_cast<size_t>(k)) {
    int64_t offset = 0;
    for (int64_t j = 0; j < k; ++j) {
      const int64_t dim = dataSizes[batchDims + static_cast<size_t>(j)];
      TESSEL_ASSIGN_OR_RETURN(int64_t at, normalizeIndex(indices[t + static_cast<size_t>(j)], dim, "index"));
      offset = offset * dim + at;
    }
    offsets.push_back(offset * slice);
  }
  return offsets;
}

}  // namespace

Status refGather(KernelContext &ctx) {
  const Tensor &data = ctx.tensor(0);
  const Tensor &indexTensor = ctx.tensor(1);
  TESSEL_ASSIGN_OR_RETURN(std::vector<int64_t> indices, readIndices(ctx, 1));
  TESSEL_ASSIGN_OR_RETURN(int64_t axis, readAxisAttr(ctx, data.rank(), 0));
  const auto a = static_cast<size_t>(axis);
  const int64_t dim = data.size(a);
  for (int64_t &index : indices) {
    TESSEL_ASSIGN_OR_RETURN(index, normalizeIndex(index, dim, "index"));
  }
  std::vector<int64_t> outSizes(data.sizes().begin(), data.sizes().begin() + axis);
  outSizes.insert(outSizes.end(), indexTensor.sizes().begin(), indexTensor.sizes().end());
  outSizes.insert(outSizes.end(), data.sizes().begin() + axis + 1, data.sizes().end());
  Tensor out(data.dtype(), outSizes);
  ElementCopier copy(data, out);
  const int64_t outer = product(data.sizes(), 0, a);
  const int64_t inner = product(data.sizes(), a + 1, data.rank());
  const auto count = static_cast<int64_t>(indices.size());
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t j = 0; j < count; ++j) {
      copy.copyRun((o * count + j) * inner, (o * dim + indices[static_cast<size_t>(j)]) * inner, inner);
    }
  }
  ctx.setOutput(0, std::move(out));
  return Status::success();
}

Status refGatherElements(KernelContext &ctx) {
  const Tensor &data = ctx.tensor(0);
  const Tensor &indexTensor = ctx.tensor(1);
  TESSEL_ASSIGN_OR_RETURN(std::vector<int64_t> indices, readIndices(ctx, 1));
  TESSEL_ASSIGN_OR_RETURN(int64_t axis, readAxisAttr(ctx, data.rank(), 0));
  TESSEL_ASSIGN_OR_RETURN(std::vector<int64_t> offsets, elementOffsets(data, indexTensor, indices, axis));
  ctx.setOutput(0, takeElements(data, indexTensor.sizes(), offsets));
  return Status::success();
}

Status refGatherND(KernelContext &ctx) {
  const Tensor &data = ctx.tensor(0);
  const Tensor &indexTensor = ctx.tensor(1);
  TESSEL_ASSIGN_OR_RETURN(std::vector<int64_t> indices, readIndices(ctx, 1));
  const int64_t batchDims = ctx.node().attrInt("batch_dims", 0);
  const auto b = static_cast<size_t>(batchDims);
  if (indexTensor.rank() < 1 || batchDims < 0 || b >= indexTensor.rank() || b >= data.rank()) {
    return makeError(ErrorCode::InvalidArgument, "batch_dims {} must be below the ranks of data {} and indices {}",
                     batchDims, formatSizes(data.sizes()), formatSizes(indexTensor.sizes()));
  }
  const int64_t k = indexTensor.sizes().back();
  if (k < 1 || b + static_cast<size_t>(k) > data.rank()) {
    return makeError(ErrorCode::ShapeMismatch, "index tuples of length {} do not fit data {} after {} batch dims", k,
                     formatSizes(data.sizes()), batchDims);
  }
  for (size_t i = 0; i < b; ++i) {
    if (indexTensor.size(i) != data.size(i)) {
      return makeError(ErrorCode::ShapeMismatch, "batch dim {} is {} in data but {} in indices", i, data.size(i),
                       indexTensor.size(i));
    }
  }
  TESSEL_ASSIGN_OR_RETURN(std::vector<int64_t> offsets, resolveTuples(indices, k, data.sizes(), b));
  std::vector<int64_t> outSizes(indexTensor.sizes().begin(), indexTensor.sizes().end() - 1);
  outSizes.insert(outSizes.end(), data.sizes().begin() + batchDims + k, data.sizes().end());
  Tensor out(data.dtype(), outSizes);
  ElementCopier copy(data, out);
  const int64_t slice = product(data.sizes(), b + static_cast<size_t>(k), data.rank());
  const int64_t batchSize = product(data.sizes(), b, data.rank());
  const int64_t tuplesPerBatch = product(indexTensor.sizes(), b, indexTensor.rank() - 1);
  for (size_t t = 0; t < offsets.size(); ++t) {
    const int64_t batch = static_cast<int64_t>(t) / std::max<int64_t>(tuplesPerBatch, 1);
    copy.copyRun(static_cast<int64_t>(t) * slice, batch * batchSize + offsets[t], slice);
  }
  ctx.setOutput(0, std::move(out));
  return Status::success();
}

Status refScatter(KernelContext &ctx) { return scatterElements(ctx); }

Status refScatterElements(KernelContext &ctx) { return scatterElements(ctx); }

Status refScatterND(KernelContext &ctx) {
  const Tensor &data = ctx.tensor(0);
  const Tensor &indexTensor = ctx.tensor(1);
  const Tensor &updates = ctx.tensor(2);
  TESSEL_ASSIGN_OR_RETURN(std::vector<int64_t> indices, readIndices(ctx, 1));
  TESSEL_ASSIGN_OR_RETURN(Reduction reduction, readReduction(ctx));
  if (indexTensor.rank() < 1) return makeError(ErrorCode::ShapeMismatch, "indices must have rank >= 1");
  const int64_t k = indexTensor.sizes().back();
  if (k < 1 || static_cast<size_t>(k) > data.rank()) {
    return makeError(ErrorCode::ShapeMismatch, "index tuples of length {} do not fit data {}", k,
                     formatSizes(data.sizes()));
  }
  std::vector<int64_t> expected(indexTensor.sizes().begin(), indexTensor.sizes().end() - 1);
  expected.insert(expected.end(), data.sizes().begin() + k, data.sizes().end());
  if (updates.sizes() != expected) {
    return makeError(ErrorCode::ShapeMismatch, "updates have shape {}; expected {}", formatSizes(updates.sizes()),
                     formatSizes(expected));
  }
  TESSEL_ASSIGN_OR_RETURN(std::vector<int64_t> offsets, resolveTuples(indices, k, data.sizes(), 0));
  const int64_t slice = product(data.sizes(), static_cast<size_t>(k), data.rank());
  std::vector<std::pair<int64_t, int64_t>> pairs;
  pairs.reserve(static_cast<size_t>(updates.numel()));
  for (size_t t = 0; t < offsets.size(); ++t) {
    for (int64_t e = 0; e < slice; ++e) pairs.emplace_back(offsets[t] + e, static_cast<int64_t>(t) * slice + e);
  }
  TESSEL_ASSIGN_OR_RETURN(Tensor out, scatterPairs(data, updates, pairs, reduction));
  ctx.setOutput(0, std::move(out));
  return Status::success();
}

Status refOneHot(KernelContext &ctx) {
  const Tensor &indexTensor = ctx.tensor(0);
  const Tensor &depthTensor = ctx.tensor(1);
  const Tensor &values = ctx.tensor(2);
  if (depthTensor.numel() != 1 || values.numel() != 2) {
    return makeError(ErrorCode::ShapeMismatch, "depth must hold one value and values two; got {} and {}",
                     depthTensor.numel(), values.numel());
  }
  for (DType type : {indexTensor.dtype(), depthTensor.dtype()}) {
    if (!isInteger(type) && !isFloatingPoint(type)) {
      return makeError(ErrorCode::TypeMismatch, "OneHot indices and depth must be numeric; got {}", dtypeName(type));
    }
  }
  const double depthValue = depthTensor.scalarAsDouble();
  if (!(depthValue >= 1 && depthValue < 1e15)) {
    return makeError(ErrorCode::InvalidArgument, "depth must be a positive count; got {}", depthValue);
  }
  const auto depth = static_cast<int64_t>(depthValue);
  const auto outRank = static_cast<int64_t>(indexTensor.rank()) + 1;
  TESSEL_ASSIGN_OR_RETURN(int64_t axis, normalizeExistingAxis(ctx.node().attrInt("axis", -1), outRank));
  std::vector<int64_t> outSizes = indexTensor.sizes();
  outSizes.insert(outSizes.begin() + axis, depth);
  TESSEL_RETURN_IF_ERROR(checkOutputSize(values.dtype(), outSizes, "OneHot output"));
  const int64_t outer = product(indexTensor.sizes(), 0, static_cast<size_t>(axis));
  const int64_t inner = product(indexTensor.sizes(), static_cast<size_t>(axis), indexTensor.rank());
  // Element 0 of `values` is off, element 1 is on; indices outside [-depth, depth) stay all off.
  std::vector<int64_t> map(static_cast<size_t>(numElements(outSizes)), 0);
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t i = 0; i < inner; ++i) {
      const double raw = indexTensor.scalarAsDouble(o * inner + i);
      if (!(std::fabs(raw) < static_cast<double>(depth) + 1)) continue;  // Out of range or NaN: all off.
      auto index = static_cast<int64_t>(raw);
      if (index < 0) index += depth;
      if (index >= 0 && index < depth) map[static_cast<size_t>((o * depth + index) * inner + i)] = 1;
    }
  }
  ctx.setOutput(0, takeElements(values, outSizes, map));
  return Status::success();
}

Status refCompress(KernelContext &ctx) {
  const Tensor &x = ctx.tensor(0);
  TESSEL_RETURN_IF_ERROR(expectDType(ctx, 1, {DType::Bool}));
  const Tensor &condition = ctx.tensor(1);
  const bool *keep = condition.data<bool>();
  const bool hasAxis = ctx.node().hasAttr("axis");
  const Tensor input = hasAxis ? x : x.reshaped({x.numel()});
  TESSEL_ASSIGN_OR_RETURN(int64_t axis, readAxisAttr(ctx, input.rank(), 0));
  const auto a = static_cast<size_t>(axis);
  const int64_t dim = input.size(a);
  std::vector<int64_t> selected;
  for (int64_t i = 0; i < condition.numel(); ++i) {
    if (!keep[i]) continue;
    if (i >= dim) {
      return makeError(ErrorCode::ShapeMismatch, "condition selects index {}; axis {} has size {}", i, axis, dim);
    }
    selected.push_back(i);
  }
  std::vector<int64_t> outSizes = input.sizes();
  outSizes[a] = static_cast<int64_t>(selected.size());
  Tensor out(x.dtype(), outSizes);
  ElementCopier copy(input, out);
  const int64_t outer = product(input.sizes(), 0, a);
  const int64_t inner = product(input.sizes(), a + 1, input.rank());
  const auto count = static_cast<int64_t>(selected.size());
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t j = 0; j < count; ++j) {
      copy.copyRun((o * count + j) * inner, (o * dim + selected[static_cast<size_t>(j)]) * inner, inner);
    }
  }
  ctx.setOutput(0, std::move(out));
  return Status::success();
}

Status refNonZero(KernelContext &ctx) {
  const Tensor &x = ctx.tensor(0);
  std::vector<int64_t> flatHits;
  bool handled = visitDType(x.dtype(), [&]<class T>(TypeTag<T>) {
    const T *p = x.data<T>();
    for (int64_t i = 0; i < x.numel(); ++i) {
      bool nonZero;
      if constexpr (std::is_same_v<T, std::string>) {
        nonZero = !p[i].empty();
      } else if constexpr (!kIsNumeric<T>) {
        nonZero = p[i] != T(0);
      } else {
        nonZero = toDouble(p[i]) != 0.0;
      }
      if (nonZero) flatHits.push_back(i);
    }
  });
  if (!handled) return makeError(ErrorCode::TypeMismatch, "NonZero does not take {}", dtypeName(x.dtype()));
  // A scalar counts as a 1-D tensor of one element, as numpy treats it.
  const std::vector<int64_t> sizes = x.rank() == 0 ? std::vector<int64_t>{1} : x.sizes();
  const auto hits = static_cast<int64_t>(flatHits.size());
  Tensor out(DType::Int64, {static_cast<int64_t>(sizes.size()), hits});
  int64_t *o = out.data<int64_t>();
  for (int64_t h = 0; h < hits; ++h) {
    int64_t rest = flatHits[static_cast<size_t>(h)];
    for (size_t a = sizes.size(); a-- > 0;) {
      o[static_cast<int64_t>(a) * hits + h] = rest % sizes[a];
      rest /= sizes[a];
    }
  }
  ctx.setOutput(0, std::move(out));
  return Status::success();
}

}  // namespace tessel::ref
