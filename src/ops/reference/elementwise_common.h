// Shared machinery of the elementwise reference kernels (elementwise_*.cpp): dtype sets and
// dispatch restricted to them, rounding from double to any element type, and numpy-style
// broadcasting maps for unary, binary and n-ary kernels. Floats are computed in double and rounded
// once to the output type; integers are computed in their own type with wrap-around.
#pragma once

#include <bit>
#include <cmath>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include "ops/reference/helpers.h"

namespace tessel::ref::elementwise {

template <class T>
constexpr bool kIsNarrowFloat = std::is_same_v<T, Float16> || std::is_same_v<T, BFloat16> ||
                                std::is_same_v<T, Float8E4M3FN> || std::is_same_v<T, Float8E5M2>;
template <class T>
constexpr bool kIsFloat = std::is_floating_point_v<T> || kIsNarrowFloat<T>;
template <class T>
constexpr bool kIsInt = std::is_integral_v<T> && !std::is_same_v<T, bool>;

/// Element-type sets an op accepts; `dispatch` instantiates a kernel only for members.
enum TypeSet : unsigned {
  kFloats = 1,    // f16, bf16, f32, f64.
  kFloat8 = 2,    // f8e4m3fn, f8e5m2 (Cast only).
  kSigned = 4,
  kUnsigned = 8,
  kBools = 16,
  kStrings = 32,
  kComplex = 64,
  kInts = kSigned | kUnsigned,
  kNumbers = kFloats | kInts,
  kAnyType = kNumbers | kFloat8 | kBools | kStrings | kComplex,
};

template <class T>
constexpr unsigned typeSetOf() {
  if constexpr (std::is_same_v<T, bool>) return kBools;
  else if constexpr (std::is_same_v<T, std::string>) return kStrings;
  else if constexpr (std::is_same_v<T, Float8E4M3FN> || std::is_same_v<T, Float8E5M2>) return kFloat8;
  else if constexpr (kIsFloat<T>) return kFloats;
  else if constexpr (std::is_signed_v<T> && std::is_integral_v<T>) return kSigned;
  else if constexpr (std::is_integral_v<T>) return kUnsigned;
  else return kComplex;
}

/// "Abs does not take string tensors".
inline Diagnostic unsupportedType(const KernelContext &ctx, DType dtype, const char *role = "tensors") {
  return makeError(ErrorCode::TypeMismatch, "{} does not take {} {}", ctx.node().opType(), dtypeName(dtype), role);
}

/// Calls `fn(TypeTag<T>{})` (which returns Status) when `dtype`'s storage type is in `Set`, and
/// reports an unsupported type otherwise.
template <unsigned Set, class Fn>
Status dispatch(const KernelContext &ctx, DType dtype, Fn &&fn) {
  Status status = unsupportedType(ctx, dtype);
  visitDType(dtype, [&]<class T>(TypeTag<T> tag) {
    if constexpr ((typeSetOf<T>() & Set) != 0) status = fn(tag);
  });
  return status;
}

/// A value widened for comparison or arithmetic: narrow floats to double, others unchanged.
template <class T>
auto widen(T value) {
  if constexpr (kIsNarrowFloat<T>) {
    return static_cast<double>(static_cast<float>(value));
  } else {
    return value;
  }
}

/// `value` rounded to float toward zero with a sticky last bit (round-to-odd), so that a second
/// rounding to a format with fewer than 23 mantissa bits is correctly rounded.
inline float roundToOddFloat(double value) {
  float f = static_cast<float>(value);
  if (std::isnan(value) || std::isinf(value) || static_cast<double>(f) == value) return f;
  if (std::fabs(static_cast<double>(f)) > std::fabs(value)) f = std::nextafter(f, 0.0f);
  return std::bit_cast<float>(std::bit_cast<uint32_t>(f) | 1u);
}

/// A double converted to T with one rounding: floats to nearest-even, integers truncate toward
/// zero and saturate (NaN gives 0), bool is `value != 0`.
template <class T>
T roundFromDouble(double value) {
  if constexpr (std::is_same_v<T, bool>) {
    return value != 0.0;
  } else if constexpr (std::is_floating_point_v<T>) {
    return static_cast<T>(value);
  } else if constexpr (kIsNarrowFloat<T>) {
    return T(roundToOddFloat(value));
  } else {
    if (std::isnan(value)) return T(0);
    if (value <= static_cast<double>(std::numeric_limits<T>::lowest())) return std::numeric_limits<T>::lowest();
    if (value >= static_cast<double>(std::numeric_limits<T>::max())) return std::numeric_limits<T>::max();
    return static_cast<T>(value);
  }
}

/// Lifts a double -> double function to any numeric T (computed in double, rounded once).
template <class Fn>
auto viaDouble(Fn fn) {
  return [fn]<class T>(T x) { return roundFromDouble<T>(fn(toDouble(x))); };
}

/// Unsigned type wide enough that arithmetic on T's bits neither promotes to int nor overflows UB.
template <class T>
using WrapType = std::conditional_t<(sizeof(T) < 4), uint32_t, std::make_unsigned_t<T>>;

/// x op y for integers, wrapping on overflow as the hardware does.
template <class T, class Op>
T wrapping(T x, T y, Op op) {
  return static_cast<T>(op(static_cast<WrapType<T>>(x), static_cast<WrapType<T>>(y)));
}

/// The broadcast output shape of several tensors and, per tensor, the flat index feeding each
/// output element.
struct Broadcast {
  std::vector<int64_t> sizes;
  std::vector<std::vector<int64_t>> maps;
};

inline Expected<Broadcast> broadcastAll(const std::vector<const Tensor *> &tensors) {
  std::vector<std::vector<int64_t>> shapes;
  for (const Tensor *t : tensors) shapes.push_back(t->sizes());
  Broadcast result;
  TESSEL_ASSIGN_OR_RETURN(result.sizes, broadcastShapes(shapes));
  for (const Tensor *t : tensors) result.maps.push_back(broadcastIndexMap(t->sizes(), result.sizes));
  return result;
}

/// out[i] = fn(x[i]) with x of type In and out of `outType` (storage Out).
template <class In, class Out, class Fn>
Tensor mapUnary(const Tensor &x, Fn fn) {
  Tensor out(dtypeOf<Out>(), x.sizes());
  const In *in = x.data<In>();
  Out *o = out.data<Out>();
  for (int64_t i = 0; i < x.numel(); ++i) o[i] = fn(in[i]);
  return out;
}

/// out = fn(a, b) elementwise with numpy broadcasting.
template <class A, class B, class Out, class Fn>
Expected<Tensor> mapBinary(const Tensor &a, const Tensor &b, Fn fn) {
  TESSEL_ASSIGN_OR_RETURN(Broadcast bc, broadcastAll({&a, &b}));
  Tensor out(dtypeOf<Out>(), bc.sizes);
  const A *pa = a.data<A>();
  const B *pb = b.data<B>();
  Out *po = out.data<Out>();
  for (int64_t i = 0; i < out.numel(); ++i) po[i] = fn(pa[bc.maps[0][i]], pb[bc.maps[1][i]]);
  return out;
}

/// Sets output 0 from an Expected tensor, or returns its error.
inline Status setResult(KernelContext &ctx, Expected<Tensor> result) {
  if (!result.ok()) return result.status();
  ctx.setOutput(0, std::move(result).value());
  return Status::success();
}

/// Input `i` of a binary op. Before opset 7, Add/Sub/Mul/Div/Pow and the comparisons took
/// `broadcast`/`axis` attributes: B aligned with A at `axis` (default: trailing). Later opsets
/// broadcast like numpy, which this turns the legacy form into.
Expected<Tensor> legacyBroadcastOperand(const KernelContext &ctx, size_t i);

/// `input` converted to `to` as Cast does (`saturate` applies to fp8 targets).
Expected<Tensor> castTensor(const Tensor &input, DType to, bool saturate);

}  // namespace tessel::ref::elementwise
