// Shared pieces of the tensor-family reference kernels (tensor_*.cpp): dtype-blind element
// copies, output construction from an index map, multi-index iteration, and validation of sizes
// that come from user data before anything is allocated. Data-movement ops never look at element
// values, so they work for every dtype, strings and bools included.
#pragma once

#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

#include "ops/reference/helpers.h"

namespace tessel::ref {

/// Largest tensor a kernel allocates from sizes it reads out of the model's data (Reshape shape,
/// Tile repeats, Range count, ...); anything larger is reported instead of allocated.
inline constexpr size_t kMaxKernelOutputBytes = size_t{16} << 30;

/// Copies single elements between two tensors of one dtype by value, whatever the dtype.
/// Precondition: `src` and `dst` have the same dtype and outlive the copier.
class ElementCopier {
 public:
  ElementCopier(const Tensor &src, Tensor &dst);
  /// dst[dstIndex] = src[srcIndex] (flat indices). Preconditions: both indices in range.
  void operator()(int64_t dstIndex, int64_t srcIndex) const {
    if (srcStrings_) {
      dstStrings_[dstIndex] = srcStrings_[srcIndex];
      return;
    }
    const uint8_t *from = srcBytes_ + static_cast<size_t>(srcIndex) * elementBytes_;
    uint8_t *to = dstBytes_ + static_cast<size_t>(dstIndex) * elementBytes_;
    for (size_t b = 0; b < elementBytes_; ++b) to[b] = from[b];
  }
  /// Copies `count` consecutive elements starting at the given flat indices.
  void copyRun(int64_t dstIndex, int64_t srcIndex, int64_t count) const;

 private:
  const uint8_t *srcBytes_ = nullptr;
  uint8_t *dstBytes_ = nullptr;
  size_t elementBytes_ = 0;
  const std::string *srcStrings_ = nullptr;
  std::string *dstStrings_ = nullptr;
};

/// A tensor of `src`'s dtype and `outSizes` whose element i is src[map[i]]; where map[i] < 0 the
/// element is `fill`'s first element (when `fill` is given) or stays zero / empty.
/// Preconditions: map has one entry per output element; non-negative entries index into `src`.
Tensor takeElements(const Tensor &src, const std::vector<int64_t> &outSizes, const std::vector<int64_t> &map,
                    const Tensor *fill = nullptr);

/// Calls `fn(index)` for every multi-index of `sizes` in row-major order (index is the
/// current coordinate vector); nothing when any size is 0, once for rank 0.
template <class Fn>
void forEachIndex(const std::vector<int64_t> &sizes, Fn &&fn) {
  for (int64_t s : sizes) {
    if (s == 0) return;
  }
  std::vector<int64_t> index(sizes.size(), 0);
  while (true) {
    fn(static_cast<const std::vector<int64_t> &>(index));
    size_t axis = sizes.size();
    while (axis > 0) {
      --axis;
      if (++index[axis] < sizes[axis]) break;
      index[axis] = 0;
      if (axis == 0) return;
    }
    if (sizes.empty()) return;
  }
}

/// Fails unless a tensor of `dtype` and `sizes` (read from the model's data, described by `what`)
/// has non-negative dims, none above kMaxKernelOutputBytes, and fits under kMaxKernelOutputBytes.
Status checkOutputSize(DType dtype, const std::vector<int64_t> &sizes, const char *what);

/// Reads an integer-typed input (shape, axes, pads, repeats, ...) as int64 values; fails naming
/// `what` when it is not an integer tensor.
Expected<std::vector<int64_t>> readIntInput(const KernelContext &ctx, size_t input, const char *what);

/// Like normalizeAxis, but also fails for a scalar (rank 0), which has no axis to name.
Expected<int64_t> normalizeExistingAxis(int64_t axis, int64_t rank, const char *what = "axis");

/// a + b and a * b for integer T with two's-complement wrap-around instead of undefined overflow.
template <class T>
T wrappingAdd(T a, T b) {
  using U = std::make_unsigned_t<T>;
  return static_cast<T>(static_cast<U>(static_cast<U>(a) + static_cast<U>(b)));
}
template <class T>
T wrappingMul(T a, T b) {
  using U = std::make_unsigned_t<std::common_type_t<T, unsigned>>;
  return static_cast<T>(static_cast<U>(static_cast<U>(a) * static_cast<U>(b)));
}

/// The node's `axis` attribute (or `fallback`) normalised for a tensor of `rank` >= 1.
Expected<int64_t> readAxisAttr(const KernelContext &ctx, size_t rank, int64_t fallback);

/// Maps a possibly negative index into [0, bound); fails naming the index, the bound and `what`.
Expected<int64_t> normalizeIndex(int64_t index, int64_t bound, const char *what);

}  // namespace tessel::ref
