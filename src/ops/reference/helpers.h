// Shared pieces of the reference kernels: axis normalisation, numpy-style broadcasting, strides,
// and conversions between element types and double. Reference kernels favour clarity over speed.
#pragma once

#include <cmath>
#include <complex>
#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

#include "ir/tensor.h"
#include "ops/kernel_context.h"
#include "support/diagnostic.h"

namespace tessel::ref {

/// Maps a possibly negative axis into [0, rank); fails naming `what` when out of range.
Expected<int64_t> normalizeAxis(int64_t axis, int64_t rank, const char *what = "axis");
/// Row-major strides (in elements) of `sizes`.
std::vector<int64_t> stridesOf(const std::vector<int64_t> &sizes);
/// The numpy broadcast of several shapes; fails when two dims differ and neither is 1.
Expected<std::vector<int64_t>> broadcastShapes(const std::vector<std::vector<int64_t>> &shapes);
/// For each element of a tensor of `outSizes`, the flat index into a tensor of `inSizes` that
/// broadcasts to it. Precondition: inSizes broadcasts to outSizes.
std::vector<int64_t> broadcastIndexMap(const std::vector<int64_t> &inSizes, const std::vector<int64_t> &outSizes);

/// True for the storage types arithmetic kernels handle by widening to double.
template <class T>
constexpr bool kIsNumeric = !std::is_same_v<T, std::string> && !std::is_same_v<T, std::complex<float>> &&
                            !std::is_same_v<T, std::complex<double>>;

/// An element widened to double (bool -> 0/1, narrow floats exactly).
template <class T>
double toDouble(T value) {
  if constexpr (std::is_arithmetic_v<T>) {
    return static_cast<double>(value);
  } else {
    return static_cast<double>(static_cast<float>(value));
  }
}

/// A double narrowed to T: floats round to nearest, integers saturate-free truncation as C++ casts
/// do for in-range values (callers of integer ops compute in the integer type instead).
template <class T>
T fromDouble(double value) {
  if constexpr (std::is_same_v<T, bool>) {
    return value != 0.0;
  } else if constexpr (std::is_arithmetic_v<T>) {
    return static_cast<T>(value);
  } else {
    return T(static_cast<float>(value));
  }
}

/// Every element of a numeric tensor widened to double (the reference kernels compute in double).
std::vector<double> toDoubles(const Tensor &tensor);
/// A tensor of `dtype` and `sizes` holding `values`, each narrowed with fromDouble.
Tensor fromDoubles(DType dtype, const std::vector<int64_t> &sizes, const std::vector<double> &values);

/// "input 1 of Add must be f32, got i64"-style check that two inputs share a dtype.
Status expectSameDType(const KernelContext &ctx, size_t a, size_t b);
/// Fails unless `dtype` is one of the listed types.
Status expectDType(const KernelContext &ctx, size_t input, std::initializer_list<DType> allowed);

}  // namespace tessel::ref
