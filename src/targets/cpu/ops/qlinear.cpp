// cpu lowering of the quantized ops a QDQ model becomes after passes/fuse_qdq (and that
// onnxruntime's QOperator format writes): QLinearConv and QLinearMatMul, each an int32 product of
// the centred operands followed by one requantization per output, y = round((acc + bias) *
// x_scale * w_scale / y_scale) + y_zero_point, saturated, the multiplier in float32 as onnxruntime
// computes it; tessel QLinearMatMulToFloat, the same product whose GEMM writes the requantized
// values dequantized (floats); and tessel QLinearAdd, one vector loop doing DequantizeLinear, Add,
// QuantizeLinear.
// QLinearConv runs on either layout (the tessel op with channels_last is assign-layout's).
//
// The product runs on the int8 GEMM (kernels/gemm_s8.h: VNNI) where the host has one: a group-1
// convolution as the transposed product of kernels/conv_s8.h, a matmul with B packed once; a
// channels-last depthwise convolution on kernels/depthwise_conv_s8.h on any host. Elsewhere (no
// VNNI, grouped and channels-first depthwise convolutions, K past the int32 bound) the centred integers run
// on the f32 convolution and GEMM kernels and the sums are converted to int32: exact while a sum
// stays below 2^24, and otherwise off by float32's rounding of the sum, which moves a result only
// where it lies within that rounding of a half step. Covered: u8/s8 operands, constant weights,
// scales and zero points (per tensor, or per output channel / column for the weights), a constant
// int32 bias; anything else runs on the reference kernel.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <optional>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "targets/cpu/kernels/conv.h"
#include "targets/cpu/kernels/conv_nhwc.h"
#include "targets/cpu/kernels/conv_s8.h"
#include "targets/cpu/kernels/depthwise_conv.h"
#include "targets/cpu/kernels/depthwise_conv_s8.h"
#include "targets/cpu/kernels/elementwise.h"
#include "targets/cpu/kernels/gemm.h"
#include "targets/cpu/kernels/gemm_s8.h"
#include "targets/cpu/kernels/quantize.h"
#include "targets/cpu/ops/conv_geometry.h"
#include "targets/cpu/step.h"

