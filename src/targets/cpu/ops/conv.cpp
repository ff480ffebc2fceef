// cpu lowering of Conv and tessel FusedConv (docs/cpu.md: Y = act(Conv(X, W, B) + Z)) to the
// convolution kernels: a depthwise conv gets the direct kernel (kernels/depthwise_conv.h), any
// other the im2col/1x1 GEMM with its weights packed once as the GEMM's A (kernels/conv.h); a
// channels-last FusedConv (assign-layout) gets the implicit GEMM with the weights packed as B
// (kernels/conv_nhwc.h). The
// window geometry comes from the reference kernels' reader, so both targets agree on auto_pad and
// output sizes. Covered: f32, 1-D and 2-D, constant W; anything else runs the reference kernel.
#include <cstring>

#include <fmt/format.h>

#include "ops/reference/nn_common.h"
#include "targets/cpu/ops/conv_geometry.h"
#include "targets/cpu/kernels/conv.h"
#include "targets/cpu/kernels/conv_nhwc.h"
#include "targets/cpu/kernels/depthwise_conv.h"
#include "targets/cpu/step.h"

namespace tessel::cpu {
namespace {

constexpr size_t kInputX = 0, kInputW = 1, kInputB = 2, kInputZ = 3;

std::string formatSizes(const std::vector<int64_t> &sizes) { return fmt::format("[{}]", fmt::join(sizes, ",")); }

/// Where the epilogue's operands come from when the step runs.
struct EpilogueSources {
  const float *constantBias = nullptr;  // Packed at lowering, or null.
  bool runtimeBias = false;             // B is not constant: read it from the step's inputs.
  bool residual = false;                // Z is present.
  Activation activation;

  ConvEpilogue resolve(const StepIo &io) const {
    ConvEpilogue epilogue;
    epilogue.bias = constantBias != nullptr ? constantBias
                    : runtimeBias           ? static_cast<const float *>(io.inputs[kInputB])
                                            : nullptr;
    epilogue.residual = residual ? static_cast<const float *>(io.inputs[kInputZ]) : nullptr;
    epilogue.activation = activation;
    return epilogue;
  }
};

class ConvGemmStep final : public Step {
 public:
  ConvGemmStep(const ConvGemmPlan &plan, const float *packedWeights, const EpilogueSources &epilogue)
      : plan_(plan), packedWeights_(packedWeights), epilogue_(epilogue) {}

  Status run(const StepIo &io) const override {
    convGemm(plan_, static_cast<const float *>(io.inputs[kInputX]), packedWeights_, epilogue_.resolve(io),
             static_cast<float *>(io.outputs[0]), static_cast<std::byte *>(io.scratch), io.pool);
    return Status::success();
  }
  size_t scratchBytes() const override { return convGemmScratchBytes(plan_); }
  // The epilogue reads each residual element just before writing the same output element.
  int inPlaceInput() const override { return epilogue_.residual ? int(kInputZ) : -1; }
  std::string kernelName() const override { return convGemmKernelName(plan_); }

 private:
  ConvGemmPlan plan_;
  const float *packedWeights_;
  EpilogueSources epilogue_;
};

class DepthwiseConvStep final : public Step {
 public:
  DepthwiseConvStep(const Conv2dShape &shape, const float *weights, const EpilogueSources &epilogue)
      : shape_(shape), weights_(weights), epilogue_(epilogue) {}

  Status run(const StepIo &io) const override {
    depthwiseConv2d(shape_, static_cast<const float *>(io.inputs[kInputX]), weights_, epilogue_.resolve(io),
                    static_cast<float *>(io.outputs[0]), io.pool);
    return Status::success();
  }
  int inPlaceInput() const override { return epilogue_.residual ? int(kInputZ) : -1; }
  std::string kernelName() const override { return depthwiseConvKernelName(); }

 private:
  Conv2dShape shape_;
  const float *weights_;
  EpilogueSources epilogue_;
};

class ConvNhwcStep final : public Step {
 public:
  ConvNhwcStep(const ConvNhwcPlan &plan, const float *packedWeights, const EpilogueSources &epilogue)
      : plan_(plan), packedWeights_(packedWeights), epilogue_(epilogue) {}

