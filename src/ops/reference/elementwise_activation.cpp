// Reference kernels of the activation functions: Relu, LeakyRelu, PRelu (slope broadcast to the
// input), Sigmoid, HardSigmoid, HardSwish, Elu, Selu, Celu, Softplus, Mish, Softsign, ThresholdedRelu and
// Shrink. Each reads its attributes with the ONNX defaults and computes floats in double.
#include <algorithm>
#include <functional>

#include "ops/reference/elementwise_common.h"

namespace tessel::ref {

using namespace elementwise;

namespace {

/// out = fn(x) computed in double, for input dtypes in `Set`.
template <unsigned Set = kFloats, class Fn>
Status activation(KernelContext &ctx, Fn fn) {
  const Tensor &x = ctx.tensor(0);
  return dispatch<Set>(ctx, x.dtype(), [&]<class T>(TypeTag<T>) -> Status {
    ctx.setOutput(0, mapUnary<T, T>(x, viaDouble(fn)));
    return Status::success();
  });
}

double attr(const KernelContext &ctx, const char *name, float fallback) {
  return static_cast<double>(ctx.node().attrFloat(name, fallback));
}

}  // namespace

Status refRelu(KernelContext &ctx) {
  // Integers (opset 14) stay exact in double only up to 2^53, so they get their own path.
  const Tensor &x = ctx.tensor(0);
  return dispatch<kFloats | kSigned>(ctx, x.dtype(), [&]<class T>(TypeTag<T>) -> Status {
    if constexpr (kIsInt<T>) {
      ctx.setOutput(0, mapUnary<T, T>(x, [](T v) { return v < 0 ? T(0) : v; }));
    } else {
      ctx.setOutput(0, mapUnary<T, T>(x, viaDouble([](double v) { return v < 0 ? 0.0 : v; })));
    }
    return Status::success();
  });
}

Status refLeakyRelu(KernelContext &ctx) {
  const double alpha = attr(ctx, "alpha", 0.01f);
  return activation(ctx, [=](double x) { return x < 0 ? alpha * x : x; });
}

Status refPRelu(KernelContext &ctx) {
  TESSEL_RETURN_IF_ERROR(expectSameDType(ctx, 0, 1));
  const Tensor &x = ctx.tensor(0);
  Tensor slope = ctx.tensor(1);
  if (ctx.opset() < 7 && slope.numel() > 1 && slope.rank() < x.rank()) {
    // Before unidirectional broadcasting (opset 7), a slope of fewer dims is per channel (axis 1).
    std::vector<int64_t> sizes(x.rank() - 1, 1);
    std::copy(slope.sizes().begin(), slope.sizes().end(), sizes.begin());
    slope = slope.reshaped(sizes);
  }
  TESSEL_ASSIGN_OR_RETURN(std::vector<int64_t> sizes, broadcastShapes({x.sizes(), slope.sizes()}));
  if (sizes != x.sizes()) {
    return makeError(ErrorCode::ShapeMismatch, "PRelu slope {} does not broadcast to the input's shape {}",
                     formatSizes(slope.sizes()), formatSizes(x.sizes()));
  }
  return dispatch<kFloats | kInts>(ctx, x.dtype(), [&]<class T>(TypeTag<T>) -> Status {
    return setResult(ctx, mapBinary<T, T, T>(x, slope, [](T v, T s) -> T {
                       if constexpr (kIsInt<T>) {
                         return v < 0 ? wrapping(v, s, std::multiplies<>()) : v;
                       } else {
                         double d = toDouble(v);
                         return d < 0 ? roundFromDouble<T>(d * toDouble(s)) : v;
                       }
                     }));
  });
}

Status refSigmoid(KernelContext &ctx) {
  return activation(ctx, [](double x) { return 1.0 / (1.0 + std::exp(-x)); });
}

Status refHardSigmoid(KernelContext &ctx) {
  const double alpha = attr(ctx, "alpha", 0.2f);
  const double beta = attr(ctx, "beta", 0.5f);
  return activation(ctx, [=](double x) { return std::clamp(alpha * x + beta, 0.0, 1.0); });
}

Status refHardSwish(KernelContext &ctx) {
  return activation(ctx, [](double x) { return x * std::clamp(x / 6.0 + 0.5, 0.0, 1.0); });
}

Status refElu(KernelContext &ctx) {
  const double alpha = attr(ctx, "alpha", 1.0f);
  return activation(ctx, [=](double x) { return x < 0 ? alpha * std::expm1(x) : x; });
}

Status refSelu(KernelContext &ctx) {
  const double alpha = attr(ctx, "alpha", 1.67326319217681884765625f);
  const double gamma = attr(ctx, "gamma", 1.05070102214813232421875f);
  return activation(ctx, [=](double x) { return gamma * (x <= 0 ? alpha * std::expm1(x) : x); });
}

Status refCelu(KernelContext &ctx) {
  const double alpha = attr(ctx, "alpha", 1.0f);
  if (alpha == 0.0) return makeError(ErrorCode::InvalidArgument, "Celu alpha must be nonzero");
  return activation(ctx, [=](double x) { return std::max(0.0, x) + std::min(0.0, alpha * std::expm1(x / alpha)); });
}

Status refSoftplus(KernelContext &ctx) {
  // log(1 + e^x), arranged so that large |x| neither overflows nor loses the small term.
  return activation(ctx, [](double x) { return x > 0 ? x + std::log1p(std::exp(-x)) : std::log1p(std::exp(x)); });
}

Status refMish(KernelContext &ctx) {
  // x * tanh(softplus(x)) (opset 18), with softplus arranged as in refSoftplus.
  return activation(ctx, [](double x) { return x * std::tanh(x > 0 ? x + std::log1p(std::exp(-x)) : std::log1p(std::exp(x))); });
}

Status refSoftsign(KernelContext &ctx) {
  return activation(ctx, [](double x) { return x / (1.0 + std::fabs(x)); });
}

Status refThresholdedRelu(KernelContext &ctx) {
  const double alpha = attr(ctx, "alpha", 1.0f);
  return activation(ctx, [=](double x) { return x > alpha ? x : 0.0; });
}

Status refShrink(KernelContext &ctx) {
  const double bias = attr(ctx, "bias", 0.0f);
  const double lambd = attr(ctx, "lambd", 0.5f);
  return activation<kNumbers>(ctx, [=](double x) { return x < -lambd ? x + bias : x > lambd ? x - bias : 0.0; });
}

}  // namespace tessel::ref
