// cpu lowering of the quantization ops: QuantizeLinear and DequantizeLinear (per tensor or per
// axis, constant parameters) on the loops of kernels/quantize.h, and the dynamic-quantization ops
// (what onnxruntime's quantize_dynamic writes): DynamicQuantizeLinear on the two-pass loop of kernels/quantize.h, MatMulInteger on the int8
// GEMM (kernels/gemm_s8.h) where the host has one and K is within its int32 bound, group-1
// ConvInteger there too as the transposed product (kernels/conv_s8.h: patches times W^T, the
// weights packed once as the GEMM's B), and otherwise (no VNNI, K past the bound, grouped and
// depthwise convolutions) ConvInteger and MatMulInteger on the f32 convolution and GEMM kernels.
//
// The integer products run in float32 and are still exact: the operands, with their zero points
// subtracted, are integers of magnitude at most 255, so every product is exact, and every partial
// sum of output element j is an integer bounded by maxAbsX * L1(w'_j), the sum of the magnitudes
// of the centred weights that feed it. When that bound is below 2^24 for every output (checked at
// lowering, from the constant weights' actual values), no addition rounds, in whatever order the
// kernel adds, and the float result converted to int32 is the reference's bit for bit. Weights
// whose bound reaches 2^24 are split as high * 2^s + low, each part's sums exact, and run as two
// products whose int32 results combine exactly (a node no split makes exact, which needs
// thousands of large weights per output, stays on the reference kernel).
//
// At lowering the weights are centred, converted to float and packed once (raw constant
// released); each run centres the u8/s8 activations into float in the step's scratch, runs the
// f32 kernel with the output buffer as its f32 result, and converts that buffer to int32 in place.
// ConvInteger keeps NCHW (assign-layout leaves it channels-first): the im2col/1x1 GEMM with the
// weights as A (kernels/conv.h), or the direct depthwise kernel. Covered: u8/s8 X and W, 1-D and
// 2-D, constant W and w_zero_point (scalar or per output channel), x_zero_point constant or fed
// (one value). MatMulInteger: constant 2-D B and b_zero_point (scalar or per column), A of any
// rank folded into one product on the int8 or f32 GEMM with B packed once, a_zero_point constant
// or fed (one value, or one per row of A).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <optional>
#include <vector>

#include <fmt/format.h>

#include "ops/reference/nn_common.h"
#include "targets/cpu/kernels/conv.h"
#include "targets/cpu/kernels/conv_s8.h"
#include "targets/cpu/kernels/depthwise_conv.h"
#include "targets/cpu/kernels/elementwise.h"
#include "targets/cpu/kernels/gemm.h"
#include "targets/cpu/kernels/gemm_s8.h"
#include "targets/cpu/kernels/quantize.h"
#include "targets/cpu/ops/conv_geometry.h"
#include "targets/cpu/step.h"

namespace tessel::cpu {
namespace {

// Below this every integer is a float32 and so is the sum of two of them.
constexpr double kExactFloatSums = 16777216.0;  // 2^24

std::string formatSizes(const std::vector<int64_t> &sizes) { return fmt::format("[{}]", fmt::join(sizes, ",")); }

int64_t product(const std::vector<int64_t> &sizes) {
  return std::accumulate(sizes.begin(), sizes.end(), int64_t{1}, std::multiplies<>());
}

/// The largest |v - zeroPoint| over the values v of `dtype` (u8 or i8) and the zero points of a
/// constant tensor (one value or several), or for any zero point of that type when it is fed.
double maxCentredMagnitude(DType dtype, const Tensor *constantZeroPoint, bool fedZeroPoint) {
  const double lo = dtype == DType::Int8 ? -128.0 : 0.0, hi = dtype == DType::Int8 ? 127.0 : 255.0;
  if (fedZeroPoint) return hi - lo;
  if (constantZeroPoint == nullptr) return std::max(-lo, hi);
  double magnitude = 0.0;
  for (int64_t i = 0; i < constantZeroPoint->numel(); ++i) {
    const double zero = constantZeroPoint->scalarAsDouble(i);
    magnitude = std::max({magnitude, zero - lo, hi - zero});
  }
  return magnitude;
}

/// Where the zero point of an activation comes from at run time: one value, or (MatMulInteger)
/// one per row of A, the rows of a folded batch repeating them.
struct ActivationZeroPoint {
  std::vector<float> constant{0.0f};  // When not fed.
  int input = -1;                     // A fed zero point's input slot, or -1.
  int64_t count = 1;                  // Values: 1, or one per row.
  bool isSigned = false;