  Status run(const StepIo &io) const override {
    convNhwc(plan_, static_cast<const float *>(io.inputs[kInputX]), packedWeights_, epilogue_.resolve(io),
             static_cast<float *>(io.outputs[0]), static_cast<std::byte *>(io.scratch), io.pool);
    return Status::success();
  }
  size_t scratchBytes() const override { return convNhwcScratchBytes(plan_); }
  int inPlaceInput() const override { return epilogue_.residual ? int(kInputZ) : -1; }
  std::string kernelName() const override { return convNhwcKernelName(plan_); }

 private:
  ConvNhwcPlan plan_;
  const float *packedWeights_;
  EpilogueSources epilogue_;
};

class DepthwiseNhwcStep final : public Step {
 public:
  DepthwiseNhwcStep(const Conv2dShape &shape, const float *packedWeights, const EpilogueSources &epilogue)
      : shape_(shape), packedWeights_(packedWeights), epilogue_(epilogue) {}

  Status run(const StepIo &io) const override {
    depthwiseConv2dNhwc(shape_, static_cast<const float *>(io.inputs[kInputX]), packedWeights_, epilogue_.resolve(io),
                        static_cast<float *>(io.outputs[0]), io.pool);
    return Status::success();
  }
  int inPlaceInput() const override { return epilogue_.residual ? int(kInputZ) : -1; }
  std::string kernelName() const override { return depthwiseConvNhwcKernelName(); }

