// cpu lowering of the data-movement ops. Reshape, Flatten, Squeeze, Unsqueeze and Identity are
// aliases (the output is the input's memory; nothing runs). Transpose, Slice, Expand and Tile are
// one strided copy each (kernels/transpose.h), planned here from the static shapes; Concat and
// Split copy rows; Gather copies one slab per index, bounds-checked at lowering for constant
// indices and at run time otherwise. Every fixed-size dtype is moved as raw words; string tensors
// are left to the reference kernels.
#include <algorithm>
#include <cstring>
#include <numeric>
#include <optional>

#include <fmt/format.h>

#include "ops/slice_geometry.h"
#include "targets/cpu/kernels/transpose.h"
#include "targets/cpu/step.h"

namespace tessel::cpu {
namespace {

std::string formatSizes(const std::vector<int64_t> &sizes) { return fmt::format("[{}]", fmt::join(sizes, ",")); }

/// Bytes per element, or 0 for dtypes these kernels do not move (strings).
size_t movableElementBytes(DType dtype) { return dtype == DType::String ? 0 : dtypeSize(dtype); }

/// The axis in [-rank, rank) as a non-negative index, or an error naming the op.
Expected<int64_t> normalizeAxis(const LowerContext &ctx, int64_t axis, int64_t rank) {
  if (axis < -rank || axis >= rank) {
    return makeError(ErrorCode::InvalidArgument, "{}: axis {} is out of range for rank {}", ctx.node().opType(), axis,
                     rank);
  }
  return axis < 0 ? axis + rank : axis;
}

class AliasStep final : public Step {
 public:
  Status run(const StepIo &) const override { return Status::success(); }
  int aliasInput() const override { return 0; }
  std::string kernelName() const override { return "alias"; }
};

/// A Reshape whose shape input is computed: the output still aliases the input, and each run checks
/// that the shape resolves (0 = copy the input dim unless allowzero, -1 = the rest) to the planned
/// output sizes.
class CheckedReshapeStep final : public Step {
 public:
  CheckedReshapeStep(std::vector<int64_t> in, std::vector<int64_t> out, bool allowZero)
      : in_(std::move(in)), out_(std::move(out)), allowZero_(allowZero) {}
  Status run(const StepIo &io) const override {
    const auto *shape = static_cast<const int64_t *>(io.inputs[1]);
    bool matches = true;
    int64_t known = 1;
    int inferred = -1;
    for (size_t i = 0; i < out_.size(); ++i) {
      int64_t want = shape[i];
      if (want == 0 && !allowZero_) want = i < in_.size() ? in_[i] : -2;
      if (want == -1) {
        matches = matches && inferred < 0;
        inferred = int(i);
        continue;
      }
      matches = matches && want == out_[i];
      known *= out_[i];
    }
    if (inferred >= 0) matches = matches && known * out_[size_t(inferred)] == elementCount(in_);
    if (matches) return Status::success();
    // The same words as the reference kernel for the defects it names.
    std::vector<int64_t> given(shape, shape + out_.size());
    if (std::count(given.begin(), given.end(), -1) > 1) {
      return makeError(ErrorCode::ShapeMismatch, "Reshape: shape {} has more than one -1", formatSizes(given));
    }
    if (std::any_of(given.begin(), given.end(), [](int64_t d) { return d > (int64_t{1} << 32); })) {
      return makeError(ErrorCode::ShapeMismatch, "Reshape: shape {} is too large", formatSizes(given));
    }
    return makeError(ErrorCode::ShapeMismatch, "Reshape: shape {} does not give the planned output {} from input {}",
                     formatSizes(given), formatSizes(out_), formatSizes(in_));
  }
  int aliasInput() const override { return 0; }
  bool checksAtRunTime() const override { return true; }
  std::string kernelName() const override { return "alias (shape checked)"; }