namespace tessel::cpu {
namespace {

// Both ops number their inputs alike: x (QLinearMatMul's a), its scale and zero point, w (b), its
// scale and zero point, y's scale and zero point, and QLinearConv's bias.
constexpr size_t kX = 0, kXScale = 1, kXZero = 2, kW = 3, kWScale = 4, kWZero = 5, kYScale = 6, kYZero = 7, kBias = 8;
// QLinearMatMulToFloat's epilogue (fuse-epilogues'): a float bias per column and a residual.
constexpr size_t kFloatBias = 9, kResidual = 10;

// Output elements per requantization task.
constexpr int64_t kRequantizeGrain = 16384;
// Elements one call of a requantization loop covers at least, rows of few channels together: its
// vector body takes 64 at a time.
constexpr int64_t kRequantizeSpan = 256;

/// The constant scales and zero points of a QLinear op, and how each output j is requantized.
struct QLinearParams {
  bool xSigned = false, wSigned = false, ySigned = false;
  int32_t xZero = 0;
  std::vector<int32_t> wZero;       // One per output channel (column).
  std::vector<float> multiplier;    // x_scale * w_scale[j] / y_scale, per output channel (column).
  float yZero = 0.0f;
  float yScale = 1.0f;
};

/// A constant float32 scale of `count` values (or one, repeated), each positive and finite.
std::optional<std::vector<float>> readScales(const LowerContext &ctx, size_t index, int64_t count) {
  const Tensor *t = ctx.constantInput(index);
  if (t == nullptr || t->dtype() != DType::Float32 || (t->numel() != 1 && t->numel() != count)) return std::nullopt;
  std::vector<float> scales(static_cast<size_t>(count));
  for (int64_t j = 0; j < count; ++j) {
    scales[size_t(j)] = t->data<float>()[t->numel() == 1 ? 0 : j];
    if (!(scales[size_t(j)] > 0.0f) || !std::isfinite(scales[size_t(j)])) return std::nullopt;
  }
  return scales;
}

/// A constant zero point of type `dtype` of `count` values (or one, repeated).
std::optional<std::vector<int32_t>> readZeroPoints(const LowerContext &ctx, size_t index, DType dtype, int64_t count) {
  const Tensor *t = ctx.constantInput(index);
  if (t == nullptr || t->dtype() != dtype || (t->numel() != 1 && t->numel() != count)) return std::nullopt;
  std::vector<int32_t> zero(static_cast<size_t>(count));
  for (int64_t j = 0; j < count; ++j) zero[size_t(j)] = int32_t(t->scalarAsDouble(t->numel() == 1 ? 0 : j));
  return zero;
}

/// The parameters of a QLinear op with `outputs` output channels (columns); nullopt when one is
/// fed, of another type, or of a shape the kernels do not cover.
std::optional<QLinearParams> readQLinearParams(const LowerContext &ctx, int64_t outputs) {
  if (ctx.numInputs() < 8) return std::nullopt;
  for (size_t i = 0; i < 8; ++i) {
    if (!ctx.hasInput(i)) return std::nullopt;
  }
  // y's quantized type is its zero point's (QLinearMatMulToFloat's output is float).
  const DType xType = ctx.inputDType(kX), wType = ctx.inputDType(kW), yType = ctx.inputDType(kYZero);
  if (!isQuantized8Bit(xType) || !isQuantized8Bit(wType) || !isQuantized8Bit(yType)) return std::nullopt;
  const auto xScale = readScales(ctx, kXScale, 1), yScale = readScales(ctx, kYScale, 1);
  const auto wScale = readScales(ctx, kWScale, outputs);
  const auto xZero = readZeroPoints(ctx, kXZero, xType, 1), yZero = readZeroPoints(ctx, kYZero, yType, 1);
  auto wZero = readZeroPoints(ctx, kWZero, wType, outputs);
  if (!xScale || !yScale || !wScale || !xZero || !yZero || !wZero) return std::nullopt;
  if (ctx.constantInput(kXScale)->numel() != 1 || ctx.constantInput(kXZero)->numel() != 1) return std::nullopt;
  QLinearParams p;
  p.xSigned = xType == DType::Int8;
  p.wSigned = wType == DType::Int8;
  p.ySigned = yType == DType::Int8;
  p.xZero = (*xZero)[0];
  p.wZero = std::move(*wZero);
  p.yZero = float((*yZero)[0]);
  p.yScale = (*yScale)[0];
  p.multiplier.resize(size_t(outputs));
  for (size_t j = 0; j < p.multiplier.size(); ++j) p.multiplier[j] = (*xScale)[0] * (*wScale)[j] / (*yScale)[0];
  return p;
}

/// The optional int32 bias (input kBias) of `outputs` values, zeros without one; nullopt when it
/// is fed or of another type or size.
std::optional<std::vector<int32_t>> readBias(const LowerContext &ctx, int64_t outputs) {
  std::vector<int32_t> bias(size_t(outputs), 0);
  if (ctx.numInputs() > kBias && ctx.hasInput(kBias)) {
    const Tensor *b = ctx.constantInput(kBias);
    if (b == nullptr || b->dtype() != DType::Int32 || b->numel() != outputs) return std::nullopt;
    std::memcpy(bias.data(), b->rawData(), bias.size() * sizeof(int32_t));
  }
  return bias;
}

/// W (u8 or s8) minus its zero point per output, as floats: element i feeds output i / perOutput
/// (a conv's [Cout, ...] weights) or i % outputs (a matmul's [K, N] B).
std::vector<float> centredWeights(const Tensor &w, const std::vector<int32_t> &zero, int64_t perOutput) {
  std::vector<float> centred(size_t(w.numel()));
  const int64_t outputs = int64_t(zero.size());
  for (int64_t i = 0; i < w.numel(); ++i) {
    const int64_t j = perOutput > 0 ? i / perOutput : i % outputs;
    centred[size_t(i)] = float(w.scalarAsDouble(i) - zero[size_t(j)]);
  }
  return centred;
}

// ---- QLinearConv ------------------------------------------------------------------------------

/// How a QLinearConv's int32 product is computed: on the int8 GEMM or the int8 depthwise kernel
/// (channels-last), or on an f32 kernel over the centred integers, channels-first or (the tessel
/// op with channels_last) channels-last.
enum class ConvProduct { S8Gemm, S8DepthwiseNhwc, F32Gemm, F32Depthwise, F32GemmNhwc };

/// A product's plan: the int8 GEMM's, or the f32 kernel's.
struct ConvPlans {
  ConvS8Plan s8;
  ConvGemmPlan f32;
  ConvNhwcPlan nhwc;
};

class QLinearConvStep final : public Step {
 public:
  QLinearConvStep(const Conv2dShape &shape, ConvProduct product, const ConvPlans &plans, const std::byte *weights,
                  QLinearParams params, std::vector<int32_t> bias)
      : shape_(shape),
        product_(product),
        plans_(plans),
        weights_(weights),
        params_(std::move(params)),
        bias_(std::move(bias)) {
    // The f32 channels-last product's rows of few channels are requantized several at a time, on
    // repeated parameters (the int8 kernels requantize as they go).
    if (channelsLast()) {
      const int64_t channels = shape_.outChannels;
      tiledRows_ = std::max<int64_t>(1, (kRequantizeSpan + channels - 1) / channels);
      for (int64_t r = 0; r < tiledRows_; ++r) {
        tiledBias_.insert(tiledBias_.end(), bias_.begin(), bias_.end());
        tiledMultiplier_.insert(tiledMultiplier_.end(), params_.multiplier.begin(), params_.multiplier.end());
      }
    }
    // The int8 kernels requantize as they go; the f32 kernels need the whole sums and a float X.
    const bool int8 = product_ == ConvProduct::S8Gemm || product_ == ConvProduct::S8DepthwiseNhwc;
    accBytes_ = int8 ? 0 : alignScratchBytes(size_t(outputCount()) * sizeof(int32_t));
    centredBytes_ = int8 ? 0 : alignScratchBytes(size_t(inputCount()) * sizeof(float));
  }

