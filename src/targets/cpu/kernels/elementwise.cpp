// Elementwise kernels: run-time choice of the ISA variant, the broadcast layout, and the threaded
// drivers. The loops themselves live in elementwise_impl.h, compiled per ISA under isa/.
#include "targets/cpu/kernels/elementwise.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <type_traits>

namespace tessel::cpu {

extern const ElementwiseKernels kElementwiseAvx512;
extern const ElementwiseKernels kElementwiseAvx2;
extern const ElementwiseKernels kElementwiseGeneric;

namespace {

const ElementwiseKernels *const kVariants[] = {&kElementwiseAvx512, &kElementwiseAvx2, &kElementwiseGeneric};

}  // namespace

std::span<const ElementwiseKernels *const> elementwiseKernelVariants() { return kVariants; }

const ElementwiseKernels &elementwiseKernels() {
  static const ElementwiseKernels &selected = []() -> const ElementwiseKernels & {
    for (const ElementwiseKernels *kernels : kVariants) {
      if (!hasAll(hostIsa(), kernels->isa)) continue;
      if (std::getenv("TESSEL_LOG_KERNELS") != nullptr) {
        std::fprintf(stderr, "tessel: elementwise uses %s (host isa: %s)\n", kernels->name, isaName(hostIsa()).c_str());
      }
      return *kernels;
    }
    return kElementwiseGeneric;
  }();
  return selected;
}

int64_t BroadcastLayout::rowOffset(size_t input, int64_t row) const {
  const std::vector<int64_t> &strides = outerStrides[input];
  int64_t offset = 0;
  for (size_t d = outerSizes.size(); d-- > 0;) {
    const int64_t size = outerSizes[d];
    offset += (row % size) * strides[d];
    row /= size;
  }
  return offset;
}

Expected<BroadcastLayout> planBroadcast(const std::vector<std::vector<int64_t>> &inputSizes,
                                        const std::vector<int64_t> &outSizes) {
  const size_t rank = outSizes.size();
  const size_t numInputs = inputSizes.size();
  // Per input, its sizes right-aligned to the output's rank.
  std::vector<std::vector<int64_t>> aligned(numInputs, std::vector<int64_t>(rank, 1));
  for (size_t i = 0; i < numInputs; ++i) {
    const std::vector<int64_t> &sizes = inputSizes[i];
    if (sizes.size() > rank) {
      return makeError(ErrorCode::ShapeMismatch, "input {} has rank {}, more than the output's {}", i, sizes.size(),
                       rank);
    }
    for (size_t d = 0; d < sizes.size(); ++d) {
      const int64_t size = sizes[d], out = outSizes[rank - sizes.size() + d];
      if (size != out && size != 1) {
        return makeError(ErrorCode::ShapeMismatch, "input {} has size {} at dim {}; it does not broadcast to {}", i,
                         size, d, out);
      }
      aligned[i][rank - sizes.size() + d] = size;
    }
  }
  // Merge dims (dropping size-1 output dims) while every input keeps its broadcast pattern.
  std::vector<int64_t> mergedSizes;
  std::vector<std::vector<bool>> mergedBroadcast;  // [dim][input]
  for (size_t d = 0; d < rank; ++d) {
    if (outSizes[d] == 1) continue;
    std::vector<bool> broadcast(numInputs);
    for (size_t i = 0; i < numInputs; ++i) broadcast[i] = aligned[i][d] == 1;
    if (!mergedSizes.empty() && mergedBroadcast.back() == broadcast) {
      mergedSizes.back() *= outSizes[d];
    } else {
      mergedSizes.push_back(outSizes[d]);
      mergedBroadcast.push_back(broadcast);
    }
  }
  BroadcastLayout layout;
  layout.outerStrides.assign(numInputs, {});
  layout.innerContiguous.assign(numInputs, true);
  if (std::find(outSizes.begin(), outSizes.end(), 0) != outSizes.end()) {
    layout.rows = 0;
    return layout;
  }
  if (mergedSizes.empty()) return layout;  // One element.
  layout.inner = mergedSizes.back();
  layout.outerSizes.assign(mergedSizes.begin(), mergedSizes.end() - 1);
  for (int64_t size : layout.outerSizes) layout.rows *= size;
  for (size_t i = 0; i < numInputs; ++i) {
    // Strides of input i over the merged dims, innermost first; a broadcast dim has stride 0.
    std::vector<int64_t> strides(mergedSizes.size());
    int64_t stride = 1;
    for (size_t d = mergedSizes.size(); d-- > 0;) {
      strides[d] = mergedBroadcast[d][i] ? 0 : stride;
      if (!mergedBroadcast[d][i]) stride *= mergedSizes[d];
    }
    layout.innerContiguous[i] = !mergedBroadcast.back()[i];
    layout.outerStrides[i].assign(strides.begin(), strides.end() - 1);
  }
  return layout;
}

void parallelRanges(ThreadPool *pool, int64_t total, int64_t grain, const std::function<void(int64_t, int64_t)> &fn) {
  if (total <= 0) return;
  grain = std::max<int64_t>(grain, 1);
  const int threads = pool != nullptr ? pool->size() : 1;
  // A few ranges per thread balance uneven progress; never smaller than the grain.
  int64_t ranges = std::min<int64_t>((total + grain - 1) / grain, int64_t(threads) * 4);
  if (threads <= 1 || ranges <= 1) {
    fn(0, total);
    return;
  }
  const int64_t chunk = (total + ranges - 1) / ranges;
  ranges = (total + chunk - 1) / chunk;
  pool->parallelFor(ranges, [&](int64_t task) {
    const int64_t begin = task * chunk;
    fn(begin, std::min(total, begin + chunk));
  });
}

namespace {

// Elements per range: large enough that the pool's hand-off (about a microsecond) is noise.
constexpr int64_t kElementGrain = 16384;

}  // namespace

void runUnary(const ElementwiseKernels &kernels, UnaryOp op, UnaryParams params, const float *x, float *y, int64_t n,
              ThreadPool *pool) {
  parallelRanges(pool, n, kElementGrain,
                 [&](int64_t begin, int64_t end) { kernels.unary(op, params, x + begin, y + begin, end - begin); });
}

void runBinary(const ElementwiseKernels &kernels, BinaryOp op, const BroadcastLayout &layout, const float *a,
               const float *b, float *y, ThreadPool *pool) {
  const int64_t inner = layout.inner;
  const bool aScalar = !layout.innerContiguous[0], bScalar = !layout.innerContiguous[1];
  parallelRanges(pool, layout.numel(), kElementGrain, [&](int64_t begin, int64_t end) {
    int64_t row = begin / inner, column = begin % inner;
    for (int64_t pos = begin; pos < end; ++row, column = 0) {
      const int64_t count = std::min(inner - column, end - pos);
      const float *aRow = a + layout.rowOffset(0, row) + (aScalar ? 0 : column);
      const float *bRow = b + layout.rowOffset(1, row) + (bScalar ? 0 : column);
      kernels.binary(op, aRow, aScalar, bRow, bScalar, y + pos, count);
      pos += count;
    }
  });
}

namespace {

template <class To, class From>
To castOne(From x) {
  if constexpr (std::is_same_v<To, From>) {
    return x;
  } else if constexpr (std::is_same_v<To, bool>) {
    return x != From(0);
  } else if constexpr (std::is_same_v<From, bool>) {
    return To(x ? 1 : 0);
  } else if constexpr (std::is_integral_v<To> && std::is_floating_point_v<From>) {
    const double v = x;
    if (std::isnan(v)) return To(0);
    // The reference's rule: narrower types take int64-range values through int64 (wrapping); the
    // rest saturate at the type's limits.
    if (sizeof(To) < 8 && v > -9.2e18 && v < 9.2e18) return static_cast<To>(static_cast<int64_t>(v));
    if (v <= double(std::numeric_limits<To>::lowest())) return std::numeric_limits<To>::lowest();
    if (v >= double(std::numeric_limits<To>::max())) return std::numeric_limits<To>::max();
    return static_cast<To>(v);
  } else {
    return static_cast<To>(x);  // int to int wraps; int to float rounds.
  }
}

template <class To, class From>
void castRange(const void *x, void *y, int64_t begin, int64_t end) {
  const From *in = static_cast<const From *>(x);
  To *out = static_cast<To *>(y);
  for (int64_t i = begin; i < end; ++i) out[i] = castOne<To>(in[i]);
}

template <class From>
void castFrom(CastType to, const void *x, void *y, int64_t begin, int64_t end) {
  switch (to) {
    case CastType::F32: return castRange<float, From>(x, y, begin, end);
    case CastType::I64: return castRange<int64_t, From>(x, y, begin, end);
    case CastType::I32: return castRange<int32_t, From>(x, y, begin, end);
    case CastType::Bool: return castRange<bool, From>(x, y, begin, end);
  }
}

}  // namespace

void runCast(CastType from, CastType to, const void *x, void *y, int64_t n, ThreadPool *pool) {
  parallelRanges(pool, n, kElementGrain, [&](int64_t begin, int64_t end) {
    switch (from) {
      case CastType::F32: return castFrom<float>(to, x, y, begin, end);
      case CastType::I64: return castFrom<int64_t>(to, x, y, begin, end);
      case CastType::I32: return castFrom<int32_t>(to, x, y, begin, end);
      case CastType::Bool: return castFrom<bool>(to, x, y, begin, end);
    }
  });
}

}  // namespace tessel::cpu