  float resolve(const StepIo &io, int64_t row = 0) const {
    const size_t i = size_t(row % count);
    if (input < 0) return constant[i];
    const void *p = io.inputs[size_t(input)];
    return isSigned ? float(static_cast<const int8_t *>(p)[i]) : float(static_cast<const uint8_t *>(p)[i]);
  }
};

/// Reads the activation zero point of input `index` (absent, constant or fed; one value, or a
/// 1-D tensor of `rowValues` values when that is above 1) into `zero`; false when it is none of
/// those or not of X's type (the reference kernel then runs the node and reports it).
bool readActivationZeroPoint(const LowerContext &ctx, size_t index, DType xType, ActivationZeroPoint &zero,
                             int64_t rowValues = 1) {
  zero.isSigned = xType == DType::Int8;
  if (ctx.numInputs() <= index || !ctx.hasInput(index)) return true;
  const std::vector<int64_t> sizes = ctx.inputSizes(index);
  const bool perRow = rowValues > 1 && sizes == std::vector<int64_t>{rowValues};
  if (ctx.inputDType(index) != xType || (product(sizes) != 1 && !perRow)) return false;
  zero.count = perRow ? rowValues : 1;
  if (const Tensor *t = ctx.constantInput(index)) {
    zero.constant.resize(size_t(zero.count));
    for (int64_t i = 0; i < zero.count; ++i) zero.constant[size_t(i)] = float(t->scalarAsDouble(i));
  } else {
    zero.input = int(index);
  }
  return true;
}

/// The constant weight zero points of input `index` as one value per output (`outputs` of them;
/// every value the same for a one-value tensor), or an empty vector when the input is fed, of
/// another type than W, or not one of those shapes.
std::vector<double> readWeightZeroPoints(const LowerContext &ctx, size_t index, DType wType, int64_t outputs,
                                         bool *covered) {
  *covered = true;
  std::vector<double> zero(size_t(outputs), 0.0);
  if (ctx.numInputs() <= index || !ctx.hasInput(index)) return zero;
  const Tensor *t = ctx.constantInput(index);
  if (t == nullptr || t->dtype() != wType || (t->numel() != 1 && t->numel() != outputs)) {
    *covered = false;
    return {};
  }
  for (int64_t j = 0; j < outputs; ++j) zero[size_t(j)] = t->scalarAsDouble(t->numel() == 1 ? 0 : j);
  return zero;
}

/// Centred constant weights as the f32 operands of an exact product: whole (`shift` 0, `low`
/// empty), or split as high * 2^shift + low, both parts integers, when the whole operand's sums
/// could reach 2^24 and each part's cannot (twice the arithmetic, still exact).
struct ExactWeights {
  int shift = 0;
  std::vector<float> high, low;
};

/// Splits `centred` (element i feeds output (i / block) % outputs) as ExactWeights, the smallest
/// shift first, so that maxAbsX * the largest per-output sum of |part| stays below 2^24; nullopt
/// when no shift up to 7 does.
std::optional<ExactWeights> exactWeights(const std::vector<double> &centred, int64_t outputs, int64_t block,
                                         double maxAbsX) {
  auto exact = [&](const std::vector<double> &part) {
    std::vector<double> l1(size_t(outputs), 0.0);
    for (size_t i = 0; i < part.size(); ++i) l1[(i / size_t(block)) % size_t(outputs)] += std::fabs(part[i]);
    return maxAbsX * *std::max_element(l1.begin(), l1.end()) < kExactFloatSums;
  };
  auto toFloats = [](const std::vector<double> &part) { return std::vector<float>(part.begin(), part.end()); };
  if (exact(centred)) return ExactWeights{0, toFloats(centred), {}};
  for (int shift = 1; shift < 8; ++shift) {
    const double unit = std::ldexp(1.0, shift);
    std::vector<double> high(centred.size()), low(centred.size());
    for (size_t i = 0; i < centred.size(); ++i) {
      high[i] = std::nearbyint(centred[i] / unit);
      low[i] = centred[i] - high[i] * unit;  // In [-unit / 2, unit / 2].
    }
    if (exact(high) && exact(low)) return ExactWeights{shift, toFloats(high), toFloats(low)};
  }
  return std::nullopt;
}

/// Runs `product(weights, sums)` (the f32 sums of the centred activations times one weight
/// operand) with the whole or high weights into the output buffer `y` and, when split, with the
/// low weights into `lowSums`; then turns y into the int32 results in place.
template <class Product>
void runExactProducts(const float *high, const float *low, int shift, std::byte *y, float *lowSums, int64_t count,
                      ThreadPool *pool, const Product &product) {
  const QuantizeKernels &q = quantizeKernels();
  product(high, reinterpret_cast<float *>(y));
  if (low == nullptr) {
    int32FromFloat(q, y, count, pool);
  } else {
    product(low, lowSums);
    int32FromSplitSums(q, y, lowSums, shift, count, pool);
  }
}

// ---- ConvInteger ----------------------------------------------------------------------------

constexpr size_t kConvX = 0, kConvW = 1, kConvXZero = 2, kConvWZero = 3;

class ConvIntegerStep final : public Step {
 public:
  /// `plan` null: the depthwise kernel. `low` null: the weights are not split.
  ConvIntegerStep(const Conv2dShape &shape, const ConvGemmPlan *plan, const float *high, const float *low, int shift,
                  const ActivationZeroPoint &xZero)
      : shape_(shape), depthwise_(plan == nullptr), high_(high), low_(low), shift_(shift), xZero_(xZero) {
    if (plan != nullptr) plan_ = *plan;
    centredBytes_ = alignScratchBytes(size_t(inputCount()) * sizeof(float));
    lowSumsBytes_ = low_ != nullptr ? alignScratchBytes(size_t(outputCount()) * sizeof(float)) : 0;
  }