 private:
  std::vector<int64_t> in_, out_;
  bool allowZero_;
};

class StridedCopyStep final : public Step {
 public:
  StridedCopyStep(StridedCopyPlan plan, std::string op) : plan_(std::move(plan)), op_(std::move(op)) {}
  Status run(const StepIo &io) const override {
    stridedCopy(plan_, io.inputs[0], io.outputs[0], io.pool);
    return Status::success();
  }
  std::string kernelName() const override { return fmt::format("{} {}", op_, loopName(plan_.loop)); }

 private:
  StridedCopyPlan plan_;
  std::string op_;
};

/// Wraps a strided copy, or nullptr when the plan has too many dims after merging.
Expected<std::unique_ptr<Step>> stridedCopyStep(StridedCopyPlan plan, std::string op) {
  if (plan.sizes.empty()) return std::unique_ptr<Step>();
  return std::unique_ptr<Step>(std::make_unique<StridedCopyStep>(std::move(plan), std::move(op)));
}

/// Concat (inputs into one output) or Split (one input into outputs): `outer` rows, and per piece
/// a run of `pieceBytes[i]` bytes at offset `pieceOffsets[i]` of each `wholeBytes`-byte row.
class SlabCopyStep final : public Step {
 public:
  SlabCopyStep(bool concat, int64_t outer, size_t wholeBytes, std::vector<size_t> pieceBytes,
               std::vector<size_t> pieceOffsets)
      : concat_(concat), outer_(outer), wholeBytes_(wholeBytes), pieceBytes_(std::move(pieceBytes)),
        pieceOffsets_(std::move(pieceOffsets)) {}

  Status run(const StepIo &io) const override {
    for (size_t i = 0; i < pieceBytes_.size(); ++i) {
      if (pieceBytes_[i] == 0) continue;
      if (concat_) {
        copyRows(outer_, pieceBytes_[i], io.inputs[i], pieceBytes_[i],
                 static_cast<std::byte *>(io.outputs[0]) + pieceOffsets_[i], wholeBytes_, io.pool);
      } else if (io.outputs[i] != nullptr) {
        copyRows(outer_, pieceBytes_[i], static_cast<const std::byte *>(io.inputs[0]) + pieceOffsets_[i], wholeBytes_,
                 io.outputs[i], pieceBytes_[i], io.pool);
      }
    }
    return Status::success();
  }
  std::string kernelName() const override { return concat_ ? "concat_rows" : "split_rows"; }

 private:
  bool concat_;
  int64_t outer_;
  size_t wholeBytes_;
  std::vector<size_t> pieceBytes_;
  std::vector<size_t> pieceOffsets_;
};

/// Gather along `axis`: for each of `outer` rows and each index, one slab of `slabBytes` bytes.
/// Constant indices arrive checked and normalized; runtime ones are checked before any copy.
class GatherStep final : public Step {
 public:
  GatherStep(int64_t outer, int64_t axisSize, int64_t indexCount, size_t slabBytes, DType indexType,
             std::vector<int64_t> constantIndices, int64_t axis)
      : outer_(outer), axisSize_(axisSize), indexCount_(indexCount), slabBytes_(slabBytes), indexType_(indexType),
        constantIndices_(std::move(constantIndices)), axis_(axis) {}

  Status run(const StepIo &io) const override {
    if (!constantIndices_.empty() || indexCount_ == 0) {
      copySlabs(io, [&](int64_t j) { return constantIndices_[size_t(j)]; });
      return Status::success();
    }
    if (indexType_ == DType::Int64) return gatherRuntime(io, static_cast<const int64_t *>(io.inputs[1]));
    return gatherRuntime(io, static_cast<const int32_t *>(io.inputs[1]));
  }
  std::string kernelName() const override { return constantIndices_.empty() ? "gather_rows" : "gather_rows const"; }

