// Reference kernels of the elementwise family: unary math, binary arithmetic with numpy
// broadcasting, comparisons, logic, activations and casts.
#include <cmath>

#include "ops/reference/helpers.h"

namespace tessel::ref {

namespace {

/// Applies `fn(a, b)` elementwise with broadcasting; the output has dtype Out.
template <class In, class Out, class Fn>
Expected<Tensor> broadcastBinary(const Tensor &a, const Tensor &b, Fn fn) {
  TESSEL_ASSIGN_OR_RETURN(std::vector<int64_t> outSizes, broadcastShapes({a.sizes(), b.sizes()}));
  Tensor out(dtypeOf<Out>(), outSizes);
  std::vector<int64_t> mapA = broadcastIndexMap(a.sizes(), outSizes);
  std::vector<int64_t> mapB = broadcastIndexMap(b.sizes(), outSizes);
  const In *pa = a.data<In>();
  const In *pb = b.data<In>();
  Out *po = out.data<Out>();
  for (int64_t i = 0; i < out.numel(); ++i) po[i] = fn(pa[mapA[i]], pb[mapB[i]]);
  return out;
}

/// Binary arithmetic on any numeric dtype, computed in double for floats and in the type itself
/// for integers (so int64 keeps all its bits).
template <class FloatFn, class IntFn>
Status arithmetic(KernelContext &ctx, FloatFn floatFn, IntFn intFn) {
  TESSEL_RETURN_IF_ERROR(expectSameDType(ctx, 0, 1));
  const Tensor &a = ctx.tensor(0);
  const Tensor &b = ctx.tensor(1);
  Status status;
  bool handled = visitDType(a.dtype(), [&]<class T>(TypeTag<T>) {
    if constexpr (!kIsNumeric<T> || std::is_same_v<T, bool>) {
      status = makeError(ErrorCode::TypeMismatch, "{} does not take {}", ctx.node().opType(), dtypeName(a.dtype()));
    } else {
      Expected<Tensor> out = std::is_integral_v<T>
          ? broadcastBinary<T, T>(a, b, [&](T x, T y) { return static_cast<T>(intFn(x, y)); })
          : broadcastBinary<T, T>(a, b, [&](T x, T y) { return fromDouble<T>(floatFn(toDouble(x), toDouble(y))); });
      if (!out.ok()) status = out.status(); else ctx.setOutput(0, std::move(out).value());
    }
  });
  if (!handled) return makeError(ErrorCode::TypeMismatch, "unsupported dtype {}", dtypeName(a.dtype()));
  return status;
}

/// Unary float function on floating-point dtypes.
template <class Fn>
Status unaryFloat(KernelContext &ctx, Fn fn) {
  const Tensor &x = ctx.tensor(0);
  if (!isFloatingPoint(x.dtype())) {
    return makeError(ErrorCode::TypeMismatch, "{} takes a floating-point tensor; got {}", ctx.node().opType(),
                     dtypeName(x.dtype()));
  }
  Tensor out(x.dtype(), x.sizes());
  visitDType(x.dtype(), [&]<class T>(TypeTag<T>) {
    if constexpr (kIsNumeric<T>) {
      const T *in = x.data<T>();
      T *o = out.data<T>();
      for (int64_t i = 0; i < x.numel(); ++i) o[i] = fromDouble<T>(fn(toDouble(in[i])));
    }
  });
  ctx.setOutput(0, std::move(out));
  return Status::success();
}

}  // namespace

Status refAdd(KernelContext &ctx) {
  return arithmetic(ctx, [](double x, double y) { return x + y; }, [](auto x, auto y) { return x + y; });
}

Status refRelu(KernelContext &ctx) {
  return unaryFloat(ctx, [](double x) { return x > 0 ? x : 0.0; });
}

}  // namespace tessel::ref