  Status run(const StepIo &io) const override {
    auto *scratch = static_cast<std::byte *>(io.scratch);
    auto *centred = reinterpret_cast<float *>(scratch);
    centerQuantized(quantizeKernels(), io.inputs[kConvX], xZero_.isSigned, xZero_.resolve(io), centred, inputCount(),
                    io.pool);
    // The f32 sums land in the output buffer, then become int32 there.
    runExactProducts(high_, low_, shift_, static_cast<std::byte *>(io.outputs[0]),
                     reinterpret_cast<float *>(scratch + centredBytes_), outputCount(), io.pool,
                     [&](const float *weights, float *sums) {
                       if (depthwise_) {
                         depthwiseConv2d(shape_, centred, weights, {}, sums, io.pool);
                       } else {
                         convGemm(plan_, centred, weights, {}, sums, scratch + centredBytes_ + lowSumsBytes_, io.pool);
                       }
                     });
    return Status::success();
  }
  size_t scratchBytes() const override {
    return centredBytes_ + lowSumsBytes_ + (depthwise_ ? 0 : convGemmScratchBytes(plan_));
  }
  std::string kernelName() const override {
    return fmt::format("conv_integer_as_f32{} {}", low_ != nullptr ? "_split" : "",
                       depthwise_ ? depthwiseConvKernelName() : convGemmKernelName(plan_));
  }

 private:
  int64_t inputCount() const { return shape_.batch * shape_.inChannels * shape_.inPlane(); }
  int64_t outputCount() const { return shape_.batch * shape_.outChannels * shape_.outPlane(); }

  Conv2dShape shape_;
  bool depthwise_;
  ConvGemmPlan plan_;
  const float *high_, *low_;
  int shift_;
  ActivationZeroPoint xZero_;
  size_t centredBytes_ = 0, lowSumsBytes_ = 0;
};

/// A group-1 ConvInteger on the int8 GEMM: its output stays NCHW int32.
class ConvIntegerS8Step final : public Step {
 public:
  ConvIntegerS8Step(const ConvS8Plan &plan, const std::byte *packed, const ActivationZeroPoint &xZero)
      : plan_(plan), packed_(packed), xZero_(xZero) {}

  Status run(const StepIo &io) const override {
    convS8(plan_, io.inputs[kConvX], xZero_.isSigned, int32_t(xZero_.resolve(io)), packed_,
           io.outputs[0], /*requantize=*/nullptr, io.pool,
           {static_cast<std::byte *>(io.scratch), convS8ScratchBytes(plan_)});
    return Status::success();
  }
  size_t scratchBytes() const override { return convS8ScratchBytes(plan_); }
  std::string kernelName() const override {
    return fmt::format("conv_integer {}{}", plan_.kernel->name, plan_.direct ? " 1x1" : " patches");
  }

