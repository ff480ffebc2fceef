// The strided-copy loops (see transpose.h).
#include "targets/cpu/kernels/transpose.h"

#include <algorithm>
#include <cstring>

#include "support/diagnostic.h"

namespace tessel::cpu {
namespace {

constexpr size_t kParallelBytes = 256 * 1024;  // Below this a copy is faster on one thread.
constexpr int64_t kTasksPerThread = 4;          // Rows vary in cost (tails); a few tasks each balance.
constexpr size_t kTileBytes = 64;               // One cache line of the tile's inner dim.

/// Elements per side of a transpose tile: a cache line of output, at least 8.
template <class Word>
constexpr int64_t tileFor() {
  return std::max<int64_t>(8, int64_t(kTileBytes / sizeof(Word)));
}

/// Calls fn(begin, end) over [0, units) split into tasks on the pool.
template <class Fn>
void forRanges(int64_t units, size_t bytes, ThreadPool *pool, const Fn &fn) {
  const int64_t tasks = copyTasks(bytes, units, pool);
  if (tasks <= 1) {
    fn(int64_t(0), units);
    return;
  }
  pool->parallelFor(tasks, [&](int64_t task) { fn(units * task / tasks, units * (task + 1) / tasks); });
}

/// A word of `kBytes` bytes; sizes other than 1, 2, 4 and 8 move with memcpy.
template <size_t kBytes>
struct Word {
  unsigned char bytes[kBytes];
};

/// Rows [rowBegin, rowEnd) of a plan whose loop runs along the last dim.
template <class W>
void copyRowRange(const StridedCopyPlan &plan, const W *in, W *out, int64_t rowBegin, int64_t rowEnd) {
  const int outer = int(plan.sizes.size()) - 1;
  const int64_t length = plan.sizes.back();
  const int64_t innerStride = plan.inStrides.back();
  int64_t index[kMaxStridedCopyRank] = {};
  int64_t inBase = plan.inOffset;
  int64_t remainder = rowBegin;
  for (int k = outer - 1; k >= 0; --k) {
    index[k] = remainder % plan.sizes[size_t(k)];
    remainder /= plan.sizes[size_t(k)];
    inBase += index[k] * plan.inStrides[size_t(k)];
  }
  for (int64_t row = rowBegin; row < rowEnd; ++row) {
    W *dst = out + row * length;
    const W *src = in + inBase;
    switch (plan.loop) {
      case StridedCopyPlan::Loop::ContiguousRows: std::memcpy(dst, src, size_t(length) * sizeof(W)); break;
      case StridedCopyPlan::Loop::BroadcastRows: std::fill(dst, dst + length, *src); break;
      default:
        for (int64_t j = 0; j < length; ++j) dst[j] = src[j * innerStride];
        break;
    }
    // Next row: an odometer over the outer dims.
    for (int k = outer - 1; k >= 0; --k) {
      inBase += plan.inStrides[size_t(k)];
      if (++index[k] < plan.sizes[size_t(k)]) break;
      inBase -= plan.inStrides[size_t(k)] * plan.sizes[size_t(k)];
      index[k] = 0;
    }
  }
}

/// Indices [x0, x1) of a tile whose output inner dim is only kLength long (a few channels made
/// channels-last): that loop unrolled, so each x is kLength loads from as many input rows and
/// kLength adjacent stores, not a loop of a few trips.
template <class W, int kLength>
void copyShortTile(const W *src, int64_t innerStride, W *dst, int64_t unitOutStride, int64_t x0, int64_t x1) {
  for (int64_t x = x0; x < x1; ++x) {
#pragma GCC unroll 4
    for (int y = 0; y < kLength; ++y) dst[x * unitOutStride + y] = src[y * innerStride + x];
  }
}

/// Units [unitBegin, unitEnd) of a blocked transpose. A unit is one tile-row (kTile indices of the
/// unit-stride dim) of one outer index, across the whole output inner dim, walked tile by tile.
template <class W>
void copyTiles(const StridedCopyPlan &plan, const W *in, W *out, int64_t unitBegin, int64_t unitEnd) {
  constexpr int64_t kTile = tileFor<W>();
  const int rank = int(plan.sizes.size());
  const int last = rank - 1, unit = plan.unitAxis;
  const int64_t length = plan.sizes.back(), innerStride = plan.inStrides.back();
  const int64_t unitSize = plan.sizes[size_t(unit)], unitOutStride = plan.outStrides[size_t(unit)];
  const int64_t tilesPerRow = (unitSize + kTile - 1) / kTile;
  for (int64_t u = unitBegin; u < unitEnd; ++u) {
    const int64_t x0 = (u % tilesPerRow) * kTile;
    const int64_t x1 = std::min(unitSize, x0 + kTile);
    int64_t remainder = u / tilesPerRow;
    int64_t inBase = plan.inOffset, outBase = 0;
    for (int k = rank - 1; k >= 0; --k) {
      if (k == last || k == unit) continue;
      const int64_t i = remainder % plan.sizes[size_t(k)];
      remainder /= plan.sizes[size_t(k)];
      inBase += i * plan.inStrides[size_t(k)];
      outBase += i * plan.outStrides[size_t(k)];
    }
    switch (length) {
      case 2: copyShortTile<W, 2>(in + inBase, innerStride, out + outBase, unitOutStride, x0, x1); continue;
      case 3: copyShortTile<W, 3>(in + inBase, innerStride, out + outBase, unitOutStride, x0, x1); continue;
      case 4: copyShortTile<W, 4>(in + inBase, innerStride, out + outBase, unitOutStride, x0, x1); continue;
      default: break;
    }
    for (int64_t y0 = 0; y0 < length; y0 += kTile) {
      const int64_t y1 = std::min(length, y0 + kTile);
      for (int64_t x = x0; x < x1; ++x) {
        W *dst = out + outBase + x * unitOutStride;
        const W *src = in + inBase + x;
        for (int64_t y = y0; y < y1; ++y) dst[y] = src[y * innerStride];
      }
    }
  }
}

template <class W>
void runPlan(const StridedCopyPlan &plan, const void *inBytes, void *outBytes, ThreadPool *pool) {
  const auto *in = static_cast<const W *>(inBytes);
  auto *out = static_cast<W *>(outBytes);
  const int64_t count = elementCount(plan.sizes);
  if (count == 0) return;
  const size_t bytes = size_t(count) * sizeof(W);
  if (plan.loop == StridedCopyPlan::Loop::BlockedTranspose) {
    constexpr int64_t kTile = tileFor<W>();
    const int64_t unitSize = plan.sizes[size_t(plan.unitAxis)];
    const int64_t units = count / (unitSize * plan.sizes.back()) * ((unitSize + kTile - 1) / kTile);
    forRanges(units, bytes, pool, [&](int64_t begin, int64_t end) { copyTiles<W>(plan, in, out, begin, end); });
    return;
  }
  forRanges(count / plan.sizes.back(), bytes, pool,
            [&](int64_t begin, int64_t end) { copyRowRange<W>(plan, in, out, begin, end); });
}

template <size_t kBytes>
void runPlanWords(const StridedCopyPlan &plan, const void *in, void *out, ThreadPool *pool) {
  runPlan<Word<kBytes>>(plan, in, out, pool);
}

}  // namespace

int64_t elementCount(const std::vector<int64_t> &sizes) {
  int64_t count = 1;
  for (int64_t size : sizes) count *= size;
  return count;
}

std::vector<int64_t> denseStrides(const std::vector<int64_t> &sizes) {
  std::vector<int64_t> strides(sizes.size());
  int64_t stride = 1;
  for (size_t k = sizes.size(); k-- > 0;) {
    strides[k] = stride;
    stride *= sizes[k];
  }
  return strides;
}

std::optional<std::vector<int64_t>> broadcastStrides(const std::vector<int64_t> &in, const std::vector<int64_t> &out) {
  if (in.size() > out.size()) return std::nullopt;
  const std::vector<int64_t> inDense = denseStrides(in);
  std::vector<int64_t> strides(out.size(), 0);
  const size_t lead = out.size() - in.size();
  for (size_t k = 0; k < in.size(); ++k) {
    if (in[k] == out[lead + k]) {
      strides[lead + k] = in[k] == 1 ? 0 : inDense[k];
    } else if (in[k] != 1) {
      return std::nullopt;
    }
  }
  return strides;
}

int64_t copyTasks(size_t bytes, int64_t units, const ThreadPool *pool) {
  if (pool == nullptr || pool->size() <= 1 || bytes < kParallelBytes) return 1;
  return std::max<int64_t>(1, std::min<int64_t>(units, pool->size() * kTasksPerThread));
}

StridedCopyPlan planStridedCopy(size_t elementBytes, const std::vector<int64_t> &sizes,
                                const std::vector<int64_t> &inStrides, int64_t inOffset) {
  if (elementBytes != 1 && elementBytes != 2 && elementBytes != 4 && elementBytes != 8 && elementBytes != 16) {
    // An odd element size: the same copy over bytes, with the element as the innermost dim.
    const auto width = int64_t(elementBytes);
    std::vector<int64_t> byteSizes = sizes, byteStrides = inStrides;
    for (int64_t &stride : byteStrides) stride *= width;
    byteSizes.push_back(width);
    byteStrides.push_back(1);
    return planStridedCopy(1, byteSizes, byteStrides, inOffset * width);
  }
  StridedCopyPlan plan;
  plan.elementBytes = elementBytes;
  plan.inOffset = inOffset;
  const bool empty = elementCount(sizes) == 0;
  for (size_t k = 0; k < sizes.size(); ++k) {
    if (sizes[k] == 1 && !empty) continue;  // A size-1 dim moves nothing.
    // Dims that stay contiguous in the input merge into one (broadcast dims too: 0 == 0 * size).
    if (!plan.sizes.empty() && plan.inStrides.back() == inStrides[k] * sizes[k]) {
      plan.sizes.back() *= sizes[k];
      plan.inStrides.back() = inStrides[k];
      continue;
    }
    plan.sizes.push_back(sizes[k]);
    plan.inStrides.push_back(inStrides[k]);
  }
  if (plan.sizes.empty()) {
    plan.sizes = {1};
    plan.inStrides = {1};
  }
  if (plan.sizes.size() > kMaxStridedCopyRank) {
    plan.sizes.clear();
    plan.inStrides.clear();
    return plan;
  }
  plan.outStrides = denseStrides(plan.sizes);
  const int64_t inner = plan.inStrides.back();
  if (inner == 1) {
    plan.loop = StridedCopyPlan::Loop::ContiguousRows;
  } else if (inner == 0) {
    plan.loop = StridedCopyPlan::Loop::BroadcastRows;
  } else {
    plan.loop = StridedCopyPlan::Loop::Strided;
    for (size_t k = 0; k + 1 < plan.sizes.size(); ++k) {
      if (plan.inStrides[k] == 1) {
        plan.loop = StridedCopyPlan::Loop::BlockedTranspose;
        plan.unitAxis = int(k);
      }
    }
  }
  return plan;
}

StridedCopyPlan planTranspose(size_t elementBytes, const std::vector<int64_t> &inSizes,
                              const std::vector<int64_t> &perm) {
  const std::vector<int64_t> inStrides = denseStrides(inSizes);
  std::vector<int64_t> sizes(perm.size()), strides(perm.size());
  for (size_t k = 0; k < perm.size(); ++k) {
    sizes[k] = inSizes[size_t(perm[k])];
    strides[k] = inStrides[size_t(perm[k])];
  }
  return planStridedCopy(elementBytes, sizes, strides, 0);
}

void stridedCopy(const StridedCopyPlan &plan, const void *in, void *out, ThreadPool *pool) {
  switch (plan.elementBytes) {
    case 1: return runPlan<uint8_t>(plan, in, out, pool);
    case 2: return runPlan<uint16_t>(plan, in, out, pool);
    case 4: return runPlan<uint32_t>(plan, in, out, pool);
    case 8: return runPlan<uint64_t>(plan, in, out, pool);
    case 16: return runPlanWords<16>(plan, in, out, pool);
    default: TESSEL_CHECK(false, "strided copy of {}-byte elements was not planned as bytes", plan.elementBytes);
  }
}

void copyRows(int64_t rows, size_t rowBytes, const void *src, size_t srcPitch, void *dst, size_t dstPitch,
              ThreadPool *pool) {
  const auto *from = static_cast<const std::byte *>(src);
  auto *to = static_cast<std::byte *>(dst);
  if (rows == 1 && rowBytes >= 2 * kParallelBytes) {
    // One long row (a Concat on axis 0): split the row itself.
    const int64_t chunks = copyTasks(rowBytes, int64_t(rowBytes / kParallelBytes), pool);
    if (chunks > 1) {
      pool->parallelFor(chunks, [&](int64_t c) {
        const size_t begin = rowBytes * size_t(c) / size_t(chunks), end = rowBytes * size_t(c + 1) / size_t(chunks);
        std::memcpy(to + begin, from + begin, end - begin);
      });
      return;
    }
  }
  forRanges(rows, size_t(rows) * rowBytes, pool, [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) std::memcpy(to + size_t(r) * dstPitch, from + size_t(r) * srcPitch, rowBytes);
  });
}

const char *loopName(StridedCopyPlan::Loop loop) {
  switch (loop) {
    case StridedCopyPlan::Loop::ContiguousRows: return "contiguous_rows";
    case StridedCopyPlan::Loop::BroadcastRows: return "broadcast_rows";
    case StridedCopyPlan::Loop::BlockedTranspose: return "blocked_transpose";
    case StridedCopyPlan::Loop::Strided: return "strided";
  }
  return "strided";
}

}  // namespace tessel::cpu