  Status run(const StepIo &io) const override {
    auto *scratch = static_cast<std::byte *>(io.scratch);
    if (product_ == ConvProduct::S8Gemm) {
      const S8Requantization requantize{bias_.data(), params_.multiplier.data(), params_.yZero, params_.ySigned};
      convS8(plans_.s8, io.inputs[kX], params_.xSigned, params_.xZero, weights_, io.outputs[0], &requantize, io.pool,
             {scratch, convS8ScratchBytes(plans_.s8)});
      return Status::success();
    }
    if (product_ == ConvProduct::S8DepthwiseNhwc) {
      const DepthwiseS8Output output{bias_.data(), params_.multiplier.data(), params_.yZero, params_.ySigned};
      depthwiseConvS8(shape_, io.inputs[kX], params_.xSigned, params_.xZero, reinterpret_cast<const int16_t *>(weights_),
                      output, io.outputs[0], io.pool);
      return Status::success();
    }
    const QuantizeKernels &q = quantizeKernels();
    auto *acc = reinterpret_cast<int32_t *>(scratch);
    std::byte *rest = scratch + accBytes_;
    auto *centred = reinterpret_cast<float *>(rest);
    centerQuantized(q, io.inputs[kX], params_.xSigned, float(params_.xZero), centred, inputCount(), io.pool);
    auto *sums = reinterpret_cast<float *>(acc);  // The f32 sums land where the int32s go.
    const auto *w = reinterpret_cast<const float *>(weights_);
    switch (product_) {
      case ConvProduct::F32Depthwise: depthwiseConv2d(shape_, centred, w, {}, sums, io.pool); break;
      case ConvProduct::F32Gemm: convGemm(plans_.f32, centred, w, {}, sums, rest + centredBytes_, io.pool); break;
      case ConvProduct::F32GemmNhwc: convNhwc(plans_.nhwc, centred, w, {}, sums, rest + centredBytes_, io.pool); break;
      case ConvProduct::S8Gemm:
      case ConvProduct::S8DepthwiseNhwc: break;
    }
    int32FromFloat(q, reinterpret_cast<std::byte *>(acc), outputCount(), io.pool);
    if (channelsLast()) {
      requantizePixels(acc, io.outputs[0], io.pool);
    } else {
      requantizePlanes(acc, io.outputs[0], io.pool);
    }
    return Status::success();
  }
  size_t scratchBytes() const override {
    switch (product_) {
      case ConvProduct::S8Gemm: return convS8ScratchBytes(plans_.s8);
      case ConvProduct::F32Gemm: return accBytes_ + centredBytes_ + convGemmScratchBytes(plans_.f32);
      case ConvProduct::F32GemmNhwc: return accBytes_ + centredBytes_ + convNhwcScratchBytes(plans_.nhwc);
      case ConvProduct::F32Depthwise: return accBytes_ + centredBytes_;
      case ConvProduct::S8DepthwiseNhwc: return 0;
    }
    return 0;
  }
  std::string kernelName() const override {
    switch (product_) {
      case ConvProduct::S8Gemm:
        return fmt::format("qlinear_conv{} {}{}", plans_.s8.channelsLast ? "_nhwc" : "", plans_.s8.kernel->name,
                           plans_.s8.direct ? " 1x1" : " patches");
      case ConvProduct::F32Gemm: return fmt::format("qlinear_conv_as_f32 {}", convGemmKernelName(plans_.f32));
      case ConvProduct::F32Depthwise: return fmt::format("qlinear_conv_as_f32 {}", depthwiseConvKernelName());
      case ConvProduct::F32GemmNhwc: return fmt::format("qlinear_conv_as_f32 {}", convNhwcKernelName(plans_.nhwc));
      case ConvProduct::S8DepthwiseNhwc: return fmt::format("qlinear_conv_nhwc {}", depthwiseConvS8KernelName());
    }
    return {};
  }

