// Shape and type inference for the ops whose opset-18 form the linked ONNX library (1.12, opsets up
// to 17) does not know: its older schemas would give the older semantics (ReduceMean-13 reads
// `axes` from an attribute, Split-13 has no `num_outputs`). Where an older schema of another op has
// the same shape rules it is borrowed (inferOnnxAs); the rest are worked out here. Constant inputs
// (initializers, Constant outputs) give static dims; others leave the affected dims unknown.
#include <algorithm>
#include <optional>

#include "ops/reference/shape_rules.h"
#include "ops/registry.h"

namespace tessel {

namespace {

const Type *tensorInputType(const Node &node, size_t i) {
  const Value *v = node.input(i);
  return v && v->type().isTensor() ? &v->type() : nullptr;
}

/// The integers of constant input `i`, or nullopt when it is omitted or only known at run time.
std::optional<std::vector<int64_t>> constantInts(const Node &node, size_t i) {
  const Value *v = node.input(i);
  if (!v) return std::nullopt;
  std::optional<Tensor> t = constantInputValue(*v);
  if (!t || !isInteger(t->dtype())) return std::nullopt;
  return t->toInt64Vector();
}

std::optional<std::vector<double>> constantDoubles(const Node &node, size_t i) {
  const Value *v = node.input(i);
  if (!v) return std::nullopt;
  std::optional<Tensor> t = constantInputValue(*v);
  if (!t || !isFloatingPoint(t->dtype())) return std::nullopt;
  std::vector<double> values(static_cast<size_t>(t->numel()));
  for (int64_t k = 0; k < t->numel(); ++k) values[static_cast<size_t>(k)] = t->scalarAsDouble(k);
  return values;
}

/// Sets output `i` to `inferred`, keeping dims the output already knows; a declared type that
/// contradicts the inferred one is an error (as ONNX's merge reports it), so kernels that trust
/// declared types never see a wrong one.
Status setOutputType(Node &node, size_t i, const Type &inferred) {
  Value *out = node.output(i);
  if (!out) return Status::success();
  const Type &existing = out->type();
  if (!existing.isTensor()) {
    out->setType(inferred);
    return Status::success();
  }
  auto conflict = [&] {
    return makeError(ErrorCode::ShapeMismatch, "{} output {} ('{}') is declared {} but infers as {}", node.opType(), i,
                     out->name(), existing.str(), inferred.str());
  };
  const DType dtype = existing.dtype() == DType::Undefined ? inferred.dtype() : existing.dtype();
  if (inferred.dtype() != DType::Undefined && inferred.dtype() != dtype) return conflict();
  const Shape &declared = existing.shape();
  if (!inferred.shape().rankKnown() || !declared.rankKnown()) {
    out->setType(Type::tensor(dtype, declared.rankKnown() ? declared : inferred.shape()));
    return Status::success();
  }
  if (declared.rank() != inferred.shape().rank()) return conflict();
  std::vector<Dim> dims = inferred.shape().dims();
  for (size_t d = 0; d < dims.size(); ++d) {
    const Dim &known = declared[d];
    if (known.isStatic() && dims[d].isStatic() && known.size != dims[d].size) return conflict();
    if (known.isStatic() || (!dims[d].isStatic() && known.isSymbolic())) dims[d] = known;
  }
  out->setType(Type::tensor(dtype, Shape(std::move(dims))));
  return Status::success();
}

Status badInput(std::string message) { return makeError(ErrorCode::InvalidModel, "{}", message); }

/// Axes normalized to [0, rank); an error names the offending value.
Expected<std::vector<size_t>> normalizedAxes(const std::vector<int64_t> &axes, size_t rank, const char *op) {
  std::vector<size_t> out;
  const auto r = static_cast<int64_t>(rank);
  for (int64_t axis : axes) {
    if (axis < -r || axis >= r) {
      return makeError(ErrorCode::InvalidModel, "{}: axis {} is out of range for rank {}", op, axis, rank);
    }
    const auto a = static_cast<size_t>(axis < 0 ? axis + r : axis);
    if (std::find(out.begin(), out.end(), a) != out.end()) {
      return makeError(ErrorCode::InvalidModel, "{}: axes name axis {} twice", op, a);
    }
    out.push_back(a);
  }
  return out;
}

}  // namespace

/// Reduce*-18: `axes` moved from an attribute to input 1, beside noop_with_empty_axes and keepdims,
/// exactly the shape rules of ReduceSum-13.
Status inferReduceOpset18(Node &node, int64_t opset) {
  if (node.hasAttr("axes")) {
    return badInput(fmt::format("{} at opset 18 takes axes as input 1, not as an attribute", node.opType()));
  }
  return inferOnnxAs(node, opset, "ReduceSum", 13);
}

/// LpPool-18 gains ceil_mode and dilations: the window geometry of MaxPool-12.
Status inferLpPoolOpset18(Node &node, int64_t opset) { return inferOnnxAs(node, opset, "MaxPool", 12); }

/// BitwiseAnd/Or/Xor: one element type, numpy broadcasting, as BitShift-11 infers.
Status inferBroadcastOpset18(Node &node, int64_t opset) { return inferOnnxAs(node, opset, "BitShift", 11); }

/// Split-18: the `split` input, or `num_outputs` chunks of ceil(dim / n) with a smaller last one
/// (with neither, equal parts per output as Split-13).
Status inferSplitOpset18(Node &node, int64_t) {
  const Type *x = tensorInputType(node, 0);
  const size_t outputs = node.outputs().size();
  const bool hasSplit = node.input(1) != nullptr;
  const bool hasNumOutputs = node.hasAttr("num_outputs");
  if (hasSplit && hasNumOutputs) return badInput("Split takes the split input or num_outputs, not both");
  if (hasNumOutputs && node.attrInt("num_outputs", 0) != static_cast<int64_t>(outputs)) {
    return badInput(fmt::format("Split has num_outputs {} but {} outputs", node.attrInt("num_outputs", 0), outputs));
  }
  if (!x || !x->shape().rankKnown()) return Status::success();
  const Shape &shape = x->shape();
  TESSEL_ASSIGN_OR_RETURN(std::vector<size_t> axes, normalizedAxes({node.attrInt("axis", 0)}, shape.rank(), "Split"));
  const size_t axis = axes[0];
  std::vector<Dim> pieces(outputs);  // Unknown unless worked out below.
  if (hasSplit) {
    if (std::optional<std::vector<int64_t>> split = constantInts(node, 1)) {
      if (split->size() != outputs) {
        return badInput(fmt::format("Split: split has {} values for {} outputs", split->size(), outputs));
      }
      int64_t total = 0;
      for (size_t o = 0; o < outputs; ++o) {
        if ((*split)[o] < 0) return badInput(fmt::format("Split: split {} has a negative part", formatSizes(*split)));
        pieces[o] = Dim((*split)[o]);
        total += (*split)[o];
      }
      if (shape[axis].isStatic() && total != shape[axis].size) {
        return makeError(ErrorCode::ShapeMismatch, "Split: split {} sums to {}; axis {} has size {}",
                         formatSizes(*split), total, axis, shape[axis].size);
      }
    }
  } else if (shape[axis].isStatic() && hasNumOutputs) {
    TESSEL_ASSIGN_OR_RETURN(std::vector<int64_t> sizes,
                            ref::splitIntoChunks(shape[axis].size, static_cast<int64_t>(outputs)));
    for (size_t o = 0; o < outputs; ++o) pieces[o] = Dim(sizes[o]);
  } else if (shape[axis].isStatic() && outputs > 0 && shape[axis].size % static_cast<int64_t>(outputs) == 0) {
    // Neither given: equal parts, as before opset 18 (an uneven axis is the kernel's to report).
    pieces.assign(outputs, Dim(shape[axis].size / static_cast<int64_t>(outputs)));
  }
  for (size_t o = 0; o < outputs; ++o) {
    std::vector<Dim> dims = shape.dims();
    dims[axis] = pieces[o];
    TESSEL_RETURN_IF_ERROR(setOutputType(node, o, Type::tensor(x->dtype(), Shape(std::move(dims)))));
  }
  return Status::success();
}

/// Pad-18: pads (input 1) name only the axes of input 3 when it is given.
Status inferPadOpset18(Node &node, int64_t) {
  const Type *x = tensorInputType(node, 0);
  if (!x || !x->shape().rankKnown()) return Status::success();
  const Shape &shape = x->shape();
  std::vector<Dim> dims(shape.rank());  // Unknown where the pads are.
  std::vector<int64_t> axisList(shape.rank());
  for (size_t a = 0; a < shape.rank(); ++a) axisList[a] = static_cast<int64_t>(a);
  std::optional<std::vector<int64_t>> axes = node.input(3) ? constantInts(node, 3) : axisList;
  std::optional<std::vector<int64_t>> pads = constantInts(node, 1);
  if (axes) {
    TESSEL_ASSIGN_OR_RETURN(std::vector<size_t> padded, normalizedAxes(*axes, shape.rank(), "Pad"));
    dims = shape.dims();
    if (pads && pads->size() != 2 * padded.size()) {
      return badInput(fmt::format("Pad: pads has {} values; expected {} for the {} axes", pads->size(), 2 * padded.size(),
                                  padded.size()));
    }
    for (size_t k = 0; k < padded.size(); ++k) {
      const size_t a = padded[k];
      if (!pads || !shape[a].isStatic()) {
        dims[a] = Dim();
        continue;
      }
      int64_t size = 0;
      if (__builtin_add_overflow(shape[a].size, (*pads)[k], &size) ||
          __builtin_add_overflow(size, (*pads)[k + padded.size()], &size)) {
        return makeError(ErrorCode::InvalidArgument, "Pad: pads {} are too large", formatSizes(*pads));
      }
      if (size < 0) return makeError(ErrorCode::ShapeMismatch, "Pad: pads {} make axis {} negative", formatSizes(*pads), a);
      dims[a] = Dim(size);
    }
  }
  return setOutputType(node, 0, Type::tensor(x->dtype(), Shape(std::move(dims))));
}

/// Resize-18: scales (input 2) or sizes (input 3) for the `axes` attribute's axes, sizes adjusted
/// by keep_aspect_ratio_policy.
Status inferResizeOpset18(Node &node, int64_t) {
  const Type *x = tensorInputType(node, 0);
  if (!x || !x->shape().rankKnown()) return Status::success();
  const Shape &shape = x->shape();
  std::vector<int64_t> inSizes;
  for (const Dim &d : shape.dims()) inSizes.push_back(d.isStatic() ? d.size : -1);
  const bool allStatic = std::find(inSizes.begin(), inSizes.end(), -1) == inSizes.end();
  std::optional<std::vector<double>> scales = node.input(2) ? constantDoubles(node, 2) : std::vector<double>{};
  std::optional<std::vector<int64_t>> sizes = node.input(3) ? constantInts(node, 3) : std::vector<int64_t>{};
  std::vector<Dim> dims(shape.rank());
  if (allStatic && scales && sizes) {
    ref::ResizeTarget target;
    TESSEL_RETURN_IF_ERROR(ref::resolveResizeTarget(inSizes, *scales, *sizes, node, target));
    for (size_t a = 0; a < dims.size(); ++a) dims[a] = Dim(target.outSizes[a]);
  }
  return setOutputType(node, 0, Type::tensor(x->dtype(), Shape(std::move(dims))));
}

/// CenterCropPad-18: the named axes (all by default) take the sizes of input 1.
Status inferCenterCropPadOpset18(Node &node, int64_t) {
  const Type *x = tensorInputType(node, 0);
  if (!x || !x->shape().rankKnown()) return Status::success();
  const Shape &shape = x->shape();
  std::vector<int64_t> axisList = node.attrInts("axes", {});
  if (axisList.empty()) {
    for (size_t a = 0; a < shape.rank(); ++a) axisList.push_back(static_cast<int64_t>(a));
  }
  TESSEL_ASSIGN_OR_RETURN(std::vector<size_t> axes, normalizedAxes(axisList, shape.rank(), "CenterCropPad"));
  std::optional<std::vector<int64_t>> target = constantInts(node, 1);
  if (target && target->size() != axes.size()) {
    return badInput(fmt::format("CenterCropPad: shape has {} values for {} axes", target->size(), axes.size()));
  }
  std::vector<Dim> dims = shape.dims();
  for (size_t k = 0; k < axes.size(); ++k) dims[axes[k]] = target && (*target)[k] >= 0 ? Dim((*target)[k]) : Dim();
  return setOutputType(node, 0, Type::tensor(x->dtype(), Shape(std::move(dims))));
}

/// Col2Im-18: [N, C * prod(block_shape), L] to [N, C, image_shape...].
Status inferCol2ImOpset18(Node &node, int64_t) {
  const Type *x = tensorInputType(node, 0);
  if (!x) return Status::success();
  std::optional<std::vector<int64_t>> image = constantInts(node, 1);
  std::optional<std::vector<int64_t>> block = constantInts(node, 2);
  if (!image) {
    return setOutputType(node, 0, Type::tensor(x->dtype(), Shape()));
  }
  std::vector<Dim> dims(2);
  const Shape &xs = x->shape();
  if (xs.rankKnown() && xs.rank() == 3) {
    dims[0] = xs[0];
    int64_t blockSize = 1;
    for (int64_t b : block.value_or(std::vector<int64_t>{})) blockSize = b > 0 ? blockSize * b : 0;
    if (block && blockSize > 0 && xs[1].isStatic() && xs[1].size % blockSize == 0) dims[1] = Dim(xs[1].size / blockSize);
  }
  for (int64_t size : *image) dims.push_back(size >= 0 ? Dim(size) : Dim());
  return setOutputType(node, 0, Type::tensor(x->dtype(), Shape(std::move(dims))));
}

/// OptionalGetElement-18 also takes a plain tensor or sequence, which it returns as it is.
Status inferOptionalGetElementOpset18(Node &node, int64_t) {
  const Value *in = node.input(0);
  if (!in || !node.output(0)) return Status::success();
  const Type &type = in->type();
  if (type.kind() == Type::Kind::Unknown) return Status::success();
  node.output(0)->setType(type.kind() == Type::Kind::Optional ? type.element() : type);
  return Status::success();
}

/// OptionalHasElement-18: a bool scalar; the input may be omitted, or be a tensor or sequence.
Status inferOptionalHasElementOpset18(Node &node, int64_t) {
  if (node.output(0)) node.output(0)->setType(Type::tensor(DType::Bool, Shape::scalar()));
  return Status::success();
}

}  // namespace tessel

