// Reference kernels of comparisons (Equal, Less, Greater, LessOrEqual, GreaterOrEqual: bool
// output), boolean logic (And, Or, Xor, Not) and Where, all with numpy broadcasting. Comparisons
// read integers in their own type (int64 keeps every bit) and narrow floats as double.
#include <functional>

#include "ops/reference/elementwise_common.h"

namespace tessel::ref {

using namespace elementwise;

namespace {

/// A value as compared: narrow floats widened to double, everything else as is.
template <class T>
decltype(auto) comparable(const T &value) {
  if constexpr (kIsNarrowFloat<T>) {
    return widen(value);
  } else {
    return (value);
  }
}

/// Bool output of `fn(a, b)` for two inputs of one dtype in `Set`.
template <unsigned Set, class Fn>
Status compare(KernelContext &ctx, Fn fn) {
  TESSEL_RETURN_IF_ERROR(expectSameDType(ctx, 0, 1));
  TESSEL_ASSIGN_OR_RETURN(Tensor b, legacyBroadcastOperand(ctx, 1));
  const Tensor &a = ctx.tensor(0);
  return dispatch<Set>(ctx, a.dtype(), [&]<class T>(TypeTag<T>) -> Status {
    return setResult(ctx, mapBinary<T, T, bool>(a, b, [&](const T &x, const T &y) {
                       return fn(comparable(x), comparable(y));
                     }));
  });
}

}  // namespace

Status refEqual(KernelContext &ctx) { return compare<kNumbers | kBools | kStrings>(ctx, std::equal_to<>()); }
Status refLess(KernelContext &ctx) { return compare<kNumbers>(ctx, std::less<>()); }
Status refGreater(KernelContext &ctx) { return compare<kNumbers>(ctx, std::greater<>()); }
Status refLessOrEqual(KernelContext &ctx) { return compare<kNumbers>(ctx, std::less_equal<>()); }
Status refGreaterOrEqual(KernelContext &ctx) { return compare<kNumbers>(ctx, std::greater_equal<>()); }

Status refAnd(KernelContext &ctx) { return compare<kBools>(ctx, std::logical_and<>()); }
Status refOr(KernelContext &ctx) { return compare<kBools>(ctx, std::logical_or<>()); }
Status refXor(KernelContext &ctx) { return compare<kBools>(ctx, std::not_equal_to<>()); }

Status refNot(KernelContext &ctx) {
  const Tensor &x = ctx.tensor(0);
  if (x.dtype() != DType::Bool) return unsupportedType(ctx, x.dtype());
  ctx.setOutput(0, mapUnary<bool, bool>(x, std::logical_not<>()));
  return Status::success();
}

Status refWhere(KernelContext &ctx) {
  const Tensor &cond = ctx.tensor(0);
  const Tensor &x = ctx.tensor(1);
  const Tensor &y = ctx.tensor(2);
  if (cond.dtype() != DType::Bool) {
    return makeError(ErrorCode::TypeMismatch, "Where condition must be bool; got {}", dtypeName(cond.dtype()));
  }
  TESSEL_RETURN_IF_ERROR(expectSameDType(ctx, 1, 2));
  TESSEL_ASSIGN_OR_RETURN(Broadcast bc, broadcastAll({&cond, &x, &y}));
  return dispatch<kAnyType>(ctx, x.dtype(), [&]<class T>(TypeTag<T>) -> Status {
    Tensor out(x.dtype(), bc.sizes);
    const bool *pc = cond.data<bool>();
    const T *px = x.data<T>();
    const T *py = y.data<T>();
    T *po = out.data<T>();
    for (int64_t i = 0; i < out.numel(); ++i) po[i] = pc[bc.maps[0][i]] ? px[bc.maps[1][i]] : py[bc.maps[2][i]];
    ctx.setOutput(0, std::move(out));
    return Status::success();
  });
}

}  // namespace tessel::ref
