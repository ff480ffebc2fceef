// cpu lowering of ConvTranspose to the GEMM + col2im kernel (kernels/conv_transpose.h), with the
// weights packed once. The geometry (pads, output_padding, output_shape, auto_pad) comes from the
// reference kernel's reader, so both targets agree on the output sizes. Covered: f32, 1-D and 2-D,
// constant W; anything else runs the reference kernel.
#include <cstring>

#include <fmt/format.h>

#include "ops/reference/nn_common.h"
#include "targets/cpu/ops/conv_geometry.h"
#include "targets/cpu/kernels/conv_transpose.h"
#include "targets/cpu/step.h"

namespace tessel::cpu {
namespace {

constexpr size_t kInputX = 0, kInputW = 1, kInputB = 2;

std::string formatSizes(const std::vector<int64_t> &sizes) { return fmt::format("[{}]", fmt::join(sizes, ",")); }

class ConvTransposeStep final : public Step {
 public:
  ConvTransposeStep(const ConvTransposePlan &plan, const float *packedWeights, const float *bias)
      : plan_(plan), packedWeights_(packedWeights), bias_(bias) {}

  Status run(const StepIo &io) const override {
    convTranspose(plan_, static_cast<const float *>(io.inputs[kInputX]), packedWeights_, bias_,
                  static_cast<float *>(io.outputs[0]), static_cast<std::byte *>(io.scratch), io.pool);
    return Status::success();
  }
  size_t scratchBytes() const override { return convTransposeScratchBytes(plan_); }
  std::string kernelName() const override { return convTransposeKernelName(plan_); }

 private:
  ConvTransposePlan plan_;
  const float *packedWeights_;
  const float *bias_;
};

/// Reads and checks the node's geometry (a 1-D ConvTranspose gets height 1).
Expected<Conv2dShape> readShape(LowerContext &ctx) {
  const std::vector<int64_t> x = ctx.inputSizes(kInputX), w = ctx.inputSizes(kInputW);
  if (w.size() != x.size()) {
    return makeError(ErrorCode::ShapeMismatch, "ConvTranspose: W has shape {}; expected rank {} like X {}",
                     formatSizes(w), x.size(), formatSizes(x));
  }
  Conv2dShape s;
  s.batch = x[0];
  s.inChannels = x[1];
  s.group = ctx.node().attrInt("group", 1);
  if (s.group <= 0 || s.inChannels % s.group != 0 || w[0] != s.inChannels) {
    return makeError(ErrorCode::ShapeMismatch, "ConvTranspose: W has shape {}; expected [{}, M/group, k...] for X {}",
                     formatSizes(w), s.inChannels, formatSizes(x));
  }
  s.outChannels = w[1] * s.group;
  const std::vector<int64_t> inSpatial(x.begin() + 2, x.end()), weightSpatial(w.begin() + 2, w.end());
  auto kernel = ref::readKernelShape(ctx.node(), inSpatial.size(), weightSpatial);
  if (!kernel.ok()) return makeError(kernel.diag().code, "ConvTranspose: {}", kernel.diag().message);
  auto window = ref::transposedWindow(ctx.node(), inSpatial, *kernel);
  if (!window.ok()) return makeError(window.diag().code, "ConvTranspose: {}", window.diag().message);
  const ref::WindowGeometry &g = *window;
  std::vector<int64_t> expectedOut = {s.batch, s.outChannels};
  expectedOut.insert(expectedOut.end(), g.outSizes.begin(), g.outSizes.end());
  if (ctx.outputSizes(0) != expectedOut) {
    return makeError(ErrorCode::ShapeMismatch, "ConvTranspose: output is {}; X, W and the attributes give {}",
                     formatSizes(ctx.outputSizes(0)), formatSizes(expectedOut));
  }
  setSpatialSizes(g, s);
  return s;
}

}  // namespace

Expected<std::unique_ptr<Step>> lowerConvTranspose(LowerContext &ctx) {
  if (ctx.numInputs() < 2 || !ctx.hasInput(kInputX) || !ctx.hasInput(kInputW)) {
    return makeError(ErrorCode::InvalidModel, "ConvTranspose: needs inputs X and W; got {} inputs", ctx.numInputs());
  }
  for (size_t i = 0; i < ctx.numInputs(); ++i) {
    if (ctx.hasInput(i) && ctx.inputDType(i) != DType::Float32) return std::unique_ptr<Step>();
  }
  const size_t rank = ctx.inputSizes(kInputX).size();
  const bool hasBias = ctx.numInputs() > kInputB && ctx.hasInput(kInputB);
  // 3-D, run-time weights or bias, and empty tensors are left to the reference kernel.
  if (ctx.outputDType(0) != DType::Float32 || rank < 3 || rank > 4 || ctx.constantInput(kInputW) == nullptr ||
      (hasBias && ctx.constantInput(kInputB) == nullptr)) {
    return std::unique_ptr<Step>();
  }
  TESSEL_ASSIGN_OR_RETURN(Conv2dShape shape, readShape(ctx));
  if (shape.batch == 0 || shape.inChannels == 0 || shape.outChannels == 0 || shape.inPlane() == 0 ||
      shape.outPlane() == 0) {
    return std::unique_ptr<Step>();
  }
  const float *bias = nullptr;
  if (hasBias) {
    if (ctx.inputSizes(kInputB) != std::vector<int64_t>{shape.outChannels}) {
      return makeError(ErrorCode::ShapeMismatch, "ConvTranspose: B has shape {}; expected [{}]",
                       formatSizes(ctx.inputSizes(kInputB)), shape.outChannels);
    }
    const Tensor *b = ctx.constantInput(kInputB);
    TESSEL_ASSIGN_OR_RETURN(const std::byte *bytes,
                            ctx.packed("bias", size_t(shape.outChannels) * sizeof(float), [&](std::byte *dst) {
                              std::memcpy(dst, b->data<float>(), size_t(shape.outChannels) * sizeof(float));
                            }));
    ctx.releaseConstantInput(kInputB);
    bias = reinterpret_cast<const float *>(bytes);
  }
  const ConvTransposePlan plan = planConvTranspose(shape, ctx.threads());
  const Tensor *w = ctx.constantInput(kInputW);
  TESSEL_ASSIGN_OR_RETURN(const std::byte *packed,
                          ctx.packed(std::string("weights_packed_a.") + plan.kernel->name,
                                     convTransposePackedWeightsBytes(plan), [&](std::byte *dst) {
                                       packConvTransposeWeights(plan, w->data<float>(), reinterpret_cast<float *>(dst));
                                     }));
  ctx.releaseConstantInput(kInputW);
  return std::unique_ptr<Step>(
      std::make_unique<ConvTransposeStep>(plan, reinterpret_cast<const float *>(packed), bias));
}

}  // namespace tessel::cpu