 private:
  ConvS8Plan plan_;
  const std::byte *packed_;
  ActivationZeroPoint xZero_;
};

/// Packs the constant W and its zero points as the int8 GEMM's B and returns its step.
Expected<std::unique_ptr<Step>> lowerConvIntegerOnS8Gemm(LowerContext &ctx, const ConvS8Plan &plan,
                                                       const std::vector<double> &wZero,
                                                       const ActivationZeroPoint &xZero) {
  const Tensor &w = *ctx.constantInput(kConvW);
  const std::vector<int32_t> zeroPoints(wZero.begin(), wZero.end());
  TESSEL_ASSIGN_OR_RETURN(const std::byte *packed,
                          ctx.packed(fmt::format("weights_packed_b.{}", plan.kernel->name),
                                     convS8PackedWeightsBytes(plan), [&](std::byte *dst) {
                                       packConvS8Weights(plan, w.rawData(), w.dtype() == DType::Int8,
                                                         zeroPoints.data(), dst);
                                     }));
  ctx.releaseConstantInput(kConvW);
  return std::unique_ptr<Step>(std::make_unique<ConvIntegerS8Step>(plan, packed, xZero));
}

}  // namespace

Expected<std::unique_ptr<Step>> lowerConvInteger(LowerContext &ctx) {
  if (ctx.numInputs() < 2 || !ctx.hasInput(kConvX) || !ctx.hasInput(kConvW)) {
    return makeError(ErrorCode::InvalidModel, "ConvInteger: needs inputs x and w; got {} inputs", ctx.numInputs());
  }
  const DType xType = ctx.inputDType(kConvX), wType = ctx.inputDType(kConvW);
  const Tensor *w = ctx.constantInput(kConvW);
  const size_t rank = ctx.inputSizes(kConvX).size();
  // 3-D convolutions, fed weights and other types are left to the reference kernel.
  if (!isQuantized8Bit(xType) || !isQuantized8Bit(wType) || ctx.outputDType(0) != DType::Int32 || w == nullptr ||
      rank < 3 || rank > 4) {
    return std::unique_ptr<Step>();
  }
  ActivationZeroPoint xZero;
  if (!readActivationZeroPoint(ctx, kConvXZero, xType, xZero)) return std::unique_ptr<Step>();
  TESSEL_ASSIGN_OR_RETURN(Conv2dShape shape, readQuantizedConvShape(ctx, kConvX, kConvW, "ConvInteger"));
  if (shape.batch == 0 || shape.inChannels == 0 || shape.outChannels == 0) return std::unique_ptr<Step>();
  bool covered = false;
  const std::vector<double> wZero = readWeightZeroPoints(ctx, kConvWZero, wType, shape.outChannels, &covered);
  if (!covered) return std::unique_ptr<Step>();
  const S8GemmKernel *s8Kernel = selectedS8GemmKernel();
  if (s8Kernel != nullptr && shape.group == 1 && shape.columnRows() <= kS8GemmMaxK) {
    return lowerConvIntegerOnS8Gemm(ctx, planConvS8(shape, *s8Kernel), wZero, xZero);
  }

  // W [Cout, Cin/g, KH, KW] centred per output channel.
  const int64_t perFilter = shape.columnRows();
  std::vector<double> centred(size_t(shape.outChannels * perFilter));
  for (size_t i = 0; i < centred.size(); ++i) centred[i] = w->scalarAsDouble(int64_t(i)) - wZero[i / size_t(perFilter)];
  const double xMagnitude =
      maxCentredMagnitude(xType, ctx.constantInput(kConvXZero), /*fedZeroPoint=*/xZero.input >= 0);
  const std::optional<ExactWeights> weights = exactWeights(centred, shape.outChannels, perFilter, xMagnitude);
  if (!weights) return std::unique_ptr<Step>();

  const bool depthwise = isDepthwise(shape);
  const ConvGemmPlan plan = depthwise ? ConvGemmPlan{} : planConvGemm(shape, ctx.threads());
  auto store = [&](const std::vector<float> &part, std::string_view name) -> Expected<const float *> {
    if (part.empty()) return static_cast<const float *>(nullptr);
    if (depthwise) {
      const size_t bytes = part.size() * sizeof(float);
      TESSEL_ASSIGN_OR_RETURN(const std::byte *stored,
                              ctx.packed(fmt::format("depthwise_weights_{}", name), alignScratchBytes(bytes),
                                         [&](std::byte *dst) { std::memcpy(dst, part.data(), bytes); }));
      return reinterpret_cast<const float *>(stored);
    }
    TESSEL_ASSIGN_OR_RETURN(const std::byte *packed,
                            ctx.packed(fmt::format("weights_{}_packed_a.{}", name, plan.kernel->name),
                                       convPackedWeightsBytes(plan), [&](std::byte *dst) {
                                         packConvWeights(plan, part.data(), reinterpret_cast<float *>(dst));
                                       }));
    return reinterpret_cast<const float *>(packed);
  };
  TESSEL_ASSIGN_OR_RETURN(const float *high, store(weights->high, "high"));
  TESSEL_ASSIGN_OR_RETURN(const float *low, store(weights->low, "low"));
  ctx.releaseConstantInput(kConvW);
  return std::unique_ptr<Step>(
      std::make_unique<ConvIntegerStep>(shape, depthwise ? nullptr : &plan, high, low, weights->shift, xZero));
}

// ---- MatMulInteger --------------------------------------------------------------------------

namespace {

constexpr size_t kMatA = 0, kMatB = 1, kMatAZero = 2, kMatBZero = 3;
// Elements per task when A is centred row by row.
constexpr int64_t kCentreGrain = 16384;

/// Y[rows, n] = A'[rows, k] x B'[k, n] on the f32 GEMM with B' packed; A's leading dims are
/// folded into the rows.
class MatMulIntegerStep final : public Step {
 public:
  /// `low` null: the weights are not split.
  MatMulIntegerStep(const GemmShape &shape, const GemmKernel &kernel, const float *high, const float *low, int shift,
                    const ActivationZeroPoint &aZero, int threads)
      : shape_(shape),
        kernel_(&kernel),
        high_(high),
        low_(low),
        shift_(shift),
        aZero_(aZero) {
    centredBytes_ = alignScratchBytes(size_t(shape_.m * shape_.k) * sizeof(float));
    lowSumsBytes_ = low != nullptr ? alignScratchBytes(size_t(shape_.m * shape_.n) * sizeof(float)) : 0;
    gemmBytes_ = sgemmScratchBytes(kernel, shape_, threads, {.a = false, .b = true});
  }