 private:
  template <class Index>
  Status gatherRuntime(const StepIo &io, const Index *indices) const {
    for (int64_t j = 0; j < indexCount_; ++j) {
      const int64_t index = int64_t(indices[j]);
      if (index < -axisSize_ || index >= axisSize_) {
        return makeError(ErrorCode::RuntimeError, "Gather: index {} (position {}) is out of range for axis {} of size {}",
                         index, j, axis_, axisSize_);
      }
    }
    copySlabs(io, [&](int64_t j) {
      const int64_t index = int64_t(indices[j]);
      return index < 0 ? index + axisSize_ : index;
    });
    return Status::success();
  }

  template <class IndexAt>
  void copySlabs(const StepIo &io, const IndexAt &indexAt) const {
    const auto *data = static_cast<const std::byte *>(io.inputs[0]);
    auto *out = static_cast<std::byte *>(io.outputs[0]);
    const int64_t rows = outer_ * indexCount_;
    auto copyRange = [&](int64_t begin, int64_t end) {
      for (int64_t r = begin; r < end; ++r) {
        const int64_t o = r / indexCount_, j = r % indexCount_;
        std::memcpy(out + size_t(r) * slabBytes_, data + size_t(o * axisSize_ + indexAt(j)) * slabBytes_, slabBytes_);
      }
    };
    const int64_t tasks = copyTasks(size_t(rows) * slabBytes_, rows, io.pool);
    if (tasks <= 1) return copyRange(0, rows);
    io.pool->parallelFor(tasks, [&](int64_t t) { copyRange(rows * t / tasks, rows * (t + 1) / tasks); });
  }

