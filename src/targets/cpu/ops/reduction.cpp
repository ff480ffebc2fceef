// cpu lowering of ReduceSum, ReduceMean, ReduceMax and ReduceMin to kernels/reduction.h. The axes
// come from the `axes` attribute or, ReduceSum-13 and opset-18 style, a constant second input;
// keepdims only changes the output's sizes, not its memory. After dropping size-1 dims and merging
// neighbours, a reduction whose reduced dims form one run is [outer, length, inner] over the middle
// (innermost axes: inner = 1; outermost: outer = 1). Covered: f32; several separate runs of reduced
// axes, or axes that only arrive at run time, go to the reference kernel.
#include "targets/cpu/kernels/reduction.h"

#include <fmt/format.h>

#include "targets/cpu/step.h"

namespace tessel::cpu {
namespace {

/// What a lowering returns for a node its kernels do not cover: the reference kernel runs it.
Expected<std::unique_ptr<Step>> notCovered() { return std::unique_ptr<Step>(); }

class ReduceStep final : public Step {
 public:
  ReduceStep(ReduceKind kind, int64_t outer, int64_t length, int64_t inner)
      : kind_(kind), outer_(outer), length_(length), inner_(inner) {}
  Status run(const StepIo &io) const override {
    runReduce(reductionKernels(), kind_, static_cast<const float *>(io.inputs[0]), static_cast<float *>(io.outputs[0]),
              outer_, length_, inner_, io.pool);
    return Status::success();
  }
  std::string kernelName() const override {
    return fmt::format("reduce_{} {}", inner_ == 1 ? "rows" : "columns", reductionKernels().name);
  }

 private:
  ReduceKind kind_;
  int64_t outer_, length_, inner_;
};

Expected<std::unique_ptr<Step>> lowerReduce(LowerContext &ctx, ReduceKind kind) {
  const Node &node = ctx.node();
  if (!ctx.hasInput(0) || ctx.inputDType(0) != DType::Float32 || ctx.outputDType(0) != DType::Float32)
    return notCovered();
  std::vector<int64_t> axes;
  if (ctx.numInputs() >= 2 && ctx.hasInput(1)) {
    const Tensor *constant = ctx.constantInput(1);
    if (constant == nullptr) return notCovered();
    axes = constant->toInt64Vector();
  } else {
    axes = node.attrInts("axes", {});
  }
  const bool noopWithEmptyAxes = node.attrInt("noop_with_empty_axes", 0) != 0;
  const std::vector<int64_t> sizes = ctx.inputSizes(0);
  const int64_t rank = int64_t(sizes.size());
  std::vector<bool> reduced(sizes.size(), axes.empty() && !noopWithEmptyAxes);
  for (int64_t axis : axes) {
    if (axis < -rank || axis >= rank) {
      return makeError(ErrorCode::InvalidArgument, "{} '{}': axis {} is out of range for an input of rank {}",
                       node.opType(), node.name(), axis, rank);
    }
    const size_t a = size_t(axis < 0 ? axis + rank : axis);
    if (reduced[a]) {
      return makeError(ErrorCode::InvalidArgument, "{} '{}': axes name axis {} twice", node.opType(), node.name(), a);
    }
    reduced[a] = true;
  }
  // Runs of reduced and kept dims, size-1 dims dropped (they sit on either side of a run).
  std::vector<std::pair<bool, int64_t>> runs;
  for (size_t d = 0; d < sizes.size(); ++d) {
    if (sizes[d] == 1) continue;
    if (!runs.empty() && runs.back().first == reduced[d]) {
      runs.back().second *= sizes[d];
    } else {
      runs.emplace_back(reduced[d], sizes[d]);
    }
  }
  int64_t outer = 1, length = 1, inner = 1;
  int reducedRuns = 0;
  for (const auto &[isReduced, size] : runs) {
    if (isReduced) {
      ++reducedRuns;
      length = size;
    } else if (reducedRuns == 0) {
      outer *= size;
    } else {
      inner *= size;
    }
  }
  if (reducedRuns > 1) return notCovered();
  return std::unique_ptr<Step>(std::make_unique<ReduceStep>(kind, outer, length, inner));
}

}  // namespace

Expected<std::unique_ptr<Step>> lowerReduceSum(LowerContext &ctx) { return lowerReduce(ctx, ReduceKind::Sum); }
Expected<std::unique_ptr<Step>> lowerReduceMean(LowerContext &ctx) { return lowerReduce(ctx, ReduceKind::Mean); }
Expected<std::unique_ptr<Step>> lowerReduceMax(LowerContext &ctx) { return lowerReduce(ctx, ReduceKind::Max); }
Expected<std::unique_ptr<Step>> lowerReduceMin(LowerContext &ctx) { return lowerReduce(ctx, ReduceKind::Min); }

}  // namespace tessel::cpu