  Status run(const StepIo &io) const override {
    auto *scratch = static_cast<std::byte *>(io.scratch);
    auto *centred = reinterpret_cast<float *>(scratch);
    centerRows(io, centred);
    const std::span<std::byte> gemmScratch(scratch + centredBytes_ + lowSumsBytes_, gemmBytes_);
    runExactProducts(high_, low_, shift_, static_cast<std::byte *>(io.outputs[0]),
                     reinterpret_cast<float *>(scratch + centredBytes_), shape_.m * shape_.n, io.pool,
                     [&](const float *weights, float *sums) {
                       sgemmPacked(shape_, centred, shape_.k, PackedBView{kernel_, shape_.k, shape_.n, weights}, sums,
                                   shape_.n, {}, io.pool, gemmScratch);
                     });
    return Status::success();
  }
  size_t scratchBytes() const override { return centredBytes_ + lowSumsBytes_ + gemmBytes_; }
  std::string kernelName() const override {
    return fmt::format("matmul_integer_as_f32{} {}", low_ != nullptr ? "_split" : "", kernel_->name);
  }

 private:
  /// A minus its zero point into `centred`: one value over all of A, or one per row.
  void centerRows(const StepIo &io, float *centred) const {
    const QuantizeKernels &q = quantizeKernels();
    const void *a = io.inputs[kMatA];
    if (aZero_.count == 1) {
      centerQuantized(q, a, aZero_.isSigned, aZero_.resolve(io), centred, shape_.m * shape_.k, io.pool);
      return;
    }
    const int64_t k = shape_.k;
    parallelRanges(io.pool, shape_.m, std::max<int64_t>(1, kCentreGrain / k), [&](int64_t begin, int64_t end) {
      for (int64_t r = begin; r < end; ++r) {
        if (aZero_.isSigned) {
          q.centerS8(static_cast<const int8_t *>(a) + r * k, aZero_.resolve(io, r), centred + r * k, k);
        } else {
          q.centerU8(static_cast<const uint8_t *>(a) + r * k, aZero_.resolve(io, r), centred + r * k, k);
        }
      }
    });
  }

  GemmShape shape_;
  const GemmKernel *kernel_;
  const float *high_, *low_;
  int shift_;
  ActivationZeroPoint aZero_;
  size_t centredBytes_ = 0, lowSumsBytes_ = 0, gemmBytes_ = 0;
};

/// Y[rows, n] = (A - aZero)(B - bZero) on the int8 GEMM with B packed once (its zero points
/// folded in); A's leading dims are folded into the rows.
class MatMulIntegerS8Step final : public Step {
 public:
  MatMulIntegerS8Step(const GemmShape &shape, const PackedS8BView &b, const ActivationZeroPoint &aZero)
      : shape_(shape), b_(b), aZero_(aZero), zeroBytes_(alignScratchBytes(size_t(aZero.count) * sizeof(int32_t))) {}

  Status run(const StepIo &io) const override {
    auto *scratch = static_cast<std::byte *>(io.scratch);
    auto *zeroPoints = reinterpret_cast<int32_t *>(scratch);
    for (int64_t i = 0; i < aZero_.count; ++i) zeroPoints[i] = int32_t(aZero_.resolve(io, i));
    const S8GemmA a{io.inputs[kMatA], shape_.k, aZero_.isSigned, zeroPoints, aZero_.count};
    s8GemmPacked(shape_, a, b_, static_cast<int32_t *>(io.outputs[0]), shape_.n, io.pool,
                 {scratch + zeroBytes_, s8GemmScratchBytes(shape_)});
    return Status::success();
  }
  size_t scratchBytes() const override { return zeroBytes_ + s8GemmScratchBytes(shape_); }
  std::string kernelName() const override { return fmt::format("matmul_integer {}", b_.kernel->name); }