 private:
  bool channelsLast() const { return product_ == ConvProduct::F32GemmNhwc; }
  int64_t inputCount() const { return shape_.batch * shape_.inChannels * shape_.inPlane(); }
  int64_t outputCount() const { return shape_.batch * shape_.outChannels * shape_.outPlane(); }

  /// Channels-first: each output plane (one image, one channel) with its channel's bias and multiplier.
  void requantizePlanes(const int32_t *acc, void *y, ThreadPool *pool) const {
    const QuantizeKernels &q = quantizeKernels();
    const int64_t plane = shape_.outPlane(), channels = shape_.outChannels;
    parallelRanges(pool, shape_.batch * channels, std::max<int64_t>(1, kRequantizeGrain / std::max<int64_t>(plane, 1)),
                   [&](int64_t begin, int64_t end) {
                     for (int64_t p = begin; p < end; ++p) {
                       const size_t c = size_t(p % channels);
                       const int64_t offset = p * plane;
                       if (params_.ySigned) {
                         q.requantizeS8(acc + offset, bias_[c], params_.multiplier[c], params_.yZero,
                                        static_cast<int8_t *>(y) + offset, plane);
                       } else {
                         q.requantizeU8(acc + offset, bias_[c], params_.multiplier[c], params_.yZero,
                                        static_cast<uint8_t *>(y) + offset, plane);
                       }
                     }
                   });
  }

  /// Channels-last: each output pixel's channels, a bias and multiplier per channel, tiledRows_
  /// pixels at a time.
  void requantizePixels(const int32_t *acc, void *y, ThreadPool *pool) const {
    const QuantizeKernels &q = quantizeKernels();
    const int64_t channels = shape_.outChannels, pixels = shape_.batch * shape_.outPlane();
    const int64_t tiles = (pixels + tiledRows_ - 1) / tiledRows_;
    parallelRanges(pool, tiles, std::max<int64_t>(1, kRequantizeGrain / (tiledRows_ * channels)),
                   [&](int64_t begin, int64_t end) {
                     for (int64_t t = begin; t < end; ++t) {
                       const int64_t offset = t * tiledRows_ * channels;
                       const int64_t count = std::min(tiledRows_, pixels - t * tiledRows_) * channels;
                       if (params_.ySigned) {
                         q.requantizeColumnsS8(acc + offset, tiledBias_.data(), tiledMultiplier_.data(),
                                               params_.yZero, static_cast<int8_t *>(y) + offset, count);
                       } else {
                         q.requantizeColumnsU8(acc + offset, tiledBias_.data(), tiledMultiplier_.data(),
                                               params_.yZero, static_cast<uint8_t *>(y) + offset, count);
                       }
                     }
                   });
  }

  Conv2dShape shape_;
  ConvProduct product_;
  ConvPlans plans_;
  const std::byte *weights_;
  QLinearParams params_;
  std::vector<int32_t> bias_;
  int64_t tiledRows_ = 1;
  std::vector<int32_t> tiledBias_;
  std::vector<float> tiledMultiplier_;
  size_t accBytes_ = 0, centredBytes_ = 0;
};

// ---- QLinearMatMul ----------------------------------------------------------------------------

/// What QLinearMatMulToFloat adds to its floats (fuse-epilogues'): a float bias per column, a
/// residual input of Y's shape, an activation.
struct DequantizedEpilogue {
  std::vector<float> bias;
  int residualInput = -1;
  Activation activation;
};

class QLinearMatMulStep final : public Step {
 public:
  /// `s8` null: the f32 GEMM `f32` with B centred and packed in `weights`. `toFloat`: tessel
  /// QLinearMatMulToFloat, the output dequantized (floats, not bytes), then its epilogue.
  QLinearMatMulStep(const GemmShape &shape, const S8GemmKernel *s8, const GemmKernel *f32, const std::byte *weights,
                    QLinearParams params, std::vector<int32_t> bias, int threads, bool toFloat,
                    DequantizedEpilogue epilogue = {})
      : shape_(shape), s8_(s8), f32_(f32), weights_(weights), params_(std::move(params)), toFloat_(toFloat),
        bias_(std::move(bias)), epilogue_(std::move(epilogue)) {
    // The int8 GEMM keeps int32 sums only for a K it sums in blocks (or an empty K).
    const bool sums = s8_ == nullptr || shape_.k == 0 || s8GemmSplitsK(*s8_, shape_.k);
    accBytes_ = sums ? alignScratchBytes(size_t(shape_.m * shape_.n) * sizeof(int32_t)) : 0;
    if (s8_ == nullptr) {
      centredBytes_ = alignScratchBytes(size_t(shape_.m * shape_.k) * sizeof(float));
      gemmBytes_ = sgemmScratchBytes(*f32_, shape_, threads, {.a = false, .b = true});
      // The bytes the float output is dequantized from.
      if (toFloat_) quantizedBytes_ = alignScratchBytes(size_t(shape_.m * shape_.n));
    } else {
      gemmBytes_ = s8GemmScratchBytes(shape_);
    }
  }

