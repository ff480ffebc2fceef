// cpu lowering of MaxPool, AveragePool, GlobalAveragePool and GlobalMaxPool to the pooling kernels
// (kernels/pool.h). The window geometry (kernel, strides, dilations, pads, auto_pad, ceil_mode)
// comes from the reference kernels' reader, so both targets agree on output sizes. Covered: f32,
// 1-D and 2-D windows, any rank for the global pools, and channels-last MaxPool of u8 or s8;
// MaxPool's Indices output (and with it storage_order), LpPool and 3-D windows run the reference
// kernel.
//
// The tessel-domain MaxPool, AveragePool and GlobalAveragePool (the layout pass's pools) carry
// `channels_last`: with 1, X and Y are [N, H, W, C] (rank 4) and the channels-last kernels run;
// with 0 they are the ONNX pools (without MaxPool's Indices) and lower as those do.
#include <optional>

#include <fmt/format.h>

#include "ops/reference/nn_common.h"
#include "targets/cpu/kernels/pool.h"
#include "targets/cpu/step.h"

namespace tessel::cpu {
namespace {

std::string formatSizes(const std::vector<int64_t> &sizes) { return fmt::format("[{}]", fmt::join(sizes, ",")); }

enum class PoolKind { Max, Average };

/// Where X's and Y's dims sit: [N, C, spatial...], or [N, H, W, C] when channels-last.
enum class PoolLayout { ChannelsFirst, ChannelsLast };

/// MaxPool of u8 or s8 channels-last values (quantized activations, after fuse-qdq).
class BytesMaxPoolStep final : public Step {
 public:
  BytesMaxPoolStep(const Pool2dShape &shape, bool isSigned) : shape_(shape), isSigned_(isSigned) {}

  Status run(const StepIo &io) const override {
    maxPool2dNhwcBytes(shape_, io.inputs[0], isSigned_, io.outputs[0], io.pool);
    return Status::success();
  }
  std::string kernelName() const override {
    return std::string(isSigned_ ? "max_pool2d_nhwc_s8 " : "max_pool2d_nhwc_u8 ") + poolNhwcKernelName();
  }

 private:
  Pool2dShape shape_;
  bool isSigned_;
};

class WindowPoolStep final : public Step {
 public:
  WindowPoolStep(PoolKind kind, PoolLayout layout, const Pool2dShape &shape, bool countIncludePad)
      : kind_(kind), layout_(layout), shape_(shape), countIncludePad_(countIncludePad) {}

  Status run(const StepIo &io) const override {
    const auto *x = static_cast<const float *>(io.inputs[0]);
    auto *y = static_cast<float *>(io.outputs[0]);
    const bool channelsLast = layout_ == PoolLayout::ChannelsLast;
    if (kind_ == PoolKind::Max && channelsLast) {
      maxPool2dNhwc(shape_, x, y, io.pool);
    } else if (kind_ == PoolKind::Max) {
      maxPool2d(shape_, x, y, io.pool);
    } else if (channelsLast) {
      averagePool2dNhwc(shape_, countIncludePad_, x, y, io.pool);
    } else {
      averagePool2d(shape_, countIncludePad_, x, y, io.pool);
    }
    return Status::success();
  }
  std::string kernelName() const override {
    if (layout_ == PoolLayout::ChannelsLast) {
      return std::string(kind_ == PoolKind::Max ? "max_pool2d_nhwc " : "average_pool2d_nhwc ") + poolNhwcKernelName();
    }
    return std::string(kind_ == PoolKind::Max ? "max_pool2d " : "average_pool2d ") + poolKernelName();
  }

 private:
  PoolKind kind_;
  PoolLayout layout_;
  Pool2dShape shape_;
  bool countIncludePad_;
};

/// GlobalAveragePool channels-last: X [N, H, W, C] -> Y [N, 1, 1, C].
class GlobalAveragePoolNhwcStep final : public Step {
 public:
  GlobalAveragePoolNhwcStep(int64_t batch, int64_t plane, int64_t channels)
      : batch_(batch), plane_(plane), channels_(channels) {}

