// cpu lowering of Softmax, LogSoftmax, LayerNormalization (ONNX opset 17 and the tessel op) and
// tessel RMSNormalization to kernels/softmax.h and kernels/layer_norm.h. Softmax follows the
// reference's two views: from opset 13 one axis ([outer, length, inner]); before, the input coerced
// to 2-D at `axis` (rows of prod(shape[axis:])). The two normalizations cover f32 with Scale (and
// B) spanning exactly the normalized dims (leading 1s allowed) and, for LayerNormalization, only
// output Y in use; otherwise the reference runs.
#include <fmt/format.h>

#include "targets/cpu/kernels/layer_norm.h"
#include "targets/cpu/kernels/softmax.h"
#include "targets/cpu/step.h"

namespace tessel::cpu {
namespace {

/// What a lowering returns for a node its kernels do not cover: the reference kernel runs it.
Expected<std::unique_ptr<Step>> notCovered() { return std::unique_ptr<Step>(); }

int64_t productOf(const std::vector<int64_t> &sizes, size_t begin, size_t end) {
  int64_t n = 1;
  for (size_t d = begin; d < end; ++d) n *= sizes[d];
  return n;
}

/// `axis` in [-rank, rank) made non-negative, or an error naming the node.
Expected<int64_t> normalizedAxis(const LowerContext &ctx, int64_t axis, int64_t rank) {
  if (axis < -rank || axis >= rank) {
    return makeError(ErrorCode::InvalidArgument, "{} '{}': axis {} is out of range for an input of rank {}",
                     ctx.node().opType(), ctx.node().name(), axis, rank);
  }
  return axis < 0 ? axis + rank : axis;
}

class SoftmaxStep final : public Step {
 public:
  SoftmaxStep(int64_t outer, int64_t length, int64_t inner, bool log)
      : outer_(outer), length_(length), inner_(inner), log_(log) {}
  Status run(const StepIo &io) const override {
    runSoftmax(softmaxKernels(), static_cast<const float *>(io.inputs[0]), static_cast<float *>(io.outputs[0]), outer_,
               length_, inner_, log_, io.pool);
    return Status::success();
  }
  int inPlaceInput() const override { return 0; }
  std::string kernelName() const override {
    return fmt::format("{}_{} {}", log_ ? "log_softmax" : "softmax", inner_ == 1 ? "rows" : "columns",
                       softmaxKernels().name);
  }

 private:
  int64_t outer_, length_, inner_;
  bool log_;
};

class LayerNormStep final : public Step {
 public:
  LayerNormStep(int64_t rows, int64_t n, float epsilon, bool hasBias)
      : rows_(rows), n_(n), epsilon_(epsilon), hasBias_(hasBias) {}
  Status run(const StepIo &io) const override {
    const float *bias = hasBias_ ? static_cast<const float *>(io.inputs[2]) : nullptr;
    runLayerNorm(layerNormKernels(), static_cast<const float *>(io.inputs[0]), static_cast<const float *>(io.inputs[1]),
                 bias, static_cast<float *>(io.outputs[0]), rows_, n_, epsilon_, io.pool);
    return Status::success();
  }
  int inPlaceInput() const override { return 0; }
  std::string kernelName() const override { return std::string("layer_norm_rows ") + layerNormKernels().name; }

 private:
  int64_t rows_, n_;
  float epsilon_;
  bool hasBias_;
};

class RmsNormStep final : public Step {
 public:
  RmsNormStep(int64_t rows, int64_t n, float epsilon) : rows_(rows), n_(n), epsilon_(epsilon) {}
  Status run(const StepIo &io) const override {
    runRmsNorm(layerNormKernels(), static_cast<const float *>(io.inputs[0]), static_cast<const float *>(io.inputs[1]),
               static_cast<float *>(io.outputs[0]), rows_, n_, epsilon_, io.pool);
    return Status::success();
  }
  int inPlaceInput() const override { return 0; }
  std::string kernelName() const override { return std::string("rms_norm_rows ") + layerNormKernels().name; }

