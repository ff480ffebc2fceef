// Reference kernels of the sequence family: building and editing tensor sequences
// (SequenceConstruct, SequenceEmpty, SequenceInsert, SequenceErase), reading them (SequenceAt,
// SequenceLength), converting between a tensor and a sequence of its slabs (SplitToSequence,
// ConcatFromSequence) and mapping a subgraph over them (SequenceMap). Sequences hold tensors by
// handle, so editing one copies handles, not elements.
#include <algorithm>

#include "ops/reference/axis_slicing.h"
#include "ops/reference/helpers.h"

namespace tessel::ref {

namespace {

/// Input `i` as a sequence, or a Diagnostic naming what was given instead.
Expected<const TensorSequence *> sequenceInput(const KernelContext &ctx, size_t i) {
  if (!ctx.hasInput(i) || !ctx.input(i).isSequence()) {
    return makeError(ErrorCode::TypeMismatch, "input {} of {} must be a sequence; got {}", i, ctx.node().opType(),
                     ctx.hasInput(i) ? ctx.input(i).describe() : "none");
  }
  return &ctx.input(i).sequence();
}

/// Input `i` as a tensor, or a Diagnostic naming what was given instead.
Expected<const Tensor *> tensorInput(const KernelContext &ctx, size_t i) {
  if (!ctx.hasInput(i) || !ctx.input(i).isTensor()) {
    return makeError(ErrorCode::TypeMismatch, "input {} of {} must be a tensor; got {}", i, ctx.node().opType(),
                     ctx.hasInput(i) ? ctx.input(i).describe() : "none");
  }
  return &ctx.tensor(i);
}

/// The scalar integer `position` input `i`, mapped into [0, length] (insertion) or [0, length)
/// (everything else); negative positions count from the back.
Expected<int64_t> positionInput(const KernelContext &ctx, size_t i, int64_t length, bool allowEnd) {
  TESSEL_ASSIGN_OR_RETURN(const Tensor *position, tensorInput(ctx, i));
  if (position->dtype() != DType::Int32 && position->dtype() != DType::Int64) {
    return makeError(ErrorCode::TypeMismatch, "position of {} must be i32 or i64; got {}", ctx.node().opType(),
                     dtypeName(position->dtype()));
  }
  if (position->numel() != 1) {
    return makeError(ErrorCode::ShapeMismatch, "position of {} must be a scalar; got shape {}", ctx.node().opType(),
                     formatSizes(position->sizes()));
  }
  const int64_t raw = position->scalarAsInt64();
  const int64_t upper = allowEnd ? length : length - 1;
  if (raw < -length || raw > upper) {
    return makeError(ErrorCode::InvalidArgument, "position {} is out of range [{}, {}] for a sequence of {}", raw,
                     -length, upper, length);
  }
  return raw < 0 ? raw + length : raw;
}

/// SplitToSequence without a `split` input: one slab of size 1 per index along `axis`, with the
/// axis removed when keepdims is 0.
TensorSequence splitIntoSingles(const Tensor &input, size_t axis, bool keepDims) {
  TensorSequence out;
  for (int64_t i = 0; i < input.size(axis); ++i) {
    out.push_back(keepDims ? sliceAlongAxis(input, axis, i, 1) : selectAlongAxis(input, axis, i));
  }
  return out;
}

/// The part lengths a `split` input asks for along an axis of `dimSize` elements.
Expected<std::vector<int64_t>> splitLengths(const Tensor &split, int64_t dimSize) {
  if (split.dtype() != DType::Int32 && split.dtype() != DType::Int64) {
    return makeError(ErrorCode::TypeMismatch, "split must be i32 or i64; got {}", dtypeName(split.dtype()));
  }
  if (split.rank() > 1) {
    return makeError(ErrorCode::ShapeMismatch, "split must be a scalar or 1-D; got shape {}",
                     formatSizes(split.sizes()));
  }
  std::vector<int64_t> lengths;
  if (split.rank() == 0) {
    const int64_t chunk = split.scalarAsInt64();
    if (chunk <= 0) return makeError(ErrorCode::InvalidArgument, "split chunk size must be positive; got {}", chunk);
    for (int64_t start = 0; start < dimSize; start += chunk) lengths.push_back(std::min(chunk, dimSize - start));
    return lengths;
  }
  lengths = split.toInt64Vector();
  int64_t total = 0;
  for (int64_t length : lengths) {
    if (length < 0) return makeError(ErrorCode::InvalidArgument, "split lengths must be >= 0; got {}", length);
    total += length;
  }
  if (total != dimSize) {
    return makeError(ErrorCode::ShapeMismatch, "split lengths sum to {}; the axis has {} elements", total, dimSize);
  }
  return lengths;
}

}  // namespace

Status refSequenceConstruct(KernelContext &ctx) {
  TensorSequence out;
  for (size_t i = 0; i < ctx.numInputs(); ++i) {
    TESSEL_ASSIGN_OR_RETURN(const Tensor *tensor, tensorInput(ctx, i));
    if (!out.empty() && tensor->dtype() != out.front().dtype()) {
      return makeError(ErrorCode::TypeMismatch, "input {} of SequenceConstruct is {}; input 0 is {}", i,
                       dtypeName(tensor->dtype()), dtypeName(out.front().dtype()));
    }
    out.push_back(*tensor);
  }
  ctx.setOutput(0, std::move(out));
  return Status::success();
}

Status refSequenceEmpty(KernelContext &ctx) {
  // The element dtype (attribute `dtype`) lives in the static type; a run-time sequence is
  // just its (here: no) tensors.
  ctx.setOutput(0, TensorSequence{});
  return Status::success();
}

Status refSequenceAt(KernelContext &ctx) {
  TESSEL_ASSIGN_OR_RETURN(const TensorSequence *seq, sequenceInput(ctx, 0));
  TESSEL_ASSIGN_OR_RETURN(int64_t position,
                          positionInput(ctx, 1, static_cast<int64_t>(seq->size()), /*allowEnd=*/false));
  ctx.setOutput(0, (*seq)[static_cast<size_t>(position)]);
  return Status::success();
}

Status refSequenceInsert(KernelContext &ctx) {
  TESSEL_ASSIGN_OR_RETURN(const TensorSequence *seq, sequenceInput(ctx, 0));
  TESSEL_ASSIGN_OR_RETURN(const Tensor *tensor, tensorInput(ctx, 1));
  if (!seq->empty() && tensor->dtype() != seq->front().dtype()) {
    return makeError(ErrorCode::TypeMismatch, "cannot insert a {} tensor into a sequence of {}",
                     dtypeName(tensor->dtype()), dtypeName(seq->front().dtype()));
  }
  auto length = static_cast<int64_t>(seq->size());
  int64_t position = length;
  if (ctx.hasInput(2)) {
    TESSEL_ASSIGN_OR_RETURN(position, positionInput(ctx, 2, length, /*allowEnd=*/true));
  }
  TensorSequence out = *seq;
  out.insert(out.begin() + position, *tensor);
  ctx.setOutput(0, std::move(out));
  return Status::success();
}

Status refSequenceErase(KernelContext &ctx) {
  TESSEL_ASSIGN_OR_RETURN(const TensorSequence *seq, sequenceInput(ctx, 0));
  auto length = static_cast<int64_t>(seq->size());
  if (length == 0) return makeError(ErrorCode::InvalidArgument, "cannot erase from an empty sequence");
  int64_t position = length - 1;
  if (ctx.hasInput(1)) {
    TESSEL_ASSIGN_OR_RETURN(position, positionInput(ctx, 1, length, /*allowEnd=*/false));
  }
  TensorSequence out = *seq;
  out.erase(out.begin() + position);
  ctx.setOutput(0, std::move(out));
  return Status::success();
}

Status refSequenceLength(KernelContext &ctx) {
  TESSEL_ASSIGN_OR_RETURN(const TensorSequence *seq, sequenceInput(ctx, 0));
  ctx.setOutput(0, Tensor::scalar<int64_t>(static_cast<int64_t>(seq->size())));
  return Status::success();
}

Status refSplitToSequence(KernelContext &ctx) {
  TESSEL_ASSIGN_OR_RETURN(const Tensor *input, tensorInput(ctx, 0));
  if (input->rank() == 0) return makeError(ErrorCode::ShapeMismatch, "SplitToSequence cannot split a scalar");
  TESSEL_ASSIGN_OR_RETURN(int64_t axis, normalizeAxis(ctx.node().attrInt("axis", 0),
                                                      static_cast<int64_t>(input->rank())));
  const auto axisIndex = static_cast<size_t>(axis);
  if (!ctx.hasInput(1)) {
    const bool keepDims = ctx.node().attrInt("keepdims", 1) != 0;
    ctx.setOutput(0, splitIntoSingles(*input, axisIndex, keepDims));
    return Status::success();
  }
  TESSEL_ASSIGN_OR_RETURN(const Tensor *split, tensorInput(ctx, 1));
  TESSEL_ASSIGN_OR_RETURN(std::vector<int64_t> lengths, splitLengths(*split, input->size(axisIndex)));
  TensorSequence out;
  int64_t start = 0;
  for (int64_t length : lengths) {
    out.push_back(sliceAlongAxis(*input, axisIndex, start, length));
    start += length;
  }
  ctx.setOutput(0, std::move(out));
  return Status::success();
}

Status refConcatFromSequence(KernelContext &ctx) {
  TESSEL_ASSIGN_OR_RETURN(const TensorSequence *seq, sequenceInput(ctx, 0));
  if (!ctx.node().hasAttr("axis")) {
    return makeError(ErrorCode::InvalidModel, "ConcatFromSequence needs the attribute 'axis'");
  }
  if (seq->empty()) return makeError(ErrorCode::InvalidArgument, "ConcatFromSequence got an empty sequence");
  const bool newAxis = ctx.node().attrInt("new_axis", 0) != 0;
  const auto rank = static_cast<int64_t>(seq->front().rank());
  if (!newAxis && rank == 0) return makeError(ErrorCode::ShapeMismatch, "cannot concatenate scalars without new_axis");
  TESSEL_ASSIGN_OR_RETURN(int64_t axis, normalizeAxis(ctx.node().attrInt("axis", 0), newAxis ? rank + 1 : rank));
  Expected<Tensor> out = newAxis ? stackAlongAxis(*seq, static_cast<size_t>(axis))
                                 : concatAlongAxis(*seq, static_cast<size_t>(axis));
  if (!out.ok()) return out.status();
  ctx.setOutput(0, std::move(out).value());
  return Status::success();
}

Status refSequenceMap(KernelContext &ctx) {
  const Graph *body = ctx.node().attrGraph("body");
  if (!body) return makeError(ErrorCode::InvalidModel, "SequenceMap needs the graph attribute 'body'");
  if (body->inputs().size() != ctx.numInputs() || body->outputs().size() != ctx.numOutputs()) {
    return makeError(ErrorCode::InvalidModel, "SequenceMap body takes {} inputs and returns {} outputs; the node has "
                     "{} and {}", body->inputs().size(), body->outputs().size(), ctx.numInputs(), ctx.numOutputs());
  }
  TESSEL_ASSIGN_OR_RETURN(const TensorSequence *first, sequenceInput(ctx, 0));
  const size_t length = first->size();
  for (size_t i = 1; i < ctx.numInputs(); ++i) {
    if (!ctx.hasInput(i)) return makeError(ErrorCode::InvalidArgument, "input {} of SequenceMap is missing", i);
    if (ctx.input(i).isSequence() && ctx.input(i).sequence().size() != length) {
      return makeError(ErrorCode::ShapeMismatch, "input {} of SequenceMap has {} elements; input 0 has {}", i,
                       ctx.input(i).sequence().size(), length);
    }
  }
  std::vector<TensorSequence> outputs(ctx.numOutputs());
  for (size_t sample = 0; sample < length; ++sample) {
    std::vector<RuntimeValue> bodyInputs;
    for (size_t i = 0; i < ctx.numInputs(); ++i) {
      const RuntimeValue &value = ctx.input(i);
      bodyInputs.push_back(value.isSequence() ? RuntimeValue(value.sequence()[sample]) : value);
    }
    TESSEL_ASSIGN_OR_RETURN(std::vector<RuntimeValue> results, ctx.runSubgraph(*body, std::move(bodyInputs)));
    for (size_t o = 0; o < results.size(); ++o) {
      if (!results[o].isTensor()) {
        return makeError(ErrorCode::TypeMismatch, "SequenceMap body output {} must be a tensor; got {}", o,
                         results[o].describe());
      }
      outputs[o].push_back(std::move(results[o].tensor()));
    }
  }
  for (size_t o = 0; o < outputs.size(); ++o) ctx.setOutput(o, std::move(outputs[o]));
  return Status::success();
}

}  // namespace tessel::ref