  Status run(const StepIo &io) const override {
    globalAveragePoolNhwc(batch_, plane_, channels_, static_cast<const float *>(io.inputs[0]),
                          static_cast<float *>(io.outputs[0]), io.pool);
    return Status::success();
  }
  std::string kernelName() const override { return std::string("global_average_pool_nhwc ") + poolNhwcKernelName(); }

 private:
  int64_t batch_, plane_, channels_;
};

class GlobalPoolStep final : public Step {
 public:
  GlobalPoolStep(PoolKind kind, int64_t planes, int64_t planeSize)
      : kind_(kind), planes_(planes), planeSize_(planeSize) {}

  Status run(const StepIo &io) const override {
    const auto *x = static_cast<const float *>(io.inputs[0]);
    auto *y = static_cast<float *>(io.outputs[0]);
    if (kind_ == PoolKind::Max) {
      globalMaxPool(planes_, planeSize_, x, y, io.pool);
    } else {
      globalAveragePool(planes_, planeSize_, x, y, io.pool);
    }
    return Status::success();
  }
  std::string kernelName() const override {
    return std::string(kind_ == PoolKind::Max ? "global_max_pool " : "global_average_pool ") + poolKernelName();
  }

 private:
  PoolKind kind_;
  int64_t planes_, planeSize_;
};

bool isFloat32Node(const LowerContext &ctx) {
  return ctx.numInputs() >= 1 && ctx.hasInput(0) && ctx.inputDType(0) == DType::Float32 &&
         ctx.outputDType(0) == DType::Float32;
}

/// Fails unless every output position's window reaches at least one input element; such a window
/// has no value to pool (the reference kernel rejects it the same way).
Status checkWindowsSeeInput(const std::string &op, const ref::WindowGeometry &g) {
  for (size_t d = 0; d < g.spatialRank(); ++d) {
    for (int64_t o = 0; o < g.outSizes[d]; ++o) {
      const int64_t start = o * g.strides[d] - g.padBegin[d];
      const int64_t firstTap = start >= 0 ? 0 : (-start + g.dilations[d] - 1) / g.dilations[d];
      if (firstTap < g.kernel[d] && start + firstTap * g.dilations[d] < g.inSizes[d]) continue;
      return makeError(ErrorCode::InvalidArgument,
                       "{}: axis {}: output position {} covers only padding (pads {}, {}; kernel {}); expected pads "
                       "smaller than the kernel",
                       op, d + 2, o, g.padBegin[d], g.padEnd[d], g.kernel[d]);
    }
  }
  return Status::success();
}

/// The layout a tessel-domain pool declares with `channels_last`; channels-last needs rank 4 (the
/// reference kernel reports any other rank).
std::optional<PoolLayout> tesselPoolLayout(const LowerContext &ctx) {
  if (ctx.node().attrInt("channels_last", 0) == 0) return PoolLayout::ChannelsFirst;
  if (ctx.numInputs() < 1 || !ctx.hasInput(0) || ctx.inputSizes(0).size() != 4) return std::nullopt;
  return PoolLayout::ChannelsLast;
}

/// A channels-last MaxPool of u8 or s8 values: the type, or nullopt for any other pool.
std::optional<DType> bytesMaxPoolType(const LowerContext &ctx, PoolKind kind, PoolLayout layout) {
  if (kind != PoolKind::Max || layout != PoolLayout::ChannelsLast || ctx.numInputs() < 1 || !ctx.hasInput(0)) {
    return std::nullopt;
  }
  const DType dtype = ctx.inputDType(0);
  if (!isQuantized8Bit(dtype) || ctx.outputDType(0) != dtype) return std::nullopt;
  return dtype;
}

Expected<std::unique_ptr<Step>> lowerWindowPool(LowerContext &ctx, PoolKind kind, PoolLayout layout) {
  const std::string &op = ctx.node().opType();
  const std::optional<DType> bytes = bytesMaxPoolType(ctx, kind, layout);
  if (!isFloat32Node(ctx) && !bytes) return std::unique_ptr<Step>();
  // The Indices output (and storage_order, which only shapes it) is left to the reference kernel.
  if (ctx.node().outputs().size() > 1 && ctx.node().output(1) != nullptr) return std::unique_ptr<Step>();
  const bool channelsLast = layout == PoolLayout::ChannelsLast;
  const std::vector<int64_t> x = ctx.inputSizes(0);
  if (x.size() < 3) {
    return makeError(ErrorCode::ShapeMismatch, "{}: X has shape {}; expected [N, C, spatial...]", op, formatSizes(x));
  }
  if (x.size() > 4) return std::unique_ptr<Step>();
  const int64_t channels = channelsLast ? x[3] : x[1];
  const std::vector<int64_t> inSpatial =
      channelsLast ? std::vector<int64_t>{x[1], x[2]} : std::vector<int64_t>(x.begin() + 2, x.end());
  auto kernel = ref::readKernelShape(ctx.node(), inSpatial.size(), {});
  if (!kernel.ok()) return makeError(kernel.diag().code, "{}: {}", op, kernel.diag().message);
  const bool ceilMode = ctx.node().attrInt("ceil_mode", 0) != 0;
  auto window = ref::forwardWindow(ctx.node(), inSpatial, *kernel, ceilMode);
  if (!window.ok()) return makeError(window.diag().code, "{}: {}", op, window.diag().message);
  const ref::WindowGeometry &g = *window;
  TESSEL_RETURN_IF_ERROR(checkWindowsSeeInput(op, g));

  std::vector<int64_t> expectedOut = {x[0], x[1]};
  expectedOut.insert(expectedOut.end(), g.outSizes.begin(), g.outSizes.end());
  if (channelsLast) expectedOut = {x[0], g.outSizes[0], g.outSizes[1], channels};
  if (ctx.outputSizes(0) != expectedOut) {
    return makeError(ErrorCode::ShapeMismatch, "{}: output is {}; X and the attributes give {}", op,
                     formatSizes(ctx.outputSizes(0)), formatSizes(expectedOut));
  }
  Pool2dShape s;
  s.batch = x[0];
  s.channels = channels;
  const size_t last = g.spatialRank() - 1;  // Width; height is the axis before it, if any.
  s.inWidth = g.inSizes[last];
  s.outWidth = g.outSizes[last];
  s.kernelWidth = g.kernel[last];
  s.strideWidth = g.strides[last];
  s.dilationWidth = g.dilations[last];
  s.padLeft = g.padBegin[last];
  s.padRight = g.padEnd[last];
  if (g.spatialRank() == 2) {
    s.inHeight = g.inSizes[0];
    s.outHeight = g.outSizes[0];
    s.kernelHeight = g.kernel[0];
    s.strideHeight = g.strides[0];
    s.dilationHeight = g.dilations[0];
    s.padTop = g.padBegin[0];
    s.padBottom = g.padEnd[0];
  }
  if (bytes) return std::unique_ptr<Step>(std::make_unique<BytesMaxPoolStep>(s, *bytes == DType::Int8));
  const bool countIncludePad = ctx.node().attrInt("count_include_pad", 0) != 0;
  return std::unique_ptr<Step>(std::make_unique<WindowPoolStep>(kind, layout, s, countIncludePad));
}

Expected<std::unique_ptr<Step>> lowerGlobalPool(LowerContext &ctx, PoolKind kind) {
  const std::string &op = ctx.node().opType();
  if (!isFloat32Node(ctx)) return std::unique_ptr<Step>();
  const std::vector<int64_t> x = ctx.inputSizes(0);
  if (x.size() < 3) {
    return makeError(ErrorCode::ShapeMismatch, "{}: X has shape {}; expected [N, C, spatial...]", op, formatSizes(x));
  }
  int64_t planeSize = 1;
  for (size_t d = 2; d < x.size(); ++d) planeSize *= x[d];
  std::vector<int64_t> expectedOut(x.size(), 1);
  expectedOut[0] = x[0];
  expectedOut[1] = x[1];
  if (ctx.outputSizes(0) != expectedOut) {
    return makeError(ErrorCode::ShapeMismatch, "{}: output is {}; expected {}", op, formatSizes(ctx.outputSizes(0)),
                     formatSizes(expectedOut));
  }
  // An empty plane has no mean or maximum; the reference kernel decides what that gives.
  if (planeSize == 0) return std::unique_ptr<Step>();
  return std::unique_ptr<Step>(std::make_unique<GlobalPoolStep>(kind, x[0] * x[1], planeSize));
}

/// GlobalAveragePool on X [N, H, W, C] (Y [N, 1, 1, C]).
Expected<std::unique_ptr<Step>> lowerGlobalAveragePoolNhwc(LowerContext &ctx) {
  const std::string &op = ctx.node().opType();
  if (!isFloat32Node(ctx)) return std::unique_ptr<Step>();
  const std::vector<int64_t> x = ctx.inputSizes(0);
  const std::vector<int64_t> expectedOut = {x[0], 1, 1, x[3]};
  if (ctx.outputSizes(0) != expectedOut) {
    return makeError(ErrorCode::ShapeMismatch, "{}: output is {}; expected {}", op, formatSizes(ctx.outputSizes(0)),
                     formatSizes(expectedOut));
  }
  const int64_t plane = x[1] * x[2];
  // An empty plane has no mean; the reference kernel decides what that gives.
  if (plane == 0) return std::unique_ptr<Step>();
  return std::unique_ptr<Step>(std::make_unique<GlobalAveragePoolNhwcStep>(x[0], plane, x[3]));
}

}  // namespace

Expected<std::unique_ptr<Step>> lowerMaxPool(LowerContext &ctx) {
  return lowerWindowPool(ctx, PoolKind::Max, PoolLayout::ChannelsFirst);
}

Expected<std::unique_ptr<Step>> lowerAveragePool(LowerContext &ctx) {
  return lowerWindowPool(ctx, PoolKind::Average, PoolLayout::ChannelsFirst);
}

Expected<std::unique_ptr<Step>> lowerGlobalMaxPool(LowerContext &ctx) { return lowerGlobalPool(ctx, PoolKind::Max); }

Expected<std::unique_ptr<Step>> lowerGlobalAveragePool(LowerContext &ctx) {
  return lowerGlobalPool(ctx, PoolKind::Average);
}

Expected<std::unique_ptr<Step>> lowerTesselMaxPool(LowerContext &ctx) {
  const std::optional<PoolLayout> layout = tesselPoolLayout(ctx);
  if (!layout) return std::unique_ptr<Step>();
  return lowerWindowPool(ctx, PoolKind::Max, *layout);
}

Expected<std::unique_ptr<Step>> lowerTesselAveragePool(LowerContext &ctx) {
  const std::optional<PoolLayout> layout = tesselPoolLayout(ctx);
  if (!layout) return std::unique_ptr<Step>();
  return lowerWindowPool(ctx, PoolKind::Average, *layout);
}

Expected<std::unique_ptr<Step>> lowerTesselGlobalAveragePool(LowerContext &ctx) {
  const std::optional<PoolLayout> layout = tesselPoolLayout(ctx);
  if (!layout) return std::unique_ptr<Step>();
  if (*layout == PoolLayout::ChannelsFirst) return lowerGlobalPool(ctx, PoolKind::Average);
  return lowerGlobalAveragePoolNhwc(ctx);
}

}  // namespace tessel::cpu