 private:
  GemmShape shape_;
  PackedS8BView b_;
  ActivationZeroPoint aZero_;
  size_t zeroBytes_;
};

/// Packs the constant B and its zero points for the int8 GEMM and returns its step.
Expected<std::unique_ptr<Step>> lowerMatMulIntegerOnS8Gemm(LowerContext &ctx, const S8GemmKernel &kernel,
                                                         const GemmShape &shape, const std::vector<double> &bZero,
                                                         const ActivationZeroPoint &aZero) {
  const Tensor &b = *ctx.constantInput(kMatB);
  const std::vector<int32_t> zeroPoints(bZero.begin(), bZero.end());
  TESSEL_ASSIGN_OR_RETURN(const std::byte *packed,
                          ctx.packed(fmt::format("b_packed_b.{}", kernel.name),
                                     packedS8BSize(kernel, shape.k, shape.n), [&](std::byte *dst) {
                                       packS8BInto(kernel, shape.k, shape.n, b.rawData(), b.dtype() == DType::Int8,
                                                   zeroPoints.data(), dst);
                                     }));
  ctx.releaseConstantInput(kMatB);
  return std::unique_ptr<Step>(
      std::make_unique<MatMulIntegerS8Step>(shape, PackedS8BView{&kernel, shape.k, shape.n, packed}, aZero));
}

}  // namespace

Expected<std::unique_ptr<Step>> lowerMatMulInteger(LowerContext &ctx) {
  if (ctx.numInputs() < 2 || !ctx.hasInput(kMatA) || !ctx.hasInput(kMatB)) {
    return makeError(ErrorCode::InvalidModel, "MatMulInteger: needs inputs A and B; got {} inputs", ctx.numInputs());
  }
  const DType aType = ctx.inputDType(kMatA), bType = ctx.inputDType(kMatB);
  const Tensor *b = ctx.constantInput(kMatB);
  const std::vector<int64_t> aSizes = ctx.inputSizes(kMatA), bSizes = ctx.inputSizes(kMatB);
  // Fed or batched B, a 0-D A and other types are left to the reference kernel.
  if (!isQuantized8Bit(aType) || !isQuantized8Bit(bType) || ctx.outputDType(0) != DType::Int32 || b == nullptr ||
      bSizes.size() != 2 || aSizes.empty()) {
    return std::unique_ptr<Step>();
  }
  const int64_t k = bSizes[0], n = bSizes[1];
  if (aSizes.back() != k) {
    return makeError(ErrorCode::ShapeMismatch, "MatMulInteger: A {} and B {} have inner dimensions {} and {}",
                     formatSizes(aSizes), formatSizes(bSizes), aSizes.back(), k);
  }
  std::vector<int64_t> expectedOut(aSizes.begin(), aSizes.end() - 1);
  expectedOut.push_back(n);
  if (ctx.outputSizes(0) != expectedOut) {
    return makeError(ErrorCode::ShapeMismatch, "MatMulInteger: output is {}; A {} and B {} give {}",
                     formatSizes(ctx.outputSizes(0)), formatSizes(aSizes), formatSizes(bSizes),
                     formatSizes(expectedOut));
  }
  const int64_t rows = product(aSizes) / std::max<int64_t>(k, 1);
  if (rows == 0 || k == 0 || n == 0) return std::unique_ptr<Step>();
  // a_zero_point: one value, or (A of rank 2 or more) one per row of A's last matrix dim.
  ActivationZeroPoint aZero;
  const int64_t aRows = aSizes.size() >= 2 ? aSizes[aSizes.size() - 2] : 1;
  if (!readActivationZeroPoint(ctx, kMatAZero, aType, aZero, aRows)) return std::unique_ptr<Step>();
  // b_zero_point: one value or one per column ([n] or [1, n]); other shapes stay on the reference.
  if (ctx.numInputs() > kMatBZero && ctx.hasInput(kMatBZero)) {
    const std::vector<int64_t> zSizes = ctx.inputSizes(kMatBZero);
    if (product(zSizes) != 1 && (zSizes.empty() || zSizes.back() != n || product(zSizes) != n)) {
      return std::unique_ptr<Step>();
    }
  }
  bool covered = false;
  const std::vector<double> bZero = readWeightZeroPoints(ctx, kMatBZero, bType, n, &covered);
  if (!covered) return std::unique_ptr<Step>();
  const S8GemmKernel *s8Kernel = selectedS8GemmKernel();
  if (s8Kernel != nullptr && k <= kS8GemmMaxK) {
    return lowerMatMulIntegerOnS8Gemm(ctx, *s8Kernel, GemmShape{rows, n, k}, bZero, aZero);
  }

  // B [k, n] centred per column; element p * n + j feeds column j.
  std::vector<double> centred(size_t(k * n));
  for (size_t i = 0; i < centred.size(); ++i) centred[i] = b->scalarAsDouble(int64_t(i)) - bZero[i % size_t(n)];
  const double aMagnitude =
      maxCentredMagnitude(aType, ctx.constantInput(kMatAZero), /*fedZeroPoint=*/aZero.input >= 0);
  const std::optional<ExactWeights> weights = exactWeights(centred, n, /*block=*/1, aMagnitude);
  if (!weights) return std::unique_ptr<Step>();

  const GemmKernel &kernel = selectedGemmKernel();
  auto store = [&](const std::vector<float> &part, std::string_view name) -> Expected<const float *> {
    if (part.empty()) return static_cast<const float *>(nullptr);
    TESSEL_ASSIGN_OR_RETURN(const std::byte *packed,
                            ctx.packed(fmt::format("b_{}_packed_b.{}", name, kernel.name), packedBSize(kernel, k, n),
                                       [&](std::byte *dst) {
                                         packBInto(kernel, k, n, part.data(), n, reinterpret_cast<float *>(dst));
                                       }));
    return reinterpret_cast<const float *>(packed);
  };
  TESSEL_ASSIGN_OR_RETURN(const float *high, store(weights->high, "high"));
  TESSEL_ASSIGN_OR_RETURN(const float *low, store(weights->low, "low"));
  ctx.releaseConstantInput(kMatB);
  return std::unique_ptr<Step>(std::make_unique<MatMulIntegerStep>(GemmShape{rows, n, k}, kernel, high, low,
                                                                   weights->shift, aZero, std::max(ctx.threads(), 1)));
}

// ---- DynamicQuantizeLinear -----------------------------------------------------------------

namespace {

class DynamicQuantizeStep final : public Step {
 public:
  explicit DynamicQuantizeStep(int64_t count) : count_(count) {}

