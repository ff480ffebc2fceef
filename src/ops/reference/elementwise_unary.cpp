// Reference kernels of the unary math ops: Abs, Neg, Sign (any numeric type, integers in their own
// type), rounding, roots, exponentials, trigonometric and hyperbolic functions and Erf (computed in
// double, rounded once), and the IsNaN / IsInf predicates.
#include <functional>

#include "ops/reference/elementwise_common.h"

namespace tessel::ref {

using namespace elementwise;

namespace {

/// out = fn(x) with the input's dtype, for dtypes in `Set`; fn is generic over the element type.
template <unsigned Set, class Fn>
Status unary(KernelContext &ctx, Fn fn) {
  const Tensor &x = ctx.tensor(0);
  return dispatch<Set>(ctx, x.dtype(), [&]<class T>(TypeTag<T>) -> Status {
    ctx.setOutput(0, mapUnary<T, T>(x, [&](T v) -> T { return fn(v); }));
    return Status::success();
  });
}

/// A double -> double function on floating-point tensors.
template <class Fn>
Status unaryFloat(KernelContext &ctx, Fn fn) {
  return unary<kFloats>(ctx, viaDouble(fn));
}

/// Bool output of a predicate on floating-point tensors.
template <class Fn>
Status floatPredicate(KernelContext &ctx, Fn fn) {
  const Tensor &x = ctx.tensor(0);
  return dispatch<kFloats>(ctx, x.dtype(), [&]<class T>(TypeTag<T>) -> Status {
    ctx.setOutput(0, mapUnary<T, bool>(x, [&](T v) { return fn(toDouble(v)); }));
    return Status::success();
  });
}

}  // namespace

Status refAbs(KernelContext &ctx) {
  return unary<kNumbers>(ctx, []<class T>(T x) -> T {
    if constexpr (kIsFloat<T>) {
      return roundFromDouble<T>(std::fabs(toDouble(x)));
    } else if constexpr (std::is_signed_v<T>) {
      return x < 0 ? wrapping(T(0), x, std::minus<>()) : x;
    } else {
      return x;
    }
  });
}

Status refNeg(KernelContext &ctx) {
  return unary<kFloats | kSigned>(ctx, []<class T>(T x) -> T {
    if constexpr (kIsFloat<T>) {
      return roundFromDouble<T>(-toDouble(x));
    } else {
      return wrapping(T(0), x, std::minus<>());
    }
  });
}

Status refSign(KernelContext &ctx) {
  return unary<kNumbers>(ctx, []<class T>(T x) -> T {
    if constexpr (kIsFloat<T>) {
      double v = toDouble(x);
      return std::isnan(v) ? x : roundFromDouble<T>((v > 0) - (v < 0));
    } else if constexpr (std::is_signed_v<T>) {
      return static_cast<T>((x > 0) - (x < 0));
    } else {
      return static_cast<T>(x != 0);
    }
  });
}

Status refErf(KernelContext &ctx) {
  return unary<kNumbers>(ctx, viaDouble([](double x) { return std::erf(x); }));
}

// Float-only unary functions, one line each: name and expression of the double `x`.
#define TESSEL_FLOAT_UNARY(Name, expression) \
  Status ref##Name(KernelContext &ctx) { return unaryFloat(ctx, [](double x) { return expression; }); }

TESSEL_FLOAT_UNARY(Ceil, std::ceil(x))
TESSEL_FLOAT_UNARY(Floor, std::floor(x))
TESSEL_FLOAT_UNARY(Round, std::nearbyint(x))  // The default rounding mode: halves to even.
TESSEL_FLOAT_UNARY(Sqrt, std::sqrt(x))
TESSEL_FLOAT_UNARY(Reciprocal, 1.0 / x)
TESSEL_FLOAT_UNARY(Exp, std::exp(x))
TESSEL_FLOAT_UNARY(Log, std::log(x))
TESSEL_FLOAT_UNARY(Sin, std::sin(x))
TESSEL_FLOAT_UNARY(Cos, std::cos(x))
TESSEL_FLOAT_UNARY(Tan, std::tan(x))
TESSEL_FLOAT_UNARY(Asin, std::asin(x))
TESSEL_FLOAT_UNARY(Acos, std::acos(x))
TESSEL_FLOAT_UNARY(Atan, std::atan(x))
TESSEL_FLOAT_UNARY(Sinh, std::sinh(x))
TESSEL_FLOAT_UNARY(Cosh, std::cosh(x))
TESSEL_FLOAT_UNARY(Tanh, std::tanh(x))
TESSEL_FLOAT_UNARY(Asinh, std::asinh(x))
TESSEL_FLOAT_UNARY(Acosh, std::acosh(x))
TESSEL_FLOAT_UNARY(Atanh, std::atanh(x))

#undef TESSEL_FLOAT_UNARY

Status refIsNaN(KernelContext &ctx) {
  return floatPredicate(ctx, [](double x) { return std::isnan(x); });
}

Status refIsInf(KernelContext &ctx) {
  const bool positive = ctx.node().attrInt("detect_positive", 1) != 0;
  const bool negative = ctx.node().attrInt("detect_negative", 1) != 0;
  return floatPredicate(ctx, [=](double x) { return std::isinf(x) && (x > 0 ? positive : negative); });
}

}  // namespace tessel::ref
