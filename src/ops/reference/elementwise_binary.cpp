// Reference kernels of the binary arithmetic ops: Add, Sub, Mul, Div, Pow, Mod, BitShift and the
// Bitwise ops of opset 18 (BitwiseNot, their one unary member, lives here with them), with
// numpy broadcasting (and the pre-opset-7 `broadcast`/`axis` form). Floats compute in double and
// round once; integers compute in their own type and wrap on overflow; division by zero is an error.
#include <algorithm>
#include <functional>

#include "ops/reference/elementwise_common.h"

namespace tessel::ref {

namespace elementwise {

Expected<Tensor> legacyBroadcastOperand(const KernelContext &ctx, size_t i) {
  const Tensor &a = ctx.tensor(0);
  const Tensor &b = ctx.tensor(i);
  if (ctx.opset() >= 7) return b;
  if (ctx.node().attrInt("broadcast", 0) == 0) {
    if (a.sizes() != b.sizes()) {
      return makeError(ErrorCode::ShapeMismatch, "at opset {} without broadcast=1 the inputs need equal shapes; got {} and {}",
                       ctx.opset(), formatSizes(a.sizes()), formatSizes(b.sizes()));
    }
    return b;
  }
  if (!ctx.node().hasAttr("axis")) return b;  // Trailing alignment is what numpy does.
  const int64_t rankA = static_cast<int64_t>(a.rank());
  const int64_t rankB = static_cast<int64_t>(b.rank());
  TESSEL_ASSIGN_OR_RETURN(int64_t axis, normalizeAxis(ctx.node().attrInt("axis", 0), rankA));
  if (axis + rankB > rankA) {
    return makeError(ErrorCode::ShapeMismatch, "broadcast axis {} cannot hold a rank-{} operand in a rank-{} tensor", axis,
                     rankB, rankA);
  }
  std::vector<int64_t> sizes(static_cast<size_t>(rankA), 1);
  std::copy(b.sizes().begin(), b.sizes().end(), sizes.begin() + axis);
  return b.reshaped(sizes);
}

}  // namespace elementwise

using namespace elementwise;

namespace {

/// A generic (T, T) -> T that computes floats in double with `floatFn` and integers with `intFn`.
template <class FloatFn, class IntFn>
auto floatOrInt(FloatFn floatFn, IntFn intFn) {
  return [=]<class T>(T x, T y) -> T {
    if constexpr (kIsInt<T>) {
      return intFn(x, y);
    } else {
      return roundFromDouble<T>(floatFn(toDouble(x), toDouble(y)));
    }
  };
}

/// True when an integer tensor holds a zero (the divisor of Div or Mod).
template <class T>
bool hasZero(const Tensor &t) {
  for (T v : t.span<T>()) {
    if (v == T(0)) return true;
  }
  return false;
}

/// out = fn(a, b) for two inputs of one dtype in `Set`; `divides` rejects integer zero divisors.
template <unsigned Set, class Fn>
Status sameTypeBinary(KernelContext &ctx, Fn fn, bool divides = false) {
  TESSEL_RETURN_IF_ERROR(expectSameDType(ctx, 0, 1));
  TESSEL_ASSIGN_OR_RETURN(Tensor b, legacyBroadcastOperand(ctx, 1));
  const Tensor &a = ctx.tensor(0);
  return dispatch<Set>(ctx, a.dtype(), [&]<class T>(TypeTag<T>) -> Status {
    if constexpr (kIsInt<T>) {
      if (divides && hasZero<T>(b)) {
        return makeError(ErrorCode::RuntimeError, "integer division by zero: input 1 holds a 0");
      }
    }
    return setResult(ctx, mapBinary<T, T, T>(a, b, fn));
  });
}

/// x^n for integers by repeated squaring, wrapping like the type; negative n truncates 1/x^|n|.
template <class T>
T integerPower(T x, int64_t n) {
  if (n < 0) {
    if (x == T(1)) return T(1);
    if constexpr (std::is_signed_v<T>) {
      if (x == T(-1)) return (n % 2 == 0) ? T(1) : T(-1);
    }
    return T(0);
  }
  WrapType<T> result = 1;
  WrapType<T> base = static_cast<WrapType<T>>(x);
  for (auto e = static_cast<uint64_t>(n); e != 0; e >>= 1) {
    if (e & 1) result = static_cast<WrapType<T>>(result * base);
    base = static_cast<WrapType<T>>(base * base);
  }
  return static_cast<T>(result);
}

}  // namespace

Status refAdd(KernelContext &ctx) {
  return sameTypeBinary<kNumbers>(
      ctx, floatOrInt(std::plus<double>(), [](auto x, auto y) { return wrapping(x, y, std::plus<>()); }));
}

Status refSub(KernelContext &ctx) {
  return sameTypeBinary<kNumbers>(
      ctx, floatOrInt(std::minus<double>(), [](auto x, auto y) { return wrapping(x, y, std::minus<>()); }));
}

Status refMul(KernelContext &ctx) {
  return sameTypeBinary<kNumbers>(
      ctx, floatOrInt(std::multiplies<double>(), [](auto x, auto y) { return wrapping(x, y, std::multiplies<>()); }));
}

Status refDiv(KernelContext &ctx) {
  auto intDiv = []<class T>(T x, T y) -> T {
    if constexpr (std::is_signed_v<T>) {
      if (y == T(-1)) return wrapping(T(0), x, std::minus<>());  // MIN / -1 wraps instead of trapping.
    }
    return static_cast<T>(x / y);  // C++ truncates toward zero, as ONNX specifies.
  };
  return sameTypeBinary<kNumbers>(ctx, floatOrInt(std::divides<double>(), intDiv), /*divides=*/true);
}

Status refMod(KernelContext &ctx) {
  const int64_t fmod = ctx.node().attrInt("fmod", 0);
  if (fmod != 0 && fmod != 1) return makeError(ErrorCode::InvalidArgument, "Mod fmod must be 0 or 1; got {}", fmod);
  if (fmod == 0 && isFloatingPoint(ctx.tensor(0).dtype())) {
    return makeError(ErrorCode::InvalidArgument, "Mod on {} needs fmod=1 (fmod=0 is defined for integers only)",
                     dtypeName(ctx.tensor(0).dtype()));
  }
  auto intMod = [fmod]<class T>(T x, T y) -> T {
    if constexpr (std::is_signed_v<T>) {
      if (y == T(-1)) return T(0);  // Avoids MIN % -1 overflow.
      T r = static_cast<T>(x % y);
      // fmod=0 follows Python: the remainder takes the divisor's sign.
      if (fmod == 0 && r != 0 && ((r < 0) != (y < 0))) r = static_cast<T>(r + y);
      return r;
    } else {
      return static_cast<T>(x % y);
    }
  };
  return sameTypeBinary<kNumbers>(
      ctx, floatOrInt([](double x, double y) { return std::fmod(x, y); }, intMod), /*divides=*/true);
}

Status refBitShift(KernelContext &ctx) {
  const std::string direction = ctx.node().attrString("direction", "");
  if (direction != "LEFT" && direction != "RIGHT") {
    return makeError(ErrorCode::InvalidArgument, "BitShift direction must be \"LEFT\" or \"RIGHT\"; got \"{}\"", direction);
  }
  const bool left = direction == "LEFT";
  return sameTypeBinary<kUnsigned>(ctx, [left]<class T>(T x, T y) -> T {
    if (y >= sizeof(T) * 8) return T(0);  // Shifting every bit out; C++ leaves this undefined.
    return static_cast<T>(left ? static_cast<WrapType<T>>(x) << y : x >> y);
  });
}

Status refBitwiseAnd(KernelContext &ctx) {
  return sameTypeBinary<kInts>(ctx, []<class T>(T x, T y) -> T { return static_cast<T>(x & y); });
}

Status refBitwiseOr(KernelContext &ctx) {
  return sameTypeBinary<kInts>(ctx, []<class T>(T x, T y) -> T { return static_cast<T>(x | y); });
}

Status refBitwiseXor(KernelContext &ctx) {
  return sameTypeBinary<kInts>(ctx, []<class T>(T x, T y) -> T { return static_cast<T>(x ^ y); });
}

Status refBitwiseNot(KernelContext &ctx) {
  const Tensor &x = ctx.tensor(0);
  return dispatch<kInts>(ctx, x.dtype(), [&]<class T>(TypeTag<T>) -> Status {
    ctx.setOutput(0, mapUnary<T, T>(x, [](T v) { return static_cast<T>(~v); }));
    return Status::success();
  });
}

Status refPow(KernelContext &ctx) {
  const Tensor &base = ctx.tensor(0);
  TESSEL_ASSIGN_OR_RETURN(Tensor exponent, legacyBroadcastOperand(ctx, 1));
  const DType expType = exponent.dtype();
  if (!isFloatingPoint(expType) && !isInteger(expType)) return unsupportedType(ctx, expType, "exponents");
  return dispatch<kNumbers>(ctx, base.dtype(), [&]<class T>(TypeTag<T>) -> Status {
    if constexpr (kIsInt<T>) {
      if (isInteger(expType)) {
        TESSEL_ASSIGN_OR_RETURN(Tensor n, castTensor(exponent, DType::Int64, /*saturate=*/true));
        return setResult(ctx, mapBinary<T, int64_t, T>(base, n, integerPower<T>));
      }
    }
    TESSEL_ASSIGN_OR_RETURN(Tensor y, castTensor(exponent, DType::Float64, /*saturate=*/true));
    return setResult(ctx, mapBinary<T, double, T>(
                              base, y, [](T x, double e) { return roundFromDouble<T>(std::pow(toDouble(x), e)); }));
  });
}

}  // namespace tessel::ref