 private:
  int64_t rows_, n_;
  float epsilon_;
};

Expected<std::unique_ptr<Step>> lowerSoftmaxFamily(LowerContext &ctx, bool log) {
  if (!ctx.hasInput(0) || ctx.inputDType(0) != DType::Float32 || ctx.outputDType(0) != DType::Float32)
    return notCovered();
  const std::vector<int64_t> sizes = ctx.inputSizes(0);
  const int64_t rank = int64_t(sizes.size());
  const bool coerceTo2D = ctx.opset() < 13;
  if (rank == 0) return notCovered();
  TESSEL_ASSIGN_OR_RETURN(int64_t axis, normalizedAxis(ctx, ctx.node().attrInt("axis", coerceTo2D ? 1 : -1), rank));
  const size_t a = size_t(axis);
  const int64_t outer = productOf(sizes, 0, a);
  const int64_t length = coerceTo2D ? productOf(sizes, a, sizes.size()) : sizes[a];
  const int64_t inner = coerceTo2D ? 1 : productOf(sizes, a + 1, sizes.size());
  return std::unique_ptr<Step>(std::make_unique<SoftmaxStep>(outer, length, inner, log));
}

/// True when a Scale or B of `sizes` holds exactly the normalized dims of X (X's sizes from
/// `axis` on), with any leading dims 1: then element i of a row pairs with element i of it.
bool spansNormalizedDims(const std::vector<int64_t> &sizes, const std::vector<int64_t> &xSizes, size_t axis) {
  if (sizes.size() > xSizes.size()) return false;
  const size_t offset = xSizes.size() - sizes.size();
  for (size_t d = 0; d < sizes.size(); ++d) {
    const size_t xd = offset + d;
    if (xd < axis ? sizes[d] != 1 : sizes[d] != xSizes[xd]) return false;
  }
  return true;
}

/// True when `value` is read by a node or returned by its graph.
bool isUsed(const Value *value) {
  if (value == nullptr) return false;
  if (!value->uses().empty()) return true;
  const Graph *graph = value->graph();
  if (graph == nullptr) return false;
  for (const Value *output : graph->outputs()) {
    if (output == value) return true;
  }
  return false;
}

}  // namespace

Expected<std::unique_ptr<Step>> lowerSoftmax(LowerContext &ctx) { return lowerSoftmaxFamily(ctx, /*log=*/false); }

Expected<std::unique_ptr<Step>> lowerLogSoftmax(LowerContext &ctx) { return lowerSoftmaxFamily(ctx, /*log=*/true); }

Expected<std::unique_ptr<Step>> lowerLayerNormalization(LowerContext &ctx) {
  const Node &node = ctx.node();
  if (!ctx.hasInput(0) || !ctx.hasInput(1)) {
    return makeError(ErrorCode::InvalidModel, "LayerNormalization '{}' needs inputs X and Scale", node.name());
  }
  // Mean and InvStdDev are the reference's job.
  if (isUsed(node.output(1)) || isUsed(node.output(2))) return notCovered();
  const bool hasBias = ctx.numInputs() > 2 && ctx.hasInput(2);
  for (size_t i = 0; i < (hasBias ? 3u : 2u); ++i) {
    if (ctx.inputDType(i) != DType::Float32) return notCovered();
  }
  if (ctx.outputDType(0) != DType::Float32) return notCovered();
  const std::vector<int64_t> sizes = ctx.inputSizes(0);
  const int64_t rank = int64_t(sizes.size());
  if (rank == 0) return notCovered();
  TESSEL_ASSIGN_OR_RETURN(int64_t axis, normalizedAxis(ctx, node.attrInt("axis", -1), rank));
  if (!spansNormalizedDims(ctx.inputSizes(1), sizes, size_t(axis))) return notCovered();
  if (hasBias && !spansNormalizedDims(ctx.inputSizes(2), sizes, size_t(axis))) return notCovered();
  const int64_t rows = productOf(sizes, 0, size_t(axis));
  const int64_t n = productOf(sizes, size_t(axis), sizes.size());
  const float epsilon = node.attrFloat("epsilon", 1e-5f);
  return std::unique_ptr<Step>(std::make_unique<LayerNormStep>(rows, n, epsilon, hasBias));
}

Expected<std::unique_ptr<Step>> lowerRmsNormalization(LowerContext &ctx) {
  const Node &node = ctx.node();
  if (!ctx.hasInput(0) || !ctx.hasInput(1)) {
    return makeError(ErrorCode::InvalidModel, "RMSNormalization '{}' needs inputs X and Scale", node.name());
  }
  if (ctx.inputDType(0) != DType::Float32 || ctx.inputDType(1) != DType::Float32 ||
      ctx.outputDType(0) != DType::Float32) {
    return notCovered();
  }
  const std::vector<int64_t> sizes = ctx.inputSizes(0);
  const int64_t rank = int64_t(sizes.size());
  if (rank == 0) return notCovered();
  TESSEL_ASSIGN_OR_RETURN(int64_t axis, normalizedAxis(ctx, node.attrInt("axis", -1), rank));
  if (!spansNormalizedDims(ctx.inputSizes(1), sizes, size_t(axis))) return notCovered();
  return std::unique_ptr<Step>(std::make_unique<RmsNormStep>(productOf(sizes, 0, size_t(axis)),
                                                             productOf(sizes, size_t(axis), sizes.size()),
                                                             node.attrFloat("epsilon", 1e-5f)));
}

}  // namespace tessel::cpu