  Status run(const StepIo &io) const override {
    dynamicQuantizeU8(quantizeKernels(), static_cast<const float *>(io.inputs[0]), count_,
                      static_cast<uint8_t *>(io.outputs[0]), static_cast<float *>(io.outputs[1]),
                      static_cast<uint8_t *>(io.outputs[2]), static_cast<std::byte *>(io.scratch), io.pool);
    return Status::success();
  }
  size_t scratchBytes() const override { return dynamicQuantizeScratchBytes(); }
  std::string kernelName() const override { return fmt::format("dynamic_quantize_u8 {}", quantizeKernels().name); }

 private:
  int64_t count_;
};

}  // namespace

Expected<std::unique_ptr<Step>> lowerDynamicQuantizeLinear(LowerContext &ctx) {
  if (ctx.numInputs() < 1 || !ctx.hasInput(0) || ctx.node().outputs().size() != 3) {
    return makeError(ErrorCode::InvalidModel, "DynamicQuantizeLinear: needs input x and outputs y, y_scale, "
                     "y_zero_point; got {} inputs, {} outputs", ctx.numInputs(), ctx.node().outputs().size());
  }
  if (ctx.inputDType(0) != DType::Float32 || ctx.outputDType(0) != DType::UInt8 ||
      ctx.outputDType(1) != DType::Float32 || ctx.outputDType(2) != DType::UInt8) {
    return std::unique_ptr<Step>();
  }
  const int64_t count = product(ctx.inputSizes(0));
  if (ctx.outputSizes(0) != ctx.inputSizes(0) || product(ctx.outputSizes(1)) != 1 || product(ctx.outputSizes(2)) != 1) {
    return makeError(ErrorCode::ShapeMismatch, "DynamicQuantizeLinear: outputs {}, {}, {} for x {}; expected x's "
                     "shape and two scalars", formatSizes(ctx.outputSizes(0)), formatSizes(ctx.outputSizes(1)),
                     formatSizes(ctx.outputSizes(2)), formatSizes(ctx.inputSizes(0)));
  }
  return std::unique_ptr<Step>(std::make_unique<DynamicQuantizeStep>(count));
}

// ---- QuantizeLinear, DequantizeLinear --------------------------------------------------------

namespace {

/// One scale and zero point for the whole tensor, or one per index of `axis` (opset 13): the
/// tensor as [outer, channels, inner] runs of `inner` elements sharing a channel's parameters.
struct LinearQuantization {
  std::vector<float> scale, zeroPoint;
  int64_t outer = 1, channels = 1, inner = 1;
  bool isSigned = false;  // The quantized side is s8 (else u8).
};

/// Reads the constant scale (input 1) and zero point (input 2) of a QuantizeLinear or
/// DequantizeLinear over a tensor of `sizes` whose quantized side has type `quantized`; nullopt
/// (the reference kernel runs it) when they are fed or of other types or shapes.
std::optional<LinearQuantization> readLinearQuantization(const LowerContext &ctx, const std::vector<int64_t> &sizes,
                                                         DType quantized) {
  const Tensor *scale = ctx.constantInput(1);
  if (scale == nullptr || scale->dtype() != DType::Float32 || !isQuantized8Bit(quantized)) return std::nullopt;
  LinearQuantization q;
  q.isSigned = quantized == DType::Int8;
  q.inner = product(sizes);
  if (scale->numel() != 1) {
    int64_t axis = ctx.node().attrInt("axis", 1);
    if (axis < 0) axis += int64_t(sizes.size());
    if (ctx.opset() < 13 || scale->rank() != 1 || axis < 0 || axis >= int64_t(sizes.size()) ||
        scale->size(0) != sizes[size_t(axis)]) {
      return std::nullopt;
    }
    q.outer = product({sizes.begin(), sizes.begin() + axis});
    q.channels = sizes[size_t(axis)];
    q.inner = product({sizes.begin() + axis + 1, sizes.end()});
  }
  q.scale.assign(scale->data<float>(), scale->data<float>() + scale->numel());
  q.zeroPoint.assign(q.scale.size(), 0.0f);
  if (ctx.numInputs() > 2 && ctx.hasInput(2)) {
    const Tensor *zero = ctx.constantInput(2);
    if (zero == nullptr || zero->dtype() != quantized || zero->numel() != scale->numel()) return std::nullopt;
    for (int64_t i = 0; i < zero->numel(); ++i) q.zeroPoint[size_t(i)] = float(zero->scalarAsDouble(i));
  }
  for (float s : q.scale) {
    if (!(s > 0.0f) || !std::isfinite(s)) return std::nullopt;  // The reference reports or defines it.
  }
  return q;
}

/// QuantizeLinear (float32 -> u8/s8) or DequantizeLinear (u8/s8 -> float32), per tensor or per axis.
class LinearQuantizeStep final : public Step {
 public:
  LinearQuantizeStep(LinearQuantization q, bool dequantize) : q_(std::move(q)), dequantize_(dequantize) {}

