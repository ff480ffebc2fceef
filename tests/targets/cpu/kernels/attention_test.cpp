// The flash-attention kernel against a naive double-precision softmax(scale Q Kᵀ + mask) V, for
// every GEMM microkernel and task-body variant the host can run (the others are skipped): ragged
// sequence lengths around the query/key block edges, causal masks with Sq != Sk, additive masks
// broadcast over batch, heads, queries or keys, D = 64 and 40, Dv != D, grouped-query attention
// (fewer K/V heads than query heads), the rows path of calls with a few queries (decode steps), and
// runs on a thread pool with fewer scratch slots than threads. A DISABLED_ timing test compares with the unfused
// sequence (GEMM, softmax, GEMM) at the BERT/GPT-2 and ViT shapes.
//
// Tolerance: |y - ref| <= 2e-5 + 1e-4 |ref|. Each output is a convex combination of V rows in
// [-1, 1], so float rounding stays near 1e-6; a dropped key block or a wrong rescale is off by
// far more.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <limits>
#include <memory>
#include <random>
#include <vector>

#include "support/thread_pool.h"
#include "targets/cpu/kernels/attention.h"
#include "targets/cpu/kernels/gemm.h"

namespace tessel::cpu {
namespace {

std::vector<float> randomFloats(int64_t count, uint32_t seed, float lo = -1.0f, float hi = 1.0f) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(size_t(std::max<int64_t>(count, 1)));
  for (float &x : v) x = dist(rng);
  return v;
}

/// A mask of `sizes` (rank <= 4, broadcastable to [B,H,Sq,Sk]) and its broadcast strides.
struct TestMask {
  std::vector<int64_t> sizes;
  std::vector<float> values;
};

void setMaskStrides(AttentionShape &shape, const std::vector<int64_t> &sizes) {
  int64_t stride = 1;
  for (int axis = 3; axis >= 0; --axis) {
    const int64_t offset = int64_t(sizes.size()) - (4 - axis);
    const int64_t size = offset >= 0 ? sizes[size_t(offset)] : 1;
    shape.maskStrides[axis] = size == 1 ? 0 : stride;
    stride *= size;
  }
}

/// softmax(scale Q Kᵀ + mask + causal) V in double; rows that see no key are NaN.
std::vector<double> naiveAttention(const AttentionShape &s, const std::vector<float> &q, const std::vector<float> &k,
                                   const std::vector<float> &v, const float *mask) {
  std::vector<double> y(size_t(s.batch * s.heads * s.queries * s.valueDepth));
  std::vector<double> scores(size_t(s.keys));
  for (int64_t b = 0; b < s.batch; ++b) {
    for (int64_t h = 0; h < s.heads; ++h) {
      const int64_t head = b * s.heads + h;
      const int64_t kvHeads = s.kvHeads > 0 ? s.kvHeads : s.heads;
      const int64_t kvHead = b * kvHeads + h / (s.heads / kvHeads);
      for (int64_t i = 0; i < s.queries; ++i) {
        double max = -std::numeric_limits<double>::infinity();
        for (int64_t j = 0; j < s.keys; ++j) {
          double dot = 0;
          for (int64_t d = 0; d < s.depth; ++d) {
            dot += double(q[size_t((head * s.queries + i) * s.depth + d)]) * k[size_t((kvHead * s.keys + j) * s.depth + d)];
          }
          double score = s.scale * dot;
          if (mask != nullptr) {
            score += mask[b * s.maskStrides[0] + h * s.maskStrides[1] + i * s.maskStrides[2] + j * s.maskStrides[3]];
          }
          if (s.causal && j > i + s.keys - s.queries) score = -std::numeric_limits<double>::infinity();
          scores[size_t(j)] = score;
          max = std::max(max, score);
        }
        double sum = 0;
        for (int64_t j = 0; j < s.keys; ++j) {
          scores[size_t(j)] = std::exp(scores[size_t(j)] - max);
          sum += scores[size_t(j)];
        }
        for (int64_t c = 0; c < s.valueDepth; ++c) {
          double acc = 0;
          for (int64_t j = 0; j < s.keys; ++j) acc += scores[size_t(j)] * v[size_t((kvHead * s.keys + j) * s.valueDepth + c)];
          y[size_t((head * s.queries + i) * s.valueDepth + c)] = sum > 0 ? acc / sum : std::nan("");
        }
      }
    }
  }
  return y;
}

struct Case {
  int64_t batch, heads, queries, keys, depth, valueDepth;
  bool causal = false;
  std::vector<int64_t> maskSizes = {};  // Empty: no mask.
  float scale = 0.0f;                   // 0: 1/sqrt(D).
  int64_t kvHeads = 0;                  // Grouped-query attention's K/V heads; 0: H.
};

void checkCase(const Case &c, const AttentionKernels &kernels, ThreadPool *pool, int slots) {
  SCOPED_TRACE(testing::Message() << kernels.gemm->name << " " << kernels.tile->name << " B=" << c.batch
                                  << " H=" << c.heads << " Sq=" << c.queries << " Sk=" << c.keys << " D=" << c.depth
                                  << " Dv=" << c.valueDepth << " causal=" << c.causal << " maskRank="
                                  << c.maskSizes.size() << " Hkv=" << c.kvHeads << " slots=" << slots);
  AttentionShape shape{c.batch, c.heads, c.queries, c.keys, c.depth, c.valueDepth};
  shape.kvHeads = c.kvHeads;
  const int64_t kvHeads = c.kvHeads > 0 ? c.kvHeads : c.heads;
  shape.scale = c.scale != 0.0f ? c.scale : 1.0f / std::sqrt(float(std::max<int64_t>(c.depth, 1)));
  shape.causal = c.causal;
  const uint32_t seed = uint32_t(c.queries * 31 + c.keys * 7 + c.depth);
  // Larger Q and K than [-1, 1] make the softmax peaky, so a wrong running max would show.
  const auto q = randomFloats(c.batch * c.heads * c.queries * c.depth, seed, -2.0f, 2.0f);
  const auto k = randomFloats(c.batch * kvHeads * c.keys * c.depth, seed + 1, -2.0f, 2.0f);
  const auto v = randomFloats(c.batch * kvHeads * c.keys * c.valueDepth, seed + 2);
  std::vector<float> mask;
  if (!c.maskSizes.empty()) {
    int64_t count = 1;
    for (int64_t size : c.maskSizes) count *= size;
    mask = randomFloats(count, seed + 3, -3.0f, 1.0f);
    // Some hidden keys, as a padding mask has.
    for (size_t i = 0; i < mask.size(); i += 5) mask[i] = -std::numeric_limits<float>::infinity();
    setMaskStrides(shape, c.maskSizes);
  }
  const float *maskData = mask.empty() ? nullptr : mask.data();
  const std::vector<double> want = naiveAttention(shape, q, k, v, maskData);

  const int64_t outCount = c.batch * c.heads * c.queries * c.valueDepth;
  std::vector<float> y(size_t(outCount), -12345.0f);
  const size_t scratchBytes = attentionScratchBytes(shape, kernels, slots);
  std::unique_ptr<std::byte, decltype(&std::free)> scratch(
      static_cast<std::byte *>(std::aligned_alloc(64, std::max<size_t>(scratchBytes, 64))), &std::free);
  attention(shape, kernels, q.data(), k.data(), v.data(), maskData, y.data(), scratch.get(), slots, pool);

  int reported = 0;
  for (int64_t i = 0; i < outCount; ++i) {
    const double w = want[size_t(i)], g = y[size_t(i)];
    const bool close = std::isnan(w) ? std::isnan(g) : std::fabs(g - w) <= 2e-5 + 1e-4 * std::fabs(w);
    if (!close && reported++ < 5) ADD_FAILURE() << "element " << i << ": got " << g << ", want " << w;
  }
}

std::vector<AttentionKernels> runnableKernels() {
  std::vector<AttentionKernels> result;
  for (const GemmKernel &gemm : gemmKernels()) {
    if (!canRun(gemm) || gemm.operands != GemmOperands::F32) continue;  // The tiles multiply floats.
    for (const AttentionTileKernel &tile : attentionTileKernels()) {
      if (canRun(tile)) result.push_back({&gemm, &tile});
    }
  }
  return result;
}

const std::vector<Case> &cases() {
  static const std::vector<Case> all = {
      {1, 1, 1, 1, 1, 1},
      {1, 2, 5, 7, 3, 3},
      {2, 3, 13, 29, 40, 40},
      {1, 2, 70, 140, 64, 64},        // Two query blocks, two key blocks, ragged.
      {1, 2, 197, 197, 64, 64},       // ViT-B/16.
      {1, 1, 1, 197, 64, 64},         // One query (decoding).
      {1, 1, 197, 1, 40, 24},         // One key; Dv != D.
      {1, 2, 33, 33, 40, 40, true},
      {1, 2, 7, 150, 64, 64, true},   // Sq < Sk: every query sees a prefix plus the past.
      {1, 1, 150, 7, 16, 16, true},   // Sq > Sk: the first rows see nothing (NaN, as the softmax is).
      {2, 3, 17, 23, 8, 8, false, {2, 1, 17, 23}},  // Broadcast over heads.
      {2, 3, 17, 23, 8, 8, false, {2, 1, 1, 23}},   // A padding mask: batch and keys only.
      {2, 3, 17, 23, 8, 8, true, {23}},             // Rank 1, with causal.
      {2, 3, 17, 23, 8, 8, false, {3, 17, 1}},      // Broadcast over keys.
      {1, 2, 130, 131, 64, 64, false, {1, 2, 130, 131}, 0.3f},
      {1, 1, 300, 290, 16, 16, true},  // More queries than one task takes, even on one thread.
      // Grouped-query attention: 8 query heads over 2 K/V heads (Llama's decode and prefill), and 6
      // over 3 with a per-head mask.
      {2, 8, 1, 37, 32, 32, false, {2, 1, 1, 37}, 0.0f, 2},
      {1, 8, 21, 21, 32, 32, true, {1, 1, 21, 21}, 0.0f, 2},
      {2, 6, 9, 40, 16, 16, false, {2, 6, 9, 40}, 0.0f, 3},
      // The rows path (at most kMaxRowsPathQueries queries): causal with Sq < Sk and Sq > Sk, a
      // mask per query and head, D not a multiple of the partial sums' 16 lanes.
      {1, 2, 3, 50, 16, 16, true},
      {1, 1, 4, 2, 16, 16, true},
      {2, 3, 4, 33, 40, 24, false, {2, 3, 4, 33}},
      {1, 8, 2, 70, 64, 64, true, {1, 1, 2, 70}, 0.0f, 2},
  };
  return all;
}

TEST(AttentionKernelTest, MatchesNaiveOnOneThread) {
  for (const AttentionKernels &kernels : runnableKernels()) {
    for (const Case &c : cases()) checkCase(c, kernels, nullptr, 1);
  }
}

TEST(AttentionKernelTest, MatchesNaiveOnAPool) {
  ThreadPool pool(3);
  const AttentionKernels kernels = selectedAttentionKernels();
  for (const Case &c : cases()) {
    checkCase(c, kernels, &pool, 3);
    checkCase(c, kernels, &pool, 2);  // Fewer slots than threads: only two workers run.
  }
}

TEST(AttentionKernelTest, KernelNameNamesBothParts) {
  const AttentionKernels kernels = selectedAttentionKernels();
  const std::string name = attentionKernelName(kernels);
  EXPECT_NE(name.find(kernels.gemm->name), std::string::npos) << name;
  EXPECT_NE(name.find(kernels.tile->name), std::string::npos) << name;
}

// ---- Timing (run with --gtest_also_run_disabled_tests) ----------------------------------------

/// The unfused sequence per head: S = Q Kᵀ (sgemm on a transposed K), row softmax with std::exp
/// (the score matrix materialized), Y = P V (sgemm).
void unfusedAttention(const AttentionShape &s, const float *q, const float *k, const float *v, float *y,
                      std::vector<float> &kT, std::vector<float> &scores, int64_t head) {
  const float *qh = q + head * s.queries * s.depth;
  const float *kh = k + head * s.keys * s.depth;
  for (int64_t j = 0; j < s.keys; ++j) {
    for (int64_t d = 0; d < s.depth; ++d) kT[size_t(d * s.keys + j)] = kh[j * s.depth + d];
  }
  GemmEpilogue none;
  sgemm({s.queries, s.keys, s.depth}, qh, s.depth, kT.data(), s.keys, scores.data(), s.keys, none);
  for (int64_t i = 0; i < s.queries; ++i) {
    float *row = scores.data() + i * s.keys;
    float max = -std::numeric_limits<float>::infinity();
    for (int64_t j = 0; j < s.keys; ++j) max = std::max(max, row[j] * s.scale);
    float sum = 0;
    for (int64_t j = 0; j < s.keys; ++j) sum += row[j] = std::exp(row[j] * s.scale - max);
    for (int64_t j = 0; j < s.keys; ++j) row[j] /= sum;
  }
  sgemm({s.queries, s.valueDepth, s.keys}, scores.data(), s.keys, v + head * s.keys * s.valueDepth, s.valueDepth,
        y + head * s.queries * s.valueDepth, s.valueDepth, none);
}

template <class Fn>
double bestMs(Fn fn) {
  double best = 1e30;
  for (int rep = 0; rep < 30; ++rep) {
    const auto start = std::chrono::steady_clock::now();
    fn();
    best = std::min(best, std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
  }
  return best;
}

TEST(AttentionKernelTest, DISABLED_Timing) {
  const AttentionKernels kernels = selectedAttentionKernels();
  std::printf("kernel: %s\n", attentionKernelName(kernels).c_str());
  for (const auto &[batch, seq, causal] : std::vector<std::tuple<int64_t, int64_t, bool>>{
           {1, 128, false}, {1, 128, true}, {8, 128, false}, {1, 197, false}}) {
    AttentionShape s{batch, 12, seq, seq, 64, 64};
    s.scale = 0.125f;
    s.causal = causal;
    const auto q = randomFloats(batch * 12 * seq * 64, 1), k = randomFloats(batch * 12 * seq * 64, 2),
               v = randomFloats(batch * 12 * seq * 64, 3);
    std::vector<float> y(q.size());
    for (int threads : {1, 2}) {
      ThreadPool pool(threads);
      const size_t bytes = attentionScratchBytes(s, kernels, threads);
      std::unique_ptr<std::byte, decltype(&std::free)> scratch(static_cast<std::byte *>(std::aligned_alloc(64, bytes)),
                                                               &std::free);
      const double fused = bestMs([&] {
        attention(s, kernels, q.data(), k.data(), v.data(), nullptr, y.data(), scratch.get(), threads, &pool);
      });
      std::vector<std::vector<float>> kT(size_t(threads), std::vector<float>(size_t(seq * 64)));
      std::vector<std::vector<float>> scores(size_t(threads), std::vector<float>(size_t(seq * seq)));
      const double unfused = bestMs([&] {
        const int64_t heads = batch * 12;
        pool.parallelFor(threads, [&](int64_t t) {
          for (int64_t head = t; head < heads; head += threads) {
            unfusedAttention(s, q.data(), k.data(), v.data(), y.data(), kT[size_t(t)], scores[size_t(t)], head);
          }
        });
      });
      std::printf("B%lld H12 S%lld D64%s threads=%d: fused %.3f ms, unfused %.3f ms%s\n", (long long)batch,
                  (long long)seq, causal ? " causal" : "", threads, fused, unfused,
                  causal ? " (unfused ignores the causal mask)" : "");
    }
  }
}

}  // namespace
}  // namespace tessel::cpu