  Status run(const StepIo &io) const override {
    auto *scratch = static_cast<std::byte *>(io.scratch);
    auto *acc = reinterpret_cast<int32_t *>(scratch);
    std::byte *rest = scratch + accBytes_;
    if (s8_ != nullptr) {  // Requantized by the GEMM as it goes.
      const S8GemmA a{io.inputs[kX], shape_.k, params_.xSigned, &params_.xZero, 1};
      const S8GemmBytes bytes{{bias_.data(), params_.multiplier.data(), params_.yZero, params_.ySigned,
                               toFloat_ ? params_.yScale : 0.0f},
                              static_cast<std::byte *>(io.outputs[0]), shape_.n, gemmEpilogue(io)};
      s8GemmPacked(shape_, a, PackedS8BView{s8_, shape_.k, shape_.n, weights_}, acc, shape_.n, io.pool,
                   {rest, gemmBytes_}, &bytes);
      return Status::success();
    }
    const QuantizeKernels &q = quantizeKernels();
    auto *centred = reinterpret_cast<float *>(rest);
    centerQuantized(q, io.inputs[kX], params_.xSigned, float(params_.xZero), centred, shape_.m * shape_.k, io.pool);
    sgemmPacked(shape_, centred, shape_.k, PackedBView{f32_, shape_.k, shape_.n, reinterpret_cast<const float *>(weights_)},
                reinterpret_cast<float *>(acc), shape_.n, {}, io.pool, {rest + centredBytes_, gemmBytes_});
    int32FromFloat(q, reinterpret_cast<std::byte *>(acc), shape_.m * shape_.n, io.pool);
    if (!toFloat_) {
      requantize(acc, io.outputs[0], io.pool);
      return Status::success();
    }
    std::byte *quantized = rest + centredBytes_ + gemmBytes_;
    requantize(acc, quantized, io.pool);
    // Dequantized and finished a range of rows at a time, each while it is in the cache.
    auto *y = static_cast<float *>(io.outputs[0]);
    const GemmEpilogue epilogue = gemmEpilogue(io);
    const int64_t n = shape_.n;
    parallelRanges(io.pool, shape_.m, std::max<int64_t>(1, kRequantizeGrain / n), [&](int64_t begin, int64_t end) {
      dequantizeLinear(q, quantized + begin * n, params_.ySigned, params_.yScale, params_.yZero, y + begin * n,
                       (end - begin) * n, nullptr);
      GemmEpilogue rows = epilogue;
      if (rows.residual != nullptr) rows.residual += begin * n;
      applyDequantizedEpilogue(rows, y + begin * n, n, end - begin, n);
    });
    return Status::success();
  }
  size_t scratchBytes() const override { return accBytes_ + centredBytes_ + gemmBytes_ + quantizedBytes_; }
  std::string kernelName() const override {
    const char *op = toFloat_ ? "qlinear_matmul_to_float" : "qlinear_matmul";
    return s8_ != nullptr ? fmt::format("{} {}", op, s8_->name) : fmt::format("{}_as_f32 {}", op, f32_->name);
  }

 private:
  /// The epilogue of this run's floats (nothing for QLinearMatMul's bytes).
  GemmEpilogue gemmEpilogue(const StepIo &io) const {
    GemmEpilogue e;
    e.bias = epilogue_.bias.empty() ? nullptr : epilogue_.bias.data();
    e.residual = epilogue_.residualInput >= 0 ? static_cast<const float *>(io.inputs[epilogue_.residualInput]) : nullptr;
    e.ldr = shape_.n;
    e.activation = epilogue_.activation;
    return e;
  }