namespace tessel {

const Opset18Signature *opset18Signature(std::string_view opType) {
  static const std::vector<Opset18Signature> kSignatures = [] {
    // Attribute kinds: i int, f float, s string, I ints.
    std::vector<Opset18Signature> rows = {
        {"Split", 1, 2, 1, INT32_MAX, {{"axis", 'i'}, {"num_outputs", 'i'}}},
        {"Pad", 2, 4, 1, 1, {{"mode", 's'}}},
        {"Resize", 1, 4, 1, 1,
         {{"antialias", 'i'}, {"axes", 'I'}, {"coordinate_transformation_mode", 's'}, {"cubic_coeff_a", 'f'},
          {"exclude_outside", 'i'}, {"extrapolation_value", 'f'}, {"keep_aspect_ratio_policy", 's'}, {"mode", 's'},
          {"nearest_mode", 's'}}},
        {"ScatterElements", 3, 3, 1, 1, {{"axis", 'i'}, {"reduction", 's'}}},
        {"ScatterND", 3, 3, 1, 1, {{"reduction", 's'}}},
        {"LpPool", 1, 1, 1, 1,
         {{"auto_pad", 's'}, {"ceil_mode", 'i'}, {"dilations", 'I'}, {"kernel_shape", 'I'}, {"p", 'i'}, {"pads", 'I'},
          {"strides", 'I'}}},
        {"CenterCropPad", 2, 2, 1, 1, {{"axes", 'I'}}},
        {"Col2Im", 3, 3, 1, 1, {{"dilations", 'I'}, {"pads", 'I'}, {"strides", 'I'}}},
        {"OptionalGetElement", 1, 1, 1, 1, {}},
        {"OptionalHasElement", 0, 1, 1, 1, {}},
        {"BitwiseAnd", 2, 2, 1, 1, {}},
        {"BitwiseOr", 2, 2, 1, 1, {}},
        {"BitwiseXor", 2, 2, 1, 1, {}},
        {"BitwiseNot", 1, 1, 1, 1, {}},
        {"Mish", 1, 1, 1, 1, {}},
    };
    for (std::string_view reduce : {"ReduceL1", "ReduceL2", "ReduceLogSum", "ReduceLogSumExp", "ReduceMax", "ReduceMean",
                                    "ReduceMin", "ReduceProd", "ReduceSumSquare"}) {
      rows.push_back({reduce, 1, 2, 1, 1, {{"keepdims", 'i'}, {"noop_with_empty_axes", 'i'}}});
    }
    return rows;
  }();
  for (const Opset18Signature &row : kSignatures) {
    if (row.op == opType) return &row;
  }
  return nullptr;
}

}  // namespace tessel
