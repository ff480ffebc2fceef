// Data movement for the cpu target as one strided gather: out[i] = in[offset + Σ i_k · stride_k],
// out dense. Transpose (strides permuted), Slice (strides times steps, an offset), Expand (stride 0
// on broadcast dims) and Tile (Expand over interleaved [repeat, size] dims) all lower to it. A plan
// built once at lowering merges dims that stay contiguous and drops size-1 dims, then picks a loop:
//
//   contiguous rows   inner stride 1: one memcpy per output row ([B,S,H,D] -> [B,H,S,D] lands here)
//   broadcast rows    inner stride 0: fill each row with one element
//   blocked transpose the input's unit-stride dim is not the output's inner one (e.g. swapping
//                     the last two dims): copy kTile x kTile tiles so both sides stay in cache
//   strided           anything else: an element-by-element gather along the inner dim
//
// Elements are moved as 1, 2, 4 or 8-byte words (any fixed-size dtype). Large copies split their
// outer rows over a ThreadPool.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "support/thread_pool.h"

namespace tessel::cpu {

/// A strided copy, simplified. Strides and offset count elements of the input.
struct StridedCopyPlan {
  enum class Loop { ContiguousRows, BroadcastRows, BlockedTranspose, Strided };
  size_t elementBytes = 4;
  std::vector<int64_t> sizes;      // Output sizes after merging; at least one dim.
  std::vector<int64_t> inStrides;  // One per dim of `sizes`.
  std::vector<int64_t> outStrides; // Dense row-major strides of `sizes`.
  int64_t inOffset = 0;
  Loop loop = Loop::ContiguousRows;
  int unitAxis = -1;  // BlockedTranspose: the dim whose input stride is 1.
};

/// Builds the plan for out[sizes] = in[offset + Σ i_k · inStrides_k]. Precondition: strides address
/// only valid input elements. Any element size works; 1, 2, 4 and 8 bytes move as machine words.
StridedCopyPlan planStridedCopy(size_t elementBytes, const std::vector<int64_t> &sizes,
                                const std::vector<int64_t> &inStrides, int64_t inOffset);

/// The plan for Transpose: out axis k is in axis perm[k].
StridedCopyPlan planTranspose(size_t elementBytes, const std::vector<int64_t> &inSizes,
                              const std::vector<int64_t> &perm);

/// Dims a plan may keep after merging; planStridedCopy leaves `sizes` empty beyond it (a caller
/// then uses another kernel). No real model comes near it.
constexpr size_t kMaxStridedCopyRank = 16;

/// Runs the plan. `pool` may be null (single thread).
void stridedCopy(const StridedCopyPlan &plan, const void *in, void *out, ThreadPool *pool);

/// Copies `rows` rows of `rowBytes` bytes from src (row pitch srcPitch) to dst (row pitch dstPitch),
/// split over `pool` when large. Concat and Split are one such copy per input or output.
void copyRows(int64_t rows, size_t rowBytes, const void *src, size_t srcPitch, void *dst, size_t dstPitch,
              ThreadPool *pool);

/// Element count of `sizes`.
int64_t elementCount(const std::vector<int64_t> &sizes);

/// Row-major element strides of `sizes`.
std::vector<int64_t> denseStrides(const std::vector<int64_t> &sizes);

/// The element strides, one per dim of `out`, that read a dense tensor of sizes `in` broadcast to
/// `out` (numpy rules, right-aligned; 0 along a broadcast dim); nullopt when it does not broadcast.
std::optional<std::vector<int64_t>> broadcastStrides(const std::vector<int64_t> &in, const std::vector<int64_t> &out);

/// The loop's name, for kernel reports: "contiguous_rows", "blocked_transpose", ...
const char *loopName(StridedCopyPlan::Loop loop);

/// How many tasks a copy of `bytes` bytes over `units` independent units should use on `pool`.
int64_t copyTasks(size_t bytes, int64_t units, const ThreadPool *pool);

}  // namespace tessel::cpu
