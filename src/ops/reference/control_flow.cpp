// Reference kernels of the control-flow ops: If, Loop and Scan (opset 8 batched form and the
// opset 9+ form with per-input/per-output axes and directions). Each runs its body subgraph
// through KernelContext::runSubgraph, so bodies read outer-scope values like any node does.
// Loop-carried values may be tensors, sequences or empty optionals; scan outputs are tensors,
// stacked along a new axis.
#include <algorithm>
#include <optional>

#include "ops/reference/axis_slicing.h"
#include "ops/reference/helpers.h"

namespace tessel::ref {

namespace {

/// A Loop whose trip count M exceeds this is treated as "no real bound": without a condition
/// input it is rejected up front, and with one it may run at most this many iterations. 2^31
/// iterations of even a tiny body take hours in this interpreter; real models that pass a huge M
/// (PyTorch exports `while` loops with M = INT64_MAX) end through the condition long before.
constexpr int64_t kMaxTripCount = int64_t{1} << 31;

/// Prefixes the message of a failed `status` with `context` ("scan output 2: ...").
Status withContext(Status status, const std::string &context) {
  if (!status.ok()) status.diag().message = context + ": " + status.diag().message;
  return status;
}

/// The one-element bool tensor `value` as a bool; `what` names it in the Diagnostic.
Expected<bool> readCondition(const RuntimeValue &value, const std::string &what) {
  if (!value.isTensor() || value.tensor().dtype() != DType::Bool || value.tensor().numel() != 1) {
    return makeError(ErrorCode::TypeMismatch, "{} must be a bool tensor of one element; got {}", what,
                     value.describe());
  }
  return value.tensor().data<bool>()[0];
}

/// Integer attribute list `name` of `count` entries, or `count` copies of `fallback` if absent.
Expected<std::vector<int64_t>> perItemAttr(const Node &node, const std::string &name, size_t count, int64_t fallback) {
  if (!node.hasAttr(name)) return std::vector<int64_t>(count, fallback);
  std::vector<int64_t> values = node.attrInts(name);
  if (values.size() != count) {
    return makeError(ErrorCode::InvalidModel, "attribute '{}' has {} values; expected {}", name, values.size(), count);
  }
  return values;
}

/// The tensor a scan output of no iterations is: dtype and sizes from the body output's static
/// type (unknown dims count as 0), with a 0-sized axis inserted at `axis`.
Expected<Tensor> emptyScanOutput(const Value &bodyOutput, int64_t axis) {
  const Type &type = bodyOutput.type();
  if (!type.isTensor() || type.dtype() == DType::Undefined) {
    return makeError(ErrorCode::InvalidModel, "the body ran no iteration and output '{}' has no known tensor type",
                     bodyOutput.name());
  }
  std::vector<int64_t> sizes;
  if (type.shape().rankKnown()) {
    for (size_t i = 0; i < type.shape().rank(); ++i) sizes.push_back(std::max<int64_t>(type.shape()[i].size, 0));
  }
  TESSEL_ASSIGN_OR_RETURN(int64_t at, normalizeAxis(axis, static_cast<int64_t>(sizes.size()) + 1, "scan output axis"));
  sizes.insert(sizes.begin() + at, 0);
  return Tensor(type.dtype(), sizes);
}

/// Stacks the per-iteration values of one scan output along `axis` (counted in the stacked
/// result's rank); with no iterations, an empty tensor typed like `bodyOutput`.
Expected<Tensor> stackScanOutput(const std::vector<Tensor> &parts, int64_t axis, const Value &bodyOutput) {
  if (parts.empty()) return emptyScanOutput(bodyOutput, axis);
  TESSEL_ASSIGN_OR_RETURN(int64_t at,
                          normalizeAxis(axis, static_cast<int64_t>(parts[0].rank()) + 1, "scan output axis"));
  return stackAlongAxis(parts, static_cast<size_t>(at));
}

/// Checks that `body` takes `numInputs` inputs and returns at least `minOutputs` outputs, and that
/// the node has no more outputs than the body yields once `leadingOutputs` (Loop's condition) are
/// set aside.
Status checkBodyArity(const KernelContext &ctx, const Graph &body, size_t numInputs, size_t minOutputs,
                      size_t leadingOutputs = 0) {
  const char *op = ctx.node().opType().c_str();
  if (body.inputs().size() != numInputs || body.outputs().size() < minOutputs) {
    return makeError(ErrorCode::InvalidModel, "{} body takes {} inputs and returns {} outputs; expected {} inputs and "
                     "at least {} outputs", op, body.inputs().size(), body.outputs().size(), numInputs, minOutputs);
  }
  if (ctx.numOutputs() > body.outputs().size() - leadingOutputs) {
    return makeError(ErrorCode::InvalidModel, "{} has {} outputs; its body yields only {}", op, ctx.numOutputs(),
                     body.outputs().size() - leadingOutputs);
  }
  return Status::success();
}

/// What iterating a Scan body produced: the final state values and, per scan output, one tensor
/// per iteration in iteration order.
struct ScanRun {
  std::vector<RuntimeValue> states;
  std::vector<std::vector<Tensor>> scanOutputs;
};

/// Runs `body` `length` times. Iteration t feeds the states, then for each scan input the slab at
/// index t (or length-1-t when its direction is 1) along its axis.
Expected<ScanRun> iterateScanBody(const KernelContext &ctx, const Graph &body, std::vector<RuntimeValue> states,
                                  const std::vector<Tensor> &scanInputs, const std::vector<size_t> &axes,
                                  const std::vector<int64_t> &directions, int64_t length) {
  const size_t numStates = states.size();
  ScanRun run;
  run.scanOutputs.resize(body.outputs().size() - numStates);
  for (int64_t t = 0; t < length; ++t) {
    std::vector<RuntimeValue> inputs = states;
    for (size_t i = 0; i < scanInputs.size(); ++i) {
      const int64_t index = directions[i] == 1 ? length - 1 - t : t;
      inputs.emplace_back(selectAlongAxis(scanInputs[i], axes[i], index));
    }
    TESSEL_ASSIGN_OR_RETURN(std::vector<RuntimeValue> results, ctx.runSubgraph(body, std::move(inputs)));
    for (size_t s = 0; s < numStates; ++s) states[s] = std::move(results[s]);
    for (size_t k = 0; k < run.scanOutputs.size(); ++k) {
      RuntimeValue &element = results[numStates + k];
      if (!element.isTensor()) {
        return makeError(ErrorCode::TypeMismatch, "scan output {} of the body must be a tensor; got {}", k,
                         element.describe());
      }
      run.scanOutputs[k].push_back(std::move(element.tensor()));
    }
  }
  run.states = std::move(states);
  return run;
}

/// Scan from opset 9 on: inputs are (states..., scan inputs...), scanned along per-input axes.
Status scanWithAxes(KernelContext &ctx, const Graph &body, size_t numScanInputs) {
  const Node &node = ctx.node();
  const size_t numStates = ctx.numInputs() - numScanInputs;
  TESSEL_RETURN_IF_ERROR(checkBodyArity(ctx, body, ctx.numInputs(), numStates));
  const size_t numScanOutputs = body.outputs().size() - numStates;
  TESSEL_ASSIGN_OR_RETURN(std::vector<int64_t> inputAxes, perItemAttr(node, "scan_input_axes", numScanInputs, 0));
  TESSEL_ASSIGN_OR_RETURN(std::vector<int64_t> inputDirections,
                          perItemAttr(node, "scan_input_directions", numScanInputs, 0));
  TESSEL_ASSIGN_OR_RETURN(std::vector<int64_t> outputAxes, perItemAttr(node, "scan_output_axes", numScanOutputs, 0));
  TESSEL_ASSIGN_OR_RETURN(std::vector<int64_t> outputDirections,
                          perItemAttr(node, "scan_output_directions", numScanOutputs, 0));

  std::vector<RuntimeValue> states;
  for (size_t i = 0; i < numStates; ++i) {
    if (!ctx.hasInput(i)) return makeError(ErrorCode::InvalidModel, "Scan initial state {} is missing", i);
    states.push_back(ctx.input(i));
  }
  std::vector<Tensor> scanInputs;
  std::vector<size_t> axes;
  int64_t length = -1;
  for (size_t m = 0; m < numScanInputs; ++m) {
    const size_t slot = numStates + m;
    if (!ctx.hasInput(slot) || !ctx.input(slot).isTensor()) {
      return makeError(ErrorCode::TypeMismatch, "Scan input {} must be a tensor", slot);
    }
    const Tensor &input = ctx.tensor(slot);
    if (input.rank() == 0) return makeError(ErrorCode::ShapeMismatch, "scan input {} is a scalar; it needs an axis", m);
    TESSEL_ASSIGN_OR_RETURN(int64_t axis,
                            normalizeAxis(inputAxes[m], static_cast<int64_t>(input.rank()), "scan_input_axes value"));
    const int64_t inputLength = input.size(static_cast<size_t>(axis));
    if (length >= 0 && inputLength != length) {
      return makeError(ErrorCode::ShapeMismatch, "scan input {} has {} steps along axis {}; scan input 0 has {}", m,
                       inputLength, axis, length);
    }
    length = inputLength;
    scanInputs.push_back(input);
    axes.push_back(static_cast<size_t>(axis));
  }

  TESSEL_ASSIGN_OR_RETURN(ScanRun run,
                          iterateScanBody(ctx, body, std::move(states), scanInputs, axes, inputDirections, length));
  for (size_t s = 0; s < numStates; ++s) ctx.setOutput(s, std::move(run.states[s]));
  for (size_t k = 0; k < numScanOutputs; ++k) {
    std::vector<Tensor> &parts = run.scanOutputs[k];
    if (outputDirections[k] == 1) std::reverse(parts.begin(), parts.end());  // Prepended each iteration.
    Expected<Tensor> stacked = stackScanOutput(parts, outputAxes[k], *body.outputs()[numStates + k]);
    if (!stacked.ok()) return withContext(stacked.status(), fmt::format("scan output {}", k));
    ctx.setOutput(numStates + k, std::move(stacked).value());
  }
  return Status::success();
}

/// Per-batch lengths for opset-8 Scan: `sequence_lens` when given, else maxLength for all.
Expected<std::vector<int64_t>> batchLengths(const KernelContext &ctx, int64_t batch, int64_t maxLength) {
  if (!ctx.hasInput(0)) return std::vector<int64_t>(static_cast<size_t>(batch), maxLength);
  if (!ctx.input(0).isTensor() || !isInteger(ctx.tensor(0).dtype()) || ctx.tensor(0).numel() != batch) {
    return makeError(ErrorCode::ShapeMismatch, "sequence_lens must be an integer tensor of {} values; got {}", batch,
                     ctx.input(0).describe());
  }
  std::vector<int64_t> lengths = ctx.tensor(0).toInt64Vector();
  for (int64_t length : lengths) {
    if (length < 0 || length > maxLength) {
      return makeError(ErrorCode::InvalidArgument, "sequence length {} is outside [0, {}]", length, maxLength);
    }
  }
  return lengths;
}

/// Scan in opset 8: inputs are (sequence_lens?, states..., scan inputs...), every one batched on
/// axis 0; scan inputs are scanned along axis 1 and scan outputs padded to the longest sequence.
Status scanBatched(KernelContext &ctx, const Graph &body, size_t numScanInputs) {
  if (ctx.numInputs() < numScanInputs + 1) {
    return makeError(ErrorCode::InvalidModel, "Scan has {} inputs; expected sequence_lens and {} scan inputs",
                     ctx.numInputs(), numScanInputs);
  }
  const size_t numStates = ctx.numInputs() - 1 - numScanInputs;
  TESSEL_RETURN_IF_ERROR(checkBodyArity(ctx, body, numStates + numScanInputs, numStates));
  const size_t numScanOutputs = body.outputs().size() - numStates;
  TESSEL_ASSIGN_OR_RETURN(std::vector<int64_t> directions, perItemAttr(ctx.node(), "directions", numScanInputs, 0));

  int64_t batch = -1;
  int64_t maxLength = -1;
  for (size_t i = 1; i < ctx.numInputs(); ++i) {
    const bool isScanInput = i > numStates;
    if (!ctx.hasInput(i) || !ctx.input(i).isTensor()) {
      return makeError(ErrorCode::TypeMismatch, "Scan input {} must be a tensor", i);
    }
    const Tensor &input = ctx.tensor(i);
    if (input.rank() < (isScanInput ? 2u : 1u)) {
      return makeError(ErrorCode::ShapeMismatch, "Scan input {} has shape {}; it needs a batch axis{}", i,
                       formatSizes(input.sizes()), isScanInput ? " and a sequence axis" : "");
    }
    if (batch >= 0 && input.size(0) != batch) {
      return makeError(ErrorCode::ShapeMismatch, "Scan input {} has batch size {}; expected {}", i, input.size(0),
                       batch);
    }
    batch = input.size(0);
    if (!isScanInput) continue;
    if (maxLength >= 0 && input.size(1) != maxLength) {
      return makeError(ErrorCode::ShapeMismatch, "Scan input {} has {} steps; expected {}", i, input.size(1),
                       maxLength);
    }
    maxLength = input.size(1);
  }
  TESSEL_ASSIGN_OR_RETURN(std::vector<int64_t> lengths, batchLengths(ctx, batch, maxLength));

  std::vector<std::vector<Tensor>> finalStates(numStates);
  std::vector<std::vector<Tensor>> scanOutputs(numScanOutputs);
  for (int64_t b = 0; b < batch; ++b) {
    std::vector<RuntimeValue> states;
    for (size_t s = 0; s < numStates; ++s) states.emplace_back(selectAlongAxis(ctx.tensor(1 + s), 0, b));
    std::vector<Tensor> scanInputs;
    for (size_t m = 0; m < numScanInputs; ++m) {
      scanInputs.push_back(selectAlongAxis(ctx.tensor(1 + numStates + m), 0, b));
    }
    const int64_t length = lengths[static_cast<size_t>(b)];
    TESSEL_ASSIGN_OR_RETURN(ScanRun run, iterateScanBody(ctx, body, std::move(states), scanInputs,
                                                         std::vector<size_t>(numScanInputs, 0), directions, length));
    for (size_t s = 0; s < numStates; ++s) {
      if (!run.states[s].isTensor()) {
        return makeError(ErrorCode::TypeMismatch, "Scan state {} must be a tensor; got {}", s,
                         run.states[s].describe());
      }
      finalStates[s].push_back(std::move(run.states[s].tensor()));
    }
    for (size_t k = 0; k < numScanOutputs; ++k) {
      const Value &bodyOutput = *body.outputs()[numStates + k];
      Expected<Tensor> stacked = stackScanOutput(run.scanOutputs[k], 0, bodyOutput);
      if (stacked.ok() && length < maxLength) {
        // Steps past this batch entry's length are padding; they are zero here (ONNX leaves them undefined).
        std::vector<int64_t> padSizes = stacked->sizes();
        padSizes[0] = maxLength - length;
        stacked = concatAlongAxis({*stacked, Tensor(stacked->dtype(), padSizes)}, 0);
      }
      if (!stacked.ok()) return withContext(stacked.status(), fmt::format("scan output {} of batch {}", k, b));
      scanOutputs[k].push_back(std::move(stacked).value());
    }
  }
  for (size_t s = 0; s < numStates; ++s) {
    Expected<Tensor> stacked = stackScanOutput(finalStates[s], 0, *body.outputs()[s]);
    if (!stacked.ok()) return withContext(stacked.status(), fmt::format("final state {}", s));
    ctx.setOutput(s, std::move(stacked).value());
  }
  for (size_t k = 0; k < numScanOutputs; ++k) {
    Expected<Tensor> stacked = stackScanOutput(scanOutputs[k], 0, *body.outputs()[numStates + k]);
    if (!stacked.ok()) return withContext(stacked.status(), fmt::format("scan output {}", k));
    ctx.setOutput(numStates + k, std::move(stacked).value());
  }
  return Status::success();
}

/// The trip count input M of Loop, or nullopt when omitted.
Expected<std::optional<int64_t>> readTripCount(const KernelContext &ctx) {
  if (!ctx.hasInput(0)) return std::optional<int64_t>();
  const RuntimeValue &value = ctx.input(0);
  if (!value.isTensor() || !isInteger(value.tensor().dtype()) || value.tensor().numel() != 1) {
    return makeError(ErrorCode::TypeMismatch, "Loop trip count M must be an integer tensor of one element; got {}",
                     value.describe());
  }
  return std::optional<int64_t>(value.tensor().scalarAsInt64());
}

}  // namespace

Status refIf(KernelContext &ctx) {
  if (!ctx.hasInput(0)) return makeError(ErrorCode::InvalidModel, "If needs its condition input");
  TESSEL_ASSIGN_OR_RETURN(bool cond, readCondition(ctx.input(0), "the If condition"));
  const char *branchName = cond ? "then_branch" : "else_branch";
  const Graph *branch = ctx.node().attrGraph(branchName);
  if (!branch) return makeError(ErrorCode::InvalidModel, "If needs the graph attribute '{}'", branchName);
  if (branch->outputs().size() != ctx.numOutputs()) {
    return makeError(ErrorCode::InvalidModel, "If {} returns {} values; the node has {} outputs", branchName,
                     branch->outputs().size(), ctx.numOutputs());
  }
  TESSEL_ASSIGN_OR_RETURN(std::vector<RuntimeValue> results, ctx.runSubgraph(*branch, {}));
  for (size_t i = 0; i < results.size(); ++i) ctx.setOutput(i, std::move(results[i]));
  return Status::success();
}

/// Loop. The body's condition output decides whether another iteration runs even when the node
/// has no condition input; the ONNX table calls it "ignored" there, but ONNX Runtime and ONNX's
/// own reference both honour it, and models are validated against them.
Status refLoop(KernelContext &ctx) {
  const Graph *body = ctx.node().attrGraph("body");
  if (!body) return makeError(ErrorCode::InvalidModel, "Loop needs the graph attribute 'body'");
  if (ctx.numInputs() < 2) {
    return makeError(ErrorCode::InvalidModel, "Loop has {} inputs; expected M, cond and loop-carried values",
                     ctx.numInputs());
  }
  const size_t numCarried = ctx.numInputs() - 2;
  TESSEL_RETURN_IF_ERROR(checkBodyArity(ctx, *body, numCarried + 2, numCarried + 1, /*leadingOutputs=*/1));
  const size_t numScanOutputs = body->outputs().size() - 1 - numCarried;

  TESSEL_ASSIGN_OR_RETURN(std::optional<int64_t> tripCount, readTripCount(ctx));
  bool cond = true;
  if (ctx.hasInput(1)) {
    TESSEL_ASSIGN_OR_RETURN(cond, readCondition(ctx.input(1), "the Loop condition"));
  }
  if (tripCount && *tripCount > kMaxTripCount && !ctx.hasInput(1)) {
    return makeError(ErrorCode::InvalidArgument, "Loop trip count M = {} exceeds the limit of {} iterations and "
                     "there is no condition input to end it sooner", *tripCount, kMaxTripCount);
  }

  std::vector<RuntimeValue> carried;
  for (size_t i = 0; i < numCarried; ++i) carried.push_back(ctx.hasInput(2 + i) ? ctx.input(2 + i) : RuntimeValue());
  std::vector<std::vector<Tensor>> scanParts(numScanOutputs);
  for (int64_t i = 0; (!tripCount || i < *tripCount) && cond; ++i) {
    if (tripCount && i >= kMaxTripCount) {
      return makeError(ErrorCode::RuntimeError, "Loop ran {} iterations (trip count M = {}) and its condition is "
                       "still true", kMaxTripCount, *tripCount);
    }
    std::vector<RuntimeValue> inputs = {Tensor::scalar<int64_t>(i), Tensor::scalar<bool>(cond)};
    inputs.insert(inputs.end(), carried.begin(), carried.end());
    TESSEL_ASSIGN_OR_RETURN(std::vector<RuntimeValue> results, ctx.runSubgraph(*body, std::move(inputs)));
    TESSEL_ASSIGN_OR_RETURN(cond, readCondition(results[0], "the condition output of the Loop body"));
    for (size_t c = 0; c < numCarried; ++c) carried[c] = std::move(results[1 + c]);
    for (size_t k = 0; k < numScanOutputs; ++k) {
      RuntimeValue &element = results[1 + numCarried + k];
      if (!element.isTensor()) {
        return makeError(ErrorCode::TypeMismatch, "scan output {} of the Loop body must be a tensor; got {}", k,
                         element.describe());
      }
      scanParts[k].push_back(std::move(element.tensor()));
    }
  }

  for (size_t c = 0; c < numCarried && c < ctx.numOutputs(); ++c) ctx.setOutput(c, std::move(carried[c]));
  for (size_t k = 0; k < numScanOutputs && numCarried + k < ctx.numOutputs(); ++k) {
    if (!ctx.wantsOutput(numCarried + k)) continue;
    Expected<Tensor> stacked = stackScanOutput(scanParts[k], 0, *body->outputs()[1 + numCarried + k]);
    if (!stacked.ok()) return withContext(stacked.status(), fmt::format("Loop scan output {}", k));
    ctx.setOutput(numCarried + k, std::move(stacked).value());
  }
  return Status::success();
}

Status refScan(KernelContext &ctx) {
  const Graph *body = ctx.node().attrGraph("body");
  if (!body) return makeError(ErrorCode::InvalidModel, "Scan needs the graph attribute 'body'");
  const int64_t numScanInputs = ctx.node().attrInt("num_scan_inputs", 0);
  if (numScanInputs < 1 || static_cast<size_t>(numScanInputs) > ctx.numInputs()) {
    return makeError(ErrorCode::InvalidModel, "Scan num_scan_inputs is {}; expected 1 to {}", numScanInputs,
                     ctx.numInputs());
  }
  if (ctx.opset() < 9) return scanBatched(ctx, *body, static_cast<size_t>(numScanInputs));
  return scanWithAxes(ctx, *body, static_cast<size_t>(numScanInputs));
}

}  // namespace tessel::ref