  /// The f32 product's sums row by row, each column with its own multiplier.
  void requantize(const int32_t *acc, void *y, ThreadPool *pool) const {
    const QuantizeKernels &q = quantizeKernels();
    const int64_t n = shape_.n;
    parallelRanges(pool, shape_.m, std::max<int64_t>(1, kRequantizeGrain / n), [&](int64_t begin, int64_t end) {
      for (int64_t r = begin; r < end; ++r) {
        if (params_.ySigned) {
          q.requantizeColumnsS8(acc + r * n, bias_.data(), params_.multiplier.data(), params_.yZero,
                                static_cast<int8_t *>(y) + r * n, n);
        } else {
          q.requantizeColumnsU8(acc + r * n, bias_.data(), params_.multiplier.data(), params_.yZero,
                                static_cast<uint8_t *>(y) + r * n, n);
        }
      }
    });
  }

  GemmShape shape_;
  const S8GemmKernel *s8_;
  const GemmKernel *f32_;
  const std::byte *weights_;
  QLinearParams params_;
  bool toFloat_;
  std::vector<int32_t> bias_;  // Per column: QLinearMatMulToFloat's, else zeros.
  DequantizedEpilogue epilogue_;
  size_t accBytes_ = 0, centredBytes_ = 0, gemmBytes_ = 0, quantizedBytes_ = 0;
};

// ---- QLinearAdd -------------------------------------------------------------------------------

class QLinearAddStep final : public Step {
 public:
  QLinearAddStep(int64_t count, bool isSigned, const QuantizedAddParams &params)
      : count_(count), isSigned_(isSigned), params_(params) {}

  Status run(const StepIo &io) const override {
    addQuantized(quantizeKernels(), io.inputs[0], io.inputs[3], isSigned_, params_, io.outputs[0], count_, io.pool);
    return Status::success();
  }
  std::string kernelName() const override {
    return fmt::format("qlinear_add_{} {}", isSigned_ ? "s8" : "u8", quantizeKernels().name);
  }

