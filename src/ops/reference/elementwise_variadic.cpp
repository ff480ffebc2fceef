// Reference kernels of the variadic reductions across inputs (Min, Max, Sum, Mean: all inputs
// broadcast together, folded left to right as numpy does) and of Clip, whose bounds are attributes
// before opset 11 and optional scalar inputs from then on.
#include <functional>
#include <limits>

#include "ops/reference/elementwise_common.h"

namespace tessel::ref {

using namespace elementwise;

namespace {

/// Folds all inputs with `fn(acc, next)` under broadcasting; `mean` divides by the input count.
template <unsigned Set, class Fn>
Status foldInputs(KernelContext &ctx, Fn fn, bool mean = false) {
  const size_t count = ctx.numInputs();
  if (count == 0) return makeError(ErrorCode::InvalidArgument, "{} needs at least one input", ctx.node().opType());
  for (size_t i = 0; i < count; ++i) {
    if (!ctx.hasInput(i)) return makeError(ErrorCode::InvalidArgument, "{} input {} is missing", ctx.node().opType(), i);
    TESSEL_RETURN_IF_ERROR(expectSameDType(ctx, 0, i));
  }
  return dispatch<Set>(ctx, ctx.tensor(0).dtype(), [&]<class T>(TypeTag<T>) -> Status {
    Tensor acc = ctx.tensor(0).clone();
    for (size_t i = 1; i < count; ++i) {
      TESSEL_ASSIGN_OR_RETURN(acc, (mapBinary<T, T, T>(acc, ctx.tensor(i), fn)));
    }
    if (mean) {
      const double n = static_cast<double>(count);
      acc = mapUnary<T, T>(acc, [n](T x) { return roundFromDouble<T>(toDouble(x) / n); });
    }
    ctx.setOutput(0, std::move(acc));
    return Status::success();
  });
}

/// The smaller (`pickSmaller`) or larger of two values; NaN wins, as in numpy's minimum/maximum.
template <bool pickSmaller>
struct Extremum {
  template <class T>
  T operator()(T x, T y) const {
    if constexpr (kIsFloat<T>) {
      if (std::isnan(toDouble(x))) return x;
      if (std::isnan(toDouble(y))) return y;
    }
    const bool yIsSmaller = widen(y) < widen(x);
    return yIsSmaller == pickSmaller ? y : x;
  }
};

/// The bound of Clip from input `i` (opset >= 11); absent leaves `bound` unchanged.
template <class T>
Status clipBoundInput(const KernelContext &ctx, size_t i, T &bound) {
  if (!ctx.hasInput(i)) return Status::success();
  TESSEL_RETURN_IF_ERROR(expectSameDType(ctx, 0, i));
  const Tensor &t = ctx.tensor(i);
  if (t.numel() != 1) {
    return makeError(ErrorCode::ShapeMismatch, "Clip {} must be a scalar; got shape {}", i == 1 ? "min" : "max",
                     formatSizes(t.sizes()));
  }
  bound = t.data<T>()[0];
  return Status::success();
}

}  // namespace

Status refMin(KernelContext &ctx) { return foldInputs<kNumbers>(ctx, Extremum</*pickSmaller=*/true>()); }
Status refMax(KernelContext &ctx) { return foldInputs<kNumbers>(ctx, Extremum</*pickSmaller=*/false>()); }

Status refSum(KernelContext &ctx) {
  return foldInputs<kNumbers>(ctx, []<class T>(T x, T y) -> T {
    if constexpr (kIsInt<T>) {
      return wrapping(x, y, std::plus<>());
    } else {
      return roundFromDouble<T>(toDouble(x) + toDouble(y));
    }
  });
}

Status refMean(KernelContext &ctx) {
  return foldInputs<kFloats>(
      ctx, []<class T>(T x, T y) { return roundFromDouble<T>(toDouble(x) + toDouble(y)); }, /*mean=*/true);
}

Status refClip(KernelContext &ctx) {
  const Tensor &x = ctx.tensor(0);
  return dispatch<kNumbers>(ctx, x.dtype(), [&]<class T>(TypeTag<T>) -> Status {
    T lo, hi;
    if constexpr (kIsFloat<T>) {
      lo = roundFromDouble<T>(-std::numeric_limits<double>::infinity());
      hi = roundFromDouble<T>(std::numeric_limits<double>::infinity());
    } else {
      lo = std::numeric_limits<T>::lowest();
      hi = std::numeric_limits<T>::max();
    }
    if (ctx.opset() < 11) {
      const Node &node = ctx.node();
      if (node.hasAttr("min")) lo = roundFromDouble<T>(node.attrFloat("min", 0.0f));
      if (node.hasAttr("max")) hi = roundFromDouble<T>(node.attrFloat("max", 0.0f));
    } else {
      TESSEL_RETURN_IF_ERROR(clipBoundInput(ctx, 1, lo));
      TESSEL_RETURN_IF_ERROR(clipBoundInput(ctx, 2, hi));
    }
    // max(x, lo) then min(., hi): with lo > hi every element becomes hi, as ONNX specifies.
    ctx.setOutput(0, mapUnary<T, T>(x, [&](T v) {
                    T y = widen(v) < widen(lo) ? lo : v;
                    return widen(hi) < widen(y) ? hi : y;
                  }));
    return Status::success();
  });
}

}  // namespace tessel::ref
