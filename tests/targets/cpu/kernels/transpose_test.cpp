// The strided-copy kernel (Transpose, Slice, Expand, Tile) against a naive element-by-element
// gather: every permutation of ragged 3-D and 4-D shapes (including [B,S,H,D] -> [B,H,S,D] and
// last-two-dim swaps around the tile edge, inner dims of a few elements), broadcast and negative strides, element sizes 1 to 16
// bytes, one thread and a pool (sizes past the threading threshold). Exact comparison: a copy
// either moves the right element or it does not.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <numeric>
#include <random>
#include <vector>

#include "support/thread_pool.h"
#include "targets/cpu/kernels/transpose.h"

namespace tessel::cpu {
namespace {

/// out[i] = in[offset + Σ i_k stride_k], element by element, over bytes.
std::vector<unsigned char> naiveCopy(size_t elementBytes, const std::vector<int64_t> &sizes,
                                     const std::vector<int64_t> &strides, int64_t offset,
                                     const std::vector<unsigned char> &in) {
  const int64_t count = elementCount(sizes);
  std::vector<unsigned char> out(size_t(count) * elementBytes);
  std::vector<int64_t> index(sizes.size(), 0);
  for (int64_t e = 0; e < count; ++e) {
    int64_t source = offset;
    for (size_t k = 0; k < sizes.size(); ++k) source += index[k] * strides[k];
    std::memcpy(&out[size_t(e) * elementBytes], &in[size_t(source) * elementBytes], elementBytes);
    for (size_t k = sizes.size(); k-- > 0;) {
      if (++index[k] < sizes[k]) break;
      index[k] = 0;
    }
  }
  return out;
}

std::vector<unsigned char> randomBytes(size_t count, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<unsigned char> bytes(count);
  for (unsigned char &b : bytes) b = static_cast<unsigned char>(rng());
  return bytes;
}

void checkCopy(size_t elementBytes, const std::vector<int64_t> &sizes, const std::vector<int64_t> &strides,
               int64_t offset, int64_t inputElements, ThreadPool *pool) {
  SCOPED_TRACE(testing::Message() << "elementBytes=" << elementBytes << " sizes=" << testing::PrintToString(sizes)
                                  << " strides=" << testing::PrintToString(strides) << " offset=" << offset);
  const auto in = randomBytes(size_t(inputElements) * elementBytes, uint32_t(inputElements));
  const auto want = naiveCopy(elementBytes, sizes, strides, offset, in);
  std::vector<unsigned char> got(want.size() + 1, 0xAB);  // One guard byte past the end.
  const StridedCopyPlan plan = planStridedCopy(elementBytes, sizes, strides, offset);
  ASSERT_FALSE(plan.sizes.empty());
  stridedCopy(plan, in.data(), got.data(), pool);
  EXPECT_EQ(got.back(), 0xAB) << "wrote past the output";
  got.pop_back();
  EXPECT_TRUE(got == want) << "loop " << loopName(plan.loop);
}

void checkAllPermutations(const std::vector<int64_t> &inSizes, size_t elementBytes, ThreadPool *pool) {
  std::vector<int64_t> perm(inSizes.size());
  std::iota(perm.begin(), perm.end(), 0);
  const std::vector<int64_t> inStrides = denseStrides(inSizes);
  do {
    std::vector<int64_t> sizes(perm.size()), strides(perm.size());
    for (size_t k = 0; k < perm.size(); ++k) {
      sizes[k] = inSizes[size_t(perm[k])];
      strides[k] = inStrides[size_t(perm[k])];
    }
    checkCopy(elementBytes, sizes, strides, 0, elementCount(inSizes), pool);
    // planTranspose must agree with the strides it is built from.
    const StridedCopyPlan viaTranspose = planTranspose(elementBytes, inSizes, perm);
    const StridedCopyPlan direct = planStridedCopy(elementBytes, sizes, strides, 0);
    EXPECT_EQ(viaTranspose.sizes, direct.sizes);
    EXPECT_EQ(viaTranspose.inStrides, direct.inStrides);
  } while (std::next_permutation(perm.begin(), perm.end()));
}

TEST(StridedCopyTest, EveryPermutationOfRaggedShapes) {
  for (size_t elementBytes : {1u, 2u, 4u, 8u, 16u, 3u}) {
    checkAllPermutations({3, 5, 7}, elementBytes, nullptr);
    checkAllPermutations({2, 1, 17, 33}, elementBytes, nullptr);
    checkAllPermutations({4, 9, 70}, elementBytes, nullptr);  // Inner dims of 2 to 4, past a tile.
  }
  checkAllPermutations({2, 3, 4, 5, 6}, 4, nullptr);
}

TEST(StridedCopyTest, PicksTheFastLoops) {
  // [B,S,H,D] -> [B,H,S,D]: the inner D stays contiguous, so whole rows move.
  EXPECT_EQ(planTranspose(4, {2, 128, 12, 64}, {0, 2, 1, 3}).loop, StridedCopyPlan::Loop::ContiguousRows);
  // Swapping the last two dims: a blocked transpose.
  EXPECT_EQ(planTranspose(4, {2, 12, 128, 64}, {0, 1, 3, 2}).loop, StridedCopyPlan::Loop::BlockedTranspose);
  // Identity permutation collapses to one dim.
  EXPECT_EQ(planTranspose(4, {2, 3, 4}, {0, 1, 2}).sizes, std::vector<int64_t>{24});
  // A broadcast over the last dim fills rows.
  EXPECT_EQ(planStridedCopy(4, {3, 8}, {1, 0}, 0).loop, StridedCopyPlan::Loop::BroadcastRows);
}

TEST(StridedCopyTest, TransposeOnAPool) {
  ThreadPool pool(3);
  // Past the threading threshold, with ragged tiles.
  for (const auto &[sizes, perm] : std::vector<std::pair<std::vector<int64_t>, std::vector<int64_t>>>{
           {{2, 130, 12, 65}, {0, 2, 1, 3}},
           {{2, 12, 131, 67}, {0, 1, 3, 2}},
           {{517, 259}, {1, 0}},
           {{3, 67, 129, 5}, {3, 2, 0, 1}},
           {{1, 3, 224, 224}, {0, 2, 3, 1}}}) {  // An image of three channels made channels-last.
    const std::vector<int64_t> inStrides = denseStrides(sizes);
    std::vector<int64_t> outSizes(perm.size()), strides(perm.size());
    for (size_t k = 0; k < perm.size(); ++k) {
      outSizes[k] = sizes[size_t(perm[k])];
      strides[k] = inStrides[size_t(perm[k])];
    }
    checkCopy(4, outSizes, strides, 0, elementCount(sizes), &pool);
    checkCopy(2, outSizes, strides, 0, elementCount(sizes), &pool);
    checkCopy(1, outSizes, strides, 0, elementCount(sizes), &pool);
  }
}

TEST(StridedCopyTest, SlicesBroadcastsAndTiles) {
  ThreadPool pool(2);
  for (ThreadPool *p : {static_cast<ThreadPool *>(nullptr), &pool}) {
    // Slice [1:7:2, ::-1, 3:] of a [9, 11, 130] tensor (strides 1430, 130, 1).
    checkCopy(4, {3, 11, 127}, {2 * 1430, -130, 1}, 1430 + 10 * 130 + 3, 9 * 11 * 130, p);
    // Slice with a negative inner step.
    checkCopy(8, {5, 64}, {130, -2}, 129, 5 * 130, p);
    // Expand [3, 1, 5] -> [4, 3, 700, 5] and [700] -> [3, 700].
    checkCopy(4, {4, 3, 700, 5}, {0, 5, 0, 1}, 0, 15, p);
    checkCopy(1, {300, 700}, {0, 1}, 0, 700, p);
    checkCopy(4, {300, 700}, {1, 0}, 0, 300, p);
    // Tile [2, 3] by [2, 1000]: [2, 2, 1000, 3] over strides [0, 3, 0, 1].
    checkCopy(4, {2, 2, 1000, 3}, {0, 3, 0, 1}, 0, 6, p);
  }
  // Empty and scalar copies.
  checkCopy(4, {3, 0, 5}, {0, 5, 1}, 0, 1, nullptr);
  checkCopy(4, {}, {}, 0, 1, nullptr);
}

TEST(StridedCopyTest, CopyRowsMatchesMemcpyPerRow) {
  ThreadPool pool(3);
  for (const auto &[rows, rowBytes] : std::vector<std::pair<int64_t, size_t>>{{7, 13}, {3000, 300}, {1, 1 << 20}}) {
    const size_t srcPitch = rowBytes + 5, dstPitch = rowBytes + 11;
    const auto src = randomBytes(size_t(rows) * srcPitch, 7);
    std::vector<unsigned char> got(size_t(rows) * dstPitch, 0), want(got.size(), 0);
    for (int64_t r = 0; r < rows; ++r) std::memcpy(&want[size_t(r) * dstPitch], &src[size_t(r) * srcPitch], rowBytes);
    copyRows(rows, rowBytes, src.data(), srcPitch, got.data(), dstPitch, &pool);
    EXPECT_TRUE(got == want) << rows << " rows of " << rowBytes;
  }
}

}  // namespace
}  // namespace tessel::cpu