  int64_t outer_, axisSize_, indexCount_;
  size_t slabBytes_;
  DType indexType_;
  std::vector<int64_t> constantIndices_;
  int64_t axis_;
};

/// True when every input past the data (shape, axes, repeats) is a constant. A runtime one could
/// hold anything, and only the reference kernel checks it against the planned output each run.
bool operandsAreConstant(const LowerContext &ctx) {
  for (size_t i = 1; i < ctx.numInputs(); ++i) {
    if (ctx.hasInput(i) && ctx.constantInput(i) == nullptr) return false;
  }
  return true;
}

/// Releases constant inputs past the data (shapes, axes, bounds, repeats, indices): a step reads
/// them only here, at lowering.
void releaseConstantOperands(LowerContext &ctx) {
  for (size_t i = 1; i < ctx.numInputs(); ++i) {
    if (ctx.hasInput(i) && ctx.constantInput(i) != nullptr) ctx.releaseConstantInput(i);
  }
}

/// The lowering of every alias op: same dtype and element count in and out.
Expected<std::unique_ptr<Step>> lowerAlias(LowerContext &ctx) {
  if (movableElementBytes(ctx.inputDType(0)) == 0 || !operandsAreConstant(ctx)) return std::unique_ptr<Step>();
  if (ctx.inputDType(0) != ctx.outputDType(0)) {
    return makeError(ErrorCode::TypeMismatch, "{}: output dtype {} differs from input dtype {}", ctx.node().opType(),
                     dtypeName(ctx.outputDType(0)), dtypeName(ctx.inputDType(0)));
  }
  const std::vector<int64_t> in = ctx.inputSizes(0), out = ctx.outputSizes(0);
  if (elementCount(in) != elementCount(out)) {
    return makeError(ErrorCode::ShapeMismatch, "{}: output {} has a different element count than input {}",
                     ctx.node().opType(), formatSizes(out), formatSizes(in));
  }
  releaseConstantOperands(ctx);
  return std::unique_ptr<Step>(std::make_unique<AliasStep>());
}

/// Checks that `got` (the node's static output) matches what the op computes.
Status expectOutputSizes(const LowerContext &ctx, const std::vector<int64_t> &want, size_t output = 0) {
  const std::vector<int64_t> got = ctx.outputSizes(output);
  if (got != want) {
    return makeError(ErrorCode::ShapeMismatch, "{}: output {} is {}; the inputs give {}", ctx.node().opType(), output,
                     formatSizes(got), formatSizes(want));
  }
  return Status::success();
}

/// The int64 values of constant input i, or nullopt when it is not constant.
std::optional<std::vector<int64_t>> constantInts(const LowerContext &ctx, size_t i) {
  const Tensor *t = ctx.constantInput(i);
  if (t == nullptr) return std::nullopt;
  return t->toInt64Vector();
}

}  // namespace

Expected<std::unique_ptr<Step>> lowerReshape(LowerContext &ctx) {
  const bool computedShape = ctx.hasInput(1) && ctx.constantInput(1) == nullptr;
  if (!computedShape) return lowerAlias(ctx);
  if (movableElementBytes(ctx.inputDType(0)) == 0 || ctx.inputDType(0) != ctx.outputDType(0) ||
      ctx.inputDType(1) != DType::Int64 || ctx.inputSizes(1) != std::vector<int64_t>{int64_t(ctx.outputSizes(0).size())} ||
      elementCount(ctx.inputSizes(0)) != elementCount(ctx.outputSizes(0))) {
    return std::unique_ptr<Step>();
  }
  return std::unique_ptr<Step>(std::make_unique<CheckedReshapeStep>(ctx.inputSizes(0), ctx.outputSizes(0),
                                                                    ctx.node().attrInt("allowzero", 0) != 0));
}
Expected<std::unique_ptr<Step>> lowerFlatten(LowerContext &ctx) { return lowerAlias(ctx); }
Expected<std::unique_ptr<Step>> lowerSqueeze(LowerContext &ctx) { return lowerAlias(ctx); }
Expected<std::unique_ptr<Step>> lowerUnsqueeze(LowerContext &ctx) { return lowerAlias(ctx); }
Expected<std::unique_ptr<Step>> lowerIdentity(LowerContext &ctx) { return lowerAlias(ctx); }

Expected<std::unique_ptr<Step>> lowerTranspose(LowerContext &ctx) {
  const size_t elementBytes = movableElementBytes(ctx.inputDType(0));
  if (elementBytes == 0) return std::unique_ptr<Step>();
  const std::vector<int64_t> in = ctx.inputSizes(0);
  const auto rank = int64_t(in.size());
  std::vector<int64_t> perm(in.size());
  std::iota(perm.rbegin(), perm.rend(), 0);  // The default reverses the dims.
  if (ctx.node().hasAttr("perm")) perm = ctx.node().attrInts("perm");
  std::vector<bool> seen(in.size(), false);
  bool valid = int64_t(perm.size()) == rank;
  for (int64_t &p : perm) {
    if (!valid) break;
    if (p < 0) p += rank;
    valid = p >= 0 && p < rank && !seen[size_t(p)];
    if (valid) seen[size_t(p)] = true;
  }
  if (!valid) {
    return makeError(ErrorCode::InvalidArgument, "Transpose: perm {} is not a permutation of {} dims",
                     formatSizes(ctx.node().attrInts("perm")), rank);
  }
  std::vector<int64_t> outSizes(in.size());
  for (size_t k = 0; k < perm.size(); ++k) outSizes[k] = in[size_t(perm[k])];
  TESSEL_RETURN_IF_ERROR(expectOutputSizes(ctx, outSizes));
  return stridedCopyStep(planTranspose(elementBytes, in, perm), "transpose");
}

Expected<std::unique_ptr<Step>> lowerSlice(LowerContext &ctx) {
  const size_t elementBytes = movableElementBytes(ctx.inputDType(0));
  if (elementBytes == 0) return std::unique_ptr<Step>();
  const std::vector<int64_t> in = ctx.inputSizes(0);
  std::vector<int64_t> starts, ends, axes, steps;
  if (ctx.opset() < 10) {
    starts = ctx.node().attrInts("starts");
    ends = ctx.node().attrInts("ends");
    axes = ctx.node().attrInts("axes");
  } else {
    auto constStarts = constantInts(ctx, 1), constEnds = constantInts(ctx, 2);
    auto constAxes = ctx.hasInput(3) ? constantInts(ctx, 3) : std::optional<std::vector<int64_t>>(std::vector<int64_t>{});
    auto constSteps = ctx.hasInput(4) ? constantInts(ctx, 4) : std::optional<std::vector<int64_t>>(std::vector<int64_t>{});
    // Bounds computed at run time: the reference kernel handles them.
    if (!constStarts || !constEnds || !constAxes || !constSteps) return std::unique_ptr<Step>();
    starts = *constStarts;
    ends = *constEnds;
    axes = *constAxes;
    steps = *constSteps;
  }
  auto slices = sliceAxes(in, starts, ends, axes, steps);
  if (!slices.ok()) return makeError(ErrorCode::InvalidArgument, "Slice: {}", slices.diag().message);
  const std::vector<int64_t> inStrides = denseStrides(in);
  std::vector<int64_t> strides = inStrides, outSizes = in;
  int64_t offset = 0;
  for (size_t a = 0; a < slices->size(); ++a) {
    outSizes[a] = (*slices)[a].size;
    offset += (*slices)[a].start * inStrides[a];
    strides[a] = (*slices)[a].step * inStrides[a];
  }
  TESSEL_RETURN_IF_ERROR(expectOutputSizes(ctx, outSizes));
  releaseConstantOperands(ctx);
  return stridedCopyStep(planStridedCopy(elementBytes, outSizes, strides, offset), "slice");
}

Expected<std::unique_ptr<Step>> lowerExpand(LowerContext &ctx) {
  const size_t elementBytes = movableElementBytes(ctx.inputDType(0));
  if (elementBytes == 0 || !operandsAreConstant(ctx)) return std::unique_ptr<Step>();
  const std::vector<int64_t> out = ctx.outputSizes(0);
  const std::optional<std::vector<int64_t>> strides = broadcastStrides(ctx.inputSizes(0), out);
  if (!strides) {
    return makeError(ErrorCode::ShapeMismatch, "{}: input {} does not broadcast to output {}", ctx.node().opType(),
                     formatSizes(ctx.inputSizes(0)), formatSizes(out));
  }
  releaseConstantOperands(ctx);
  return stridedCopyStep(planStridedCopy(elementBytes, out, *strides, 0), "expand");
}

Expected<std::unique_ptr<Step>> lowerTile(LowerContext &ctx) {
  const size_t elementBytes = movableElementBytes(ctx.inputDType(0));
  if (elementBytes == 0 || ctx.opset() < 6 || !operandsAreConstant(ctx)) return std::unique_ptr<Step>();
  const std::vector<int64_t> in = ctx.inputSizes(0), out = ctx.outputSizes(0);
  if (in.size() != out.size()) {
    return makeError(ErrorCode::ShapeMismatch, "Tile: output {} and input {} differ in rank", formatSizes(out),
                     formatSizes(in));
  }
  // out[k] = in[k] * repeats[k] is the same memory as [repeats[k], in[k]] per dim, the repeat dim
  // reading with stride 0.
  const std::vector<int64_t> inStrides = denseStrides(in);
  std::vector<int64_t> sizes, strides;
  for (size_t k = 0; k < in.size(); ++k) {
    if (in[k] == 0 || out[k] % in[k] != 0) {
      if (in[k] == 0 && out[k] == 0) return stridedCopyStep(planStridedCopy(elementBytes, out, inStrides, 0), "tile");
      return makeError(ErrorCode::ShapeMismatch, "Tile: output {} is not a whole number of copies of input {}",
                       formatSizes(out), formatSizes(in));
    }
    sizes.insert(sizes.end(), {out[k] / in[k], in[k]});
    strides.insert(strides.end(), {0, inStrides[k]});
  }
  releaseConstantOperands(ctx);
  return stridedCopyStep(planStridedCopy(elementBytes, sizes, strides, 0), "tile");
}

Expected<std::unique_ptr<Step>> lowerConcat(LowerContext &ctx) {
  const size_t elementBytes = movableElementBytes(ctx.outputDType(0));
  if (elementBytes == 0) return std::unique_ptr<Step>();
  const std::vector<int64_t> out = ctx.outputSizes(0);
  TESSEL_ASSIGN_OR_RETURN(const int64_t axis, normalizeAxis(ctx, ctx.node().attrInt("axis", 0), int64_t(out.size())));
  const auto a = size_t(axis);
  const int64_t outer = elementCount(std::vector<int64_t>(out.begin(), out.begin() + axis));
  const size_t innerBytes = size_t(elementCount(std::vector<int64_t>(out.begin() + axis + 1, out.end()))) * elementBytes;
  std::vector<size_t> pieceBytes, pieceOffsets;
  int64_t along = 0;
  for (size_t i = 0; i < ctx.numInputs(); ++i) {
    if (!ctx.hasInput(i)) return makeError(ErrorCode::InvalidArgument, "Concat: input {} is missing", i);
    std::vector<int64_t> in = ctx.inputSizes(i);
    if (ctx.inputDType(i) != ctx.outputDType(0) || in.size() != out.size()) {
      return makeError(ErrorCode::ShapeMismatch, "Concat: input {} ({}{}) does not match output {}{}", i,
                       dtypeName(ctx.inputDType(i)), formatSizes(in), dtypeName(ctx.outputDType(0)), formatSizes(out));
    }
    for (size_t k = 0; k < in.size(); ++k) {
      if (k != a && in[k] != out[k]) {
        return makeError(ErrorCode::ShapeMismatch, "Concat: input {} {} differs from output {} off axis {}", i,
                         formatSizes(in), formatSizes(out), axis);
      }
    }
    pieceOffsets.push_back(size_t(along) * innerBytes);
    pieceBytes.push_back(size_t(in[a]) * innerBytes);
    along += in[a];
  }
  if (along != out[a]) {
    return makeError(ErrorCode::ShapeMismatch, "Concat: inputs give {} along axis {}; output has {}", along, axis,
                     out[a]);
  }
  return std::unique_ptr<Step>(std::make_unique<SlabCopyStep>(/*concat=*/true, outer, size_t(out[a]) * innerBytes,
                                                              std::move(pieceBytes), std::move(pieceOffsets)));
}

Expected<std::unique_ptr<Step>> lowerSplit(LowerContext &ctx) {
  const size_t elementBytes = movableElementBytes(ctx.inputDType(0));
  if (elementBytes == 0) return std::unique_ptr<Step>();
  const std::vector<int64_t> in = ctx.inputSizes(0);
  TESSEL_ASSIGN_OR_RETURN(const int64_t axis, normalizeAxis(ctx, ctx.node().attrInt("axis", 0), int64_t(in.size())));
  const auto a = size_t(axis);
  const int64_t outer = elementCount(std::vector<int64_t>(in.begin(), in.begin() + axis));
  const size_t innerBytes = size_t(elementCount(std::vector<int64_t>(in.begin() + axis + 1, in.end()))) * elementBytes;
  std::vector<size_t> pieceBytes, pieceOffsets;
  int64_t along = 0;
  // The output sizes (static at lowering) say where each piece starts; the split input or
  // attribute agreed with them when shapes were inferred.
  for (size_t o = 0; o < ctx.node().outputs().size(); ++o) {
    const Value *output = ctx.node().output(o);
    if (output == nullptr) return makeError(ErrorCode::InvalidArgument, "Split: output {} is omitted", o);
    const std::vector<int64_t> sizes = ctx.outputSizes(o);
    if (ctx.outputDType(o) != ctx.inputDType(0) || sizes.size() != in.size()) {
      return makeError(ErrorCode::ShapeMismatch, "Split: output {} ({}{}) does not match input {}{}", o,
                       dtypeName(ctx.outputDType(o)), formatSizes(sizes), dtypeName(ctx.inputDType(0)), formatSizes(in));
    }
    for (size_t k = 0; k < in.size(); ++k) {
      if (k != a && sizes[k] != in[k]) {
        return makeError(ErrorCode::ShapeMismatch, "Split: output {} {} differs from input {} off axis {}", o,
                         formatSizes(sizes), formatSizes(in), axis);
      }
    }
    pieceOffsets.push_back(size_t(along) * innerBytes);
    pieceBytes.push_back(size_t(sizes[a]) * innerBytes);
    along += sizes[a];
  }
  // The pieces must be the ones the split input or attribute asks for; when they are not (or the
  // input is only known at run time), the reference kernel reports the defect in its own words.
  std::optional<std::vector<int64_t>> split =
      ctx.opset() >= 13 ? (ctx.hasInput(1) ? constantInts(ctx, 1) : std::optional<std::vector<int64_t>>(std::vector<int64_t>{}))
                        : std::optional<std::vector<int64_t>>(ctx.node().attrInts("split"));
  if (along != in[a] || !split) return std::unique_ptr<Step>();
  for (size_t o = 0; o < split->size(); ++o) {
    if (split->size() != pieceBytes.size() || (*split)[o] != ctx.outputSizes(o)[a]) return std::unique_ptr<Step>();
  }
  releaseConstantOperands(ctx);
  return std::unique_ptr<Step>(std::make_unique<SlabCopyStep>(/*concat=*/false, outer, size_t(in[a]) * innerBytes,
                                                              std::move(pieceBytes), std::move(pieceOffsets)));
}

Expected<std::unique_ptr<Step>> lowerGather(LowerContext &ctx) {
  const size_t elementBytes = movableElementBytes(ctx.inputDType(0));
  const DType indexType = ctx.inputDType(1);
  if (elementBytes == 0 || (indexType != DType::Int64 && indexType != DType::Int32)) return std::unique_ptr<Step>();
  const std::vector<int64_t> data = ctx.inputSizes(0), indexSizes = ctx.inputSizes(1);
  TESSEL_ASSIGN_OR_RETURN(const int64_t axis, normalizeAxis(ctx, ctx.node().attrInt("axis", 0), int64_t(data.size())));
  const auto a = size_t(axis);
  std::vector<int64_t> outSizes(data.begin(), data.begin() + axis);
  outSizes.insert(outSizes.end(), indexSizes.begin(), indexSizes.end());
  outSizes.insert(outSizes.end(), data.begin() + axis + 1, data.end());
  TESSEL_RETURN_IF_ERROR(expectOutputSizes(ctx, outSizes));
  const int64_t outer = elementCount(std::vector<int64_t>(data.begin(), data.begin() + axis));
  const size_t slabBytes = size_t(elementCount(std::vector<int64_t>(data.begin() + axis + 1, data.end()))) * elementBytes;
  const int64_t indexCount = elementCount(indexSizes);
  std::vector<int64_t> constant;
  if (const Tensor *indices = ctx.constantInput(1)) {
    constant = indices->toInt64Vector();
    for (size_t j = 0; j < constant.size(); ++j) {
      if (constant[j] < -data[a] || constant[j] >= data[a]) {
        return makeError(ErrorCode::InvalidArgument, "Gather: index {} (position {}) is out of range for axis {} of size {}",
                         constant[j], j, axis, data[a]);
      }
      if (constant[j] < 0) constant[j] += data[a];
    }
    ctx.releaseConstantInput(1);
  }
  return std::unique_ptr<Step>(std::make_unique<GatherStep>(outer, data[a], indexCount, slabBytes, indexType,
                                                            std::move(constant), axis));
}

}  // namespace tessel::cpu