  Status run(const StepIo &io) const override {
    const QuantizeKernels &k = quantizeKernels();
    const void *x = io.inputs[0];
    void *y = io.outputs[0];
    // One byte per quantized element, four per float.
    auto run = [&](int64_t offset, int64_t n, size_t c, ThreadPool *pool) {
      if (dequantize_) {
        dequantizeLinear(k, static_cast<const std::byte *>(x) + offset, q_.isSigned, q_.scale[c], q_.zeroPoint[c],
                         static_cast<float *>(y) + offset, n, pool);
      } else {
        quantizeLinear(k, static_cast<const float *>(x) + offset, q_.scale[c], q_.zeroPoint[c], q_.isSigned,
                       static_cast<std::byte *>(y) + offset, n, pool);
      }
    };
    if (q_.channels == 1) {
      run(0, q_.outer * q_.inner, 0, io.pool);
      return Status::success();
    }
    parallelRanges(io.pool, q_.outer * q_.channels, std::max<int64_t>(1, kCentreGrain / std::max<int64_t>(q_.inner, 1)),
                   [&](int64_t begin, int64_t end) {
                     for (int64_t r = begin; r < end; ++r) run(r * q_.inner, q_.inner, size_t(r % q_.channels), nullptr);
                   });
    return Status::success();
  }
  std::string kernelName() const override {
    return fmt::format("{}_{} {}", dequantize_ ? "dequantize" : "quantize", q_.isSigned ? "s8" : "u8",
                       quantizeKernels().name);
  }

 private:
  LinearQuantization q_;
  bool dequantize_;
};

}  // namespace

Expected<std::unique_ptr<Step>> lowerQuantizeLinear(LowerContext &ctx) {
  if (ctx.numInputs() < 2 || !ctx.hasInput(0) || !ctx.hasInput(1) || ctx.inputDType(0) != DType::Float32) {
    return std::unique_ptr<Step>();
  }
  std::optional<LinearQuantization> q = readLinearQuantization(ctx, ctx.inputSizes(0), ctx.outputDType(0));
  if (!q) return std::unique_ptr<Step>();
  return std::unique_ptr<Step>(std::make_unique<LinearQuantizeStep>(std::move(*q), /*dequantize=*/false));
}

Expected<std::unique_ptr<Step>> lowerDequantizeLinear(LowerContext &ctx) {
  if (ctx.numInputs() < 2 || !ctx.hasInput(0) || !ctx.hasInput(1) || ctx.outputDType(0) != DType::Float32) {
    return std::unique_ptr<Step>();
  }
  std::optional<LinearQuantization> q = readLinearQuantization(ctx, ctx.inputSizes(0), ctx.inputDType(0));
  if (!q) return std::unique_ptr<Step>();
  return std::unique_ptr<Step>(std::make_unique<LinearQuantizeStep>(std::move(*q), /*dequantize=*/true));
}

}  // namespace tessel::cpu