 private:
  Conv2dShape shape_;
  const float *packedWeights_;
  EpilogueSources epilogue_;
};

/// Reads and checks the node's geometry into a 2-D shape (a 1-D conv gets height 1). X and Y are
/// [N, C, spatial...], or [N, H, W, C] when `channelsLast`.
Expected<Conv2dShape> readShape(LowerContext &ctx, bool channelsLast) {
  const std::string &op = ctx.node().opType();
  const std::vector<int64_t> x = ctx.inputSizes(kInputX), w = ctx.inputSizes(kInputW);
  if (x.size() < 3) {
    return makeError(ErrorCode::ShapeMismatch, "{}: X has shape {}; expected [N, C, spatial...]", op, formatSizes(x));
  }
  if (channelsLast && x.size() != 4) {
    return makeError(ErrorCode::ShapeMismatch, "{}: X has shape {}; channels_last expects [N, H, W, C]", op,
                     formatSizes(x));
  }
  if (w.size() != x.size()) {
    return makeError(ErrorCode::ShapeMismatch, "{}: W has shape {}; expected rank {} like X {}", op, formatSizes(w),
                     x.size(), formatSizes(x));
  }
  const size_t channelAxis = channelsLast ? 3 : 1;
  const size_t firstSpatial = channelsLast ? 1 : 2;
  Conv2dShape s;
  s.batch = x[0];
  s.inChannels = x[channelAxis];
  s.outChannels = w[0];
  s.group = ctx.node().attrInt("group", 1);
  if (s.group <= 0 || s.inChannels % s.group != 0 || s.outChannels % s.group != 0) {
    return makeError(ErrorCode::ShapeMismatch, "{}: group {} does not divide X's {} channels and W's {} filters", op,
                     s.group, s.inChannels, s.outChannels);
  }
  if (w[1] != s.inChannels / s.group) {
    return makeError(ErrorCode::ShapeMismatch, "{}: W has shape {}; expected {} (channels {} / group {}) in dim 1",
                     op, formatSizes(w), s.inChannels / s.group, s.inChannels, s.group);
  }
  const std::vector<int64_t> inSpatial(x.begin() + firstSpatial, x.begin() + firstSpatial + (x.size() - 2));
  const std::vector<int64_t> weightSpatial(w.begin() + 2, w.end());
  auto kernel = ref::readKernelShape(ctx.node(), inSpatial.size(), weightSpatial);
  if (!kernel.ok()) return makeError(kernel.diag().code, "{}: {}", op, kernel.diag().message);
  auto window = ref::forwardWindow(ctx.node(), inSpatial, *kernel, /*ceilMode=*/false);
  if (!window.ok()) return makeError(window.diag().code, "{}: {}", op, window.diag().message);
  const ref::WindowGeometry &g = *window;

  std::vector<int64_t> expectedOut = {s.batch};
  if (!channelsLast) expectedOut.push_back(s.outChannels);
  expectedOut.insert(expectedOut.end(), g.outSizes.begin(), g.outSizes.end());
  if (channelsLast) expectedOut.push_back(s.outChannels);
  if (ctx.outputSizes(0) != expectedOut) {
    return makeError(ErrorCode::ShapeMismatch, "{}: output is {}; X, W and the attributes give {}", op,
                     formatSizes(ctx.outputSizes(0)), formatSizes(expectedOut));
  }
  setSpatialSizes(g, s);
  return s;
}

/// Copies constant input `index` (`count` floats) into the plan's constants under `key`.
Expected<const float *> copyConstant(LowerContext &ctx, size_t index, std::string_view key, int64_t count) {
  const Tensor *tensor = ctx.constantInput(index);
  TESSEL_ASSIGN_OR_RETURN(const std::byte *bytes,
                          ctx.packed(key, size_t(count) * sizeof(float), [&](std::byte *dst) {
                            std::memcpy(dst, tensor->data<float>(), size_t(count) * sizeof(float));
                          }));
  ctx.releaseConstantInput(index);
  return reinterpret_cast<const float *>(bytes);
}

/// A channels-last FusedConv: the depthwise kernel, the implicit GEMM, or the reference kernel for
/// other grouped convs (which assign-layout leaves channels-first).
Expected<std::unique_ptr<Step>> lowerChannelsLast(LowerContext &ctx, const Conv2dShape &shape,
                                                  const EpilogueSources &epilogue) {
  if (isDepthwiseNhwc(shape)) {
    const Tensor *w = ctx.constantInput(kInputW);
    TESSEL_ASSIGN_OR_RETURN(const std::byte *packed,
                            ctx.packed("depthwise_weights_nhwc", depthwiseNhwcWeightsBytes(shape), [&](std::byte *dst) {
                              packDepthwiseWeightsNhwc(shape, w->data<float>(), reinterpret_cast<float *>(dst));
                            }));
    ctx.releaseConstantInput(kInputW);
    return std::unique_ptr<Step>(
        std::make_unique<DepthwiseNhwcStep>(shape, reinterpret_cast<const float *>(packed), epilogue));
  }
  if (!runsConvNhwc(shape)) return std::unique_ptr<Step>();
  const int64_t pixels = shape.batch * shape.outHeight * shape.outWidth;  // The GEMM's rows.
  const GemmKernel &kernel = ctx.gemmKernel(pixels, [&](const GemmKernel &candidate) {
    return convNhwcTakesPacked(shape, candidate.kPack);
  });
  const ConvNhwcPlan plan = planConvNhwc(shape, ctx.threads(), kernel);
  const Tensor *w = ctx.constantInput(kInputW);
  TESSEL_ASSIGN_OR_RETURN(const std::byte *packed,
                          ctx.packed(std::string("weights_nhwc_packed_b.") + plan.kernel->name,
                                     convNhwcPackedWeightsBytes(plan), [&](std::byte *dst) {
                                       packConvNhwcWeights(plan, w->data<float>(), reinterpret_cast<float *>(dst));
                                     }));
  ctx.releaseConstantInput(kInputW);
  return std::unique_ptr<Step>(std::make_unique<ConvNhwcStep>(plan, reinterpret_cast<const float *>(packed), epilogue));
}

Expected<std::unique_ptr<Step>> lowerConvolution(LowerContext &ctx, bool fused) {
  const std::string &op = ctx.node().opType();
  if (ctx.numInputs() < 2 || !ctx.hasInput(kInputX) || !ctx.hasInput(kInputW)) {
    return makeError(ErrorCode::InvalidModel, "{}: needs inputs X and W; got {} inputs", op, ctx.numInputs());
  }
  const bool hasBias = ctx.numInputs() > kInputB && ctx.hasInput(kInputB);
  const bool hasResidual = fused && ctx.numInputs() > kInputZ && ctx.hasInput(kInputZ);
  for (size_t i = 0; i < ctx.numInputs(); ++i) {
    if (ctx.hasInput(i) && ctx.inputDType(i) != DType::Float32) return std::unique_ptr<Step>();
  }
  if (ctx.outputDType(0) != DType::Float32) return std::unique_ptr<Step>();
  const bool channelsLast = fused && ctx.node().attrInt("channels_last", 0) != 0;
  const size_t rank = ctx.inputSizes(kInputX).size();
  // 3-D convolutions, and weights only known at run time, are left to the reference kernel.
  if (rank > 4 || ctx.constantInput(kInputW) == nullptr) return std::unique_ptr<Step>();

  TESSEL_ASSIGN_OR_RETURN(Conv2dShape shape, readShape(ctx, channelsLast));
  // Empty tensors have nothing to compute; the reference kernel gives their (empty) result.
  if (shape.batch == 0 || shape.inChannels == 0 || shape.outChannels == 0) return std::unique_ptr<Step>();
  EpilogueSources epilogue;
  if (hasBias) {
    const std::vector<int64_t> b = ctx.inputSizes(kInputB);
    if (b != std::vector<int64_t>{shape.outChannels}) {
      return makeError(ErrorCode::ShapeMismatch, "{}: B has shape {}; expected [{}] (W's filters)", op,
                       formatSizes(b), shape.outChannels);
    }
    if (ctx.constantInput(kInputB) != nullptr) {
      TESSEL_ASSIGN_OR_RETURN(epilogue.constantBias, copyConstant(ctx, kInputB, "bias", shape.outChannels));
    } else {
      epilogue.runtimeBias = true;
    }
  }
  if (hasResidual) {
    if (ctx.inputSizes(kInputZ) != ctx.outputSizes(0)) {
      return makeError(ErrorCode::ShapeMismatch, "{}: Z has shape {}; expected Y's shape {}", op,
                       formatSizes(ctx.inputSizes(kInputZ)), formatSizes(ctx.outputSizes(0)));
    }
    epilogue.residual = true;
  }
  if (fused) {
    const std::vector<float> params = ctx.node().attrFloats("activation_params");
    auto activation = parseActivation(ctx.node().attrString("activation", ""), params);
    if (!activation.ok()) return makeError(activation.diag().code, "{}: {}", op, activation.diag().message);
    epilogue.activation = *activation;
  }

  const int64_t weightCount = shape.outChannels * shape.columnRows();
  if (channelsLast) return lowerChannelsLast(ctx, shape, epilogue);
  if (isDepthwise(shape)) {
    TESSEL_ASSIGN_OR_RETURN(const float *weights, copyConstant(ctx, kInputW, "depthwise_weights", weightCount));
    return std::unique_ptr<Step>(std::make_unique<DepthwiseConvStep>(shape, weights, epilogue));
  }
  const ConvGemmPlan plan = planConvGemm(shape, ctx.threads());
  const Tensor *w = ctx.constantInput(kInputW);
  TESSEL_ASSIGN_OR_RETURN(const std::byte *packed,
                          ctx.packed(std::string("weights_packed_a.") + plan.kernel->name, convPackedWeightsBytes(plan),
                                     [&](std::byte *dst) {
                                       packConvWeights(plan, w->data<float>(), reinterpret_cast<float *>(dst));
                                     }));
  ctx.releaseConstantInput(kInputW);
  return std::unique_ptr<Step>(
      std::make_unique<ConvGemmStep>(plan, reinterpret_cast<const float *>(packed), epilogue));
}

}  // namespace

Expected<std::unique_ptr<Step>> lowerConv(LowerContext &ctx) { return lowerConvolution(ctx, /*fused=*/false); }

Expected<std::unique_ptr<Step>> lowerFusedConv(LowerContext &ctx) { return lowerConvolution(ctx, /*fused=*/true); }

}  // namespace tessel::cpu