 private:
  int64_t count_;
  bool isSigned_;
  QuantizedAddParams params_;
};

}  // namespace

Expected<std::unique_ptr<Step>> lowerQLinearAdd(LowerContext &ctx) {
  if (ctx.numInputs() < 8) return std::unique_ptr<Step>();
  for (size_t i = 0; i < 8; ++i) {
    if (!ctx.hasInput(i)) return std::unique_ptr<Step>();
  }
  const DType type = ctx.inputDType(0);
  if (!isQuantized8Bit(type) || ctx.inputDType(3) != type || ctx.outputDType(0) != type ||
      ctx.inputSizes(0) != ctx.inputSizes(3)) {
    return std::unique_ptr<Step>();
  }
  const auto aScale = readScales(ctx, 1, 1), bScale = readScales(ctx, 4, 1), yScale = readScales(ctx, 6, 1);
  const auto aZero = readZeroPoints(ctx, 2, type, 1), bZero = readZeroPoints(ctx, 5, type, 1),
             yZero = readZeroPoints(ctx, 7, type, 1);
  if (!aScale || !bScale || !yScale || !aZero || !bZero || !yZero) return std::unique_ptr<Step>();
  for (size_t i : {size_t{1}, size_t{2}, size_t{4}, size_t{5}, size_t{6}, size_t{7}}) {
    if (ctx.constantInput(i)->numel() != 1) return std::unique_ptr<Step>();
  }
  const QuantizedAddParams params{(*aScale)[0], float((*aZero)[0]), (*bScale)[0],
                                  float((*bZero)[0]), (*yScale)[0], float((*yZero)[0])};
  int64_t count = 1;
  for (int64_t d : ctx.inputSizes(0)) count *= d;
  return std::unique_ptr<Step>(std::make_unique<QLinearAddStep>(count, type == DType::Int8, params));
}

Expected<std::unique_ptr<Step>> lowerQLinearConv(LowerContext &ctx) {
  if (ctx.numInputs() < 8 || !ctx.hasInput(kX) || !ctx.hasInput(kW)) return std::unique_ptr<Step>();
  // The tessel op (assign-layout's) is channels-last when it says so.
  const bool channelsLast = ctx.node().domain() == "tessel" && ctx.node().attrInt("channels_last", 0) != 0;
  const Tensor *w = ctx.constantInput(kW);
  const size_t rank = ctx.inputSizes(kX).size();
  if (w == nullptr || rank < 3 || rank > 4 || (channelsLast && rank != 4)) return std::unique_ptr<Step>();
  TESSEL_ASSIGN_OR_RETURN(Conv2dShape shape, readQuantizedConvShape(ctx, kX, kW, "QLinearConv", channelsLast));
  if (shape.batch == 0 || shape.inChannels == 0 || shape.outChannels == 0) return std::unique_ptr<Step>();
  std::optional<QLinearParams> params = readQLinearParams(ctx, shape.outChannels);
  if (!params) return std::unique_ptr<Step>();
  std::optional<std::vector<int32_t>> bias = readBias(ctx, shape.outChannels);
  if (!bias) return std::unique_ptr<Step>();
  auto step = [&](ConvProduct product, const ConvPlans &plans, const std::byte *weights) {
    ctx.releaseConstantInput(kW);
    return std::unique_ptr<Step>(
        std::make_unique<QLinearConvStep>(shape, product, plans, weights, std::move(*params), std::move(*bias)));
  };

  ConvPlans plans;
  const S8GemmKernel *s8Kernel = selectedS8GemmKernel();
  if (s8Kernel != nullptr && shape.group == 1 && shape.columnRows() <= kS8GemmMaxK) {
    plans.s8 = planConvS8(shape, *s8Kernel, channelsLast);
    TESSEL_ASSIGN_OR_RETURN(const std::byte *packed,
                            ctx.packed(fmt::format("weights_packed_b.{}", s8Kernel->name),
                                       convS8PackedWeightsBytes(plans.s8), [&](std::byte *dst) {
                                         packConvS8Weights(plans.s8, w->rawData(), params->wSigned,
                                                           params->wZero.data(), dst);
                                       }));
    return step(ConvProduct::S8Gemm, plans, packed);
  }

  if (channelsLast && runsDepthwiseConvS8(shape)) {
    const std::vector<int16_t> packed16 = packDepthwiseS8Weights(shape, w->rawData(), params->wSigned, params->wZero);
    const size_t bytes = packed16.size() * sizeof(int16_t);
    TESSEL_ASSIGN_OR_RETURN(const std::byte *packed,
                            ctx.packed("depthwise_weights_s16", alignScratchBytes(bytes),
                                       [&](std::byte *dst) { std::memcpy(dst, packed16.data(), bytes); }));
    return step(ConvProduct::S8DepthwiseNhwc, plans, packed);
  }

  const std::vector<float> centred = centredWeights(*w, params->wZero, shape.columnRows());
  auto store = [&](std::string_view key, size_t bytes, const std::function<void(float *)> &pack) {
    return ctx.packed(key, alignScratchBytes(bytes), [&](std::byte *dst) { pack(reinterpret_cast<float *>(dst)); });
  };
  if (channelsLast) {
    if (!runsConvNhwc(shape)) return std::unique_ptr<Step>();
    plans.nhwc = planConvNhwc(shape, ctx.threads(), selectedGemmKernel());
    TESSEL_ASSIGN_OR_RETURN(const std::byte *packed,
                            store(fmt::format("weights_centred_nhwc.{}", plans.nhwc.kernel->name),
                                  convNhwcPackedWeightsBytes(plans.nhwc),
                                  [&](float *dst) { packConvNhwcWeights(plans.nhwc, centred.data(), dst); }));
    return step(ConvProduct::F32GemmNhwc, plans, packed);
  }
  if (isDepthwise(shape)) {
    TESSEL_ASSIGN_OR_RETURN(const std::byte *stored,
                            store("depthwise_weights_centred", centred.size() * sizeof(float), [&](float *dst) {
                              std::memcpy(dst, centred.data(), centred.size() * sizeof(float));
                            }));
    return step(ConvProduct::F32Depthwise, plans, stored);
  }
  plans.f32 = planConvGemm(shape, ctx.threads());
  TESSEL_ASSIGN_OR_RETURN(const std::byte *packed,
                          store(fmt::format("weights_centred_packed_a.{}", plans.f32.kernel->name),
                                convPackedWeightsBytes(plans.f32),
                                [&](float *dst) { packConvWeights(plans.f32, centred.data(), dst); }));
  return step(ConvProduct::F32Gemm, plans, packed);
}

namespace {

/// QLinearMatMulToFloat's epilogue; nullopt (the reference runs the node) for a fed or misshapen
/// bias or a residual not of Y's shape.
Expected<std::optional<DequantizedEpilogue>> readDequantizedEpilogue(LowerContext &ctx, int64_t n) {
  DequantizedEpilogue e;
  if (ctx.hasInput(kFloatBias)) {
    const Tensor *bias = ctx.constantInput(kFloatBias);
    if (bias == nullptr || bias->dtype() != DType::Float32 || bias->numel() != n) {
      return std::optional<DequantizedEpilogue>();
    }
    e.bias.assign(bias->data<float>(), bias->data<float>() + n);
  }
  if (ctx.hasInput(kResidual)) {
    if (ctx.inputDType(kResidual) != DType::Float32 || ctx.inputSizes(kResidual) != ctx.outputSizes(0)) {
      return std::optional<DequantizedEpilogue>();
    }
    e.residualInput = int(kResidual);
  }
  auto activation = parseActivation(ctx.node().attrString("activation", ""), ctx.node().attrFloats("activation_params"));
  if (!activation.ok()) {
    return makeError(ErrorCode::InvalidArgument, "QLinearMatMulToFloat: {}", activation.diag().message);
  }
  e.activation = *activation;
  return std::optional<DequantizedEpilogue>(std::move(e));
}

}  // namespace

/// QLinearMatMul, or with `toFloat` tessel QLinearMatMulToFloat (the same inputs, then its
/// epilogue's).
Expected<std::unique_ptr<Step>> lowerQLinearProduct(LowerContext &ctx, bool toFloat) {
  if (ctx.numInputs() < 8 || !ctx.hasInput(kX) || !ctx.hasInput(kW)) return std::unique_ptr<Step>();
  const Tensor *b = ctx.constantInput(kW);
  const std::vector<int64_t> aSizes = ctx.inputSizes(kX);
  // Fed or batched B and a 1-D A stay on the reference kernel.
  if (b == nullptr || b->rank() != 2 || aSizes.size() < 2) return std::unique_ptr<Step>();
  const int64_t k = b->size(0), n = b->size(1);
  if (aSizes.back() != k) {
    return makeError(ErrorCode::ShapeMismatch, "QLinearMatMul: A [{}] and B [{},{}] have inner dimensions {} and {}",
                     fmt::join(aSizes, ","), k, n, aSizes.back(), k);
  }
  int64_t rows = 1;
  for (size_t i = 0; i + 1 < aSizes.size(); ++i) rows *= aSizes[i];
  if (rows == 0 || k == 0 || n == 0) return std::unique_ptr<Step>();
  std::optional<QLinearParams> params = readQLinearParams(ctx, n);
  std::optional<std::vector<int32_t>> bias = readBias(ctx, n);
  if (!params || !bias) return std::unique_ptr<Step>();
  DequantizedEpilogue epilogue;
  if (toFloat) {
    TESSEL_ASSIGN_OR_RETURN(std::optional<DequantizedEpilogue> read, readDequantizedEpilogue(ctx, n));
    if (!read) return std::unique_ptr<Step>();
    epilogue = std::move(*read);
  }
  const GemmShape shape{rows, n, k};

  const S8GemmKernel *s8Kernel = selectedS8GemmKernel();
  if (s8Kernel != nullptr && k <= kS8GemmMaxK) {
    TESSEL_ASSIGN_OR_RETURN(const std::byte *packed,
                            ctx.packed(fmt::format("b_packed_b.{}", s8Kernel->name), packedS8BSize(*s8Kernel, k, n),
                                       [&](std::byte *dst) {
                                         packS8BInto(*s8Kernel, k, n, b->rawData(), params->wSigned,
                                                     params->wZero.data(), dst);
                                       }));
    ctx.releaseConstantInput(kW);
    return std::unique_ptr<Step>(std::make_unique<QLinearMatMulStep>(shape, s8Kernel, nullptr, packed,
                                                                     std::move(*params), std::move(*bias),
                                                                     std::max(ctx.threads(), 1), toFloat,
                                                                     std::move(epilogue)));
  }
  const GemmKernel &kernel = selectedGemmKernel();
  const std::vector<float> centred = centredWeights(*b, params->wZero, /*perOutput=*/0);
  TESSEL_ASSIGN_OR_RETURN(const std::byte *packed,
                          ctx.packed(fmt::format("b_centred_packed_b.{}", kernel.name), packedBSize(kernel, k, n),
                                     [&](std::byte *dst) {
                                       packBInto(kernel, k, n, centred.data(), n, reinterpret_cast<float *>(dst));
                                     }));
  ctx.releaseConstantInput(kW);
  return std::unique_ptr<Step>(std::make_unique<QLinearMatMulStep>(shape, nullptr, &kernel, packed, std::move(*params),
                                                                   std::move(*bias), std::max(ctx.threads(), 1),
                                                                   toFloat, std::move(epilogue)));
}

Expected<std::unique_ptr<Step>> lowerQLinearMatMul(LowerContext &ctx) { return lowerQLinearProduct(ctx, false); }

Expected<std::unique_ptr<Step>> lowerQLinearMatMulToFloat(LowerContext &ctx) {
  return lowerQLinearProduct(ctx, true);
}

}  // namespace tessel::cpu
