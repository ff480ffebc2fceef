// The attention task body (see attention_tile.h), written once in plain C++ and included by one
// small file per isa/<family>/ folder so the compiler vectorizes every loop (packing, softmax,
// normalization) with that ISA's flags. Everything here has internal linkage: each ISA's copy
// stays its own.
//
// Scores are computed transposed (keys down, queries across): the softmax reductions then run
// across vector lanes with no horizontal steps, and P packs for O += P V with contiguous reads.
// The running max compares floats as ordered integers, which vectorizes without finite-math
// flags; exp is vector_math.h's fastExp.
#pragma once

#include <algorithm>
#include <bit>
#include <cstdint>
#include <cstring>
#include <limits>

#include "targets/cpu/kernels/attention_tile.h"
#include "targets/cpu/kernels/vector_math.h"

namespace tessel::cpu {
namespace {

constexpr float kNegInf = -std::numeric_limits<float>::infinity();
constexpr int64_t kMaxPanelWidth = 64;  // Widest mr or nr a gemm.def row may have here.

int64_t roundUpTo(int64_t a, int64_t b) { return (a + b - 1) / b * b; }

/// The bits of x as an int32 that orders like x (negative floats get their magnitude bits
/// flipped). A positive NaN orders above +inf, so it still reaches the maximum.
inline int32_t orderedBits(float x) {
  const int32_t bits = std::bit_cast<int32_t>(x);
  return bits ^ ((bits >> 31) & 0x7fffffff);
}

/// The inverse of orderedBits (the mapping is its own inverse).
inline float orderedFloat(int32_t ordered) { return std::bit_cast<float>(ordered ^ ((ordered >> 31) & 0x7fffffff)); }

// ---- Packing -------------------------------------------------------------------------------

/// One panel with its width known at compile time, so the interleaving vectorizes.
template <int64_t kWidth>
void packPanel(const float *const *rows, int64_t depth, float scale, float *dst) {
  for (int64_t d = 0; d < depth; ++d) {
    for (int64_t i = 0; i < kWidth; ++i) dst[d * kWidth + i] = scale * rows[i][d];
  }
}

void packPanelAnyWidth(const float *const *rows, int64_t width, int64_t depth, float scale, float *dst) {
  for (int64_t d = 0; d < depth; ++d) {
    for (int64_t i = 0; i < width; ++i) dst[d * width + i] = scale * rows[i][d];
  }
}

/// Rows [0, rows) of `src` (row stride depth) times `scale` as panels of `width` rows, each
/// `depth` steps of `width` floats: the A operand (width = mr) or, read as columns, the B operand
/// (width = nr) of a product over `depth`. Rows past `rows` read `zeros`.
void packRowPanels(const float *src, int64_t rows, int64_t depth, float scale, int64_t width, const float *zeros,
                   float *dst) {
  const float *panelRows[kMaxPanelWidth];
  for (int64_t r0 = 0; r0 < rows; r0 += width, dst += depth * width) {
    for (int64_t i = 0; i < width; ++i) panelRows[i] = r0 + i < rows ? src + (r0 + i) * depth : zeros;
    switch (width) {
      case 4: packPanel<4>(panelRows, depth, scale, dst); break;
      case 6: packPanel<6>(panelRows, depth, scale, dst); break;
      case 8: packPanel<8>(panelRows, depth, scale, dst); break;
      case 14: packPanel<14>(panelRows, depth, scale, dst); break;
      case 16: packPanel<16>(panelRows, depth, scale, dst); break;
      case 32: packPanel<32>(panelRows, depth, scale, dst); break;
      default: packPanelAnyWidth(panelRows, width, depth, scale, dst); break;
    }
  }
}

/// One full-width panel of packProbabilities with the width known at compile time.
template <int64_t kWidth>
void packProbabilityPanel(const float *scores, int64_t ld, int64_t keys, float *dst) {
  for (int64_t p = 0; p < keys; ++p) {
    for (int64_t i = 0; i < kWidth; ++i) dst[p * kWidth + i] = scores[p * ld + i];
  }
}

/// Columns [0, columns) of S^T (keys x queries, row stride ld) as the A operand of O += P V:
/// mr-query panels of `keys` steps; a step is mr consecutive floats of one S^T row.
void packProbabilities(const float *scores, int64_t ld, int64_t keys, int64_t columns, int64_t mr, float *dst) {
  for (int64_t i0 = 0; i0 < columns; i0 += mr, dst += keys * mr) {
    const int64_t width = std::min(mr, columns - i0);
    if (width == mr) {
      switch (mr) {
        case 4: packProbabilityPanel<4>(scores + i0, ld, keys, dst); continue;
        case 6: packProbabilityPanel<6>(scores + i0, ld, keys, dst); continue;
        case 8: packProbabilityPanel<8>(scores + i0, ld, keys, dst); continue;
        case 14: packProbabilityPanel<14>(scores + i0, ld, keys, dst); continue;
        default: break;
      }
    }
    for (int64_t p = 0; p < keys; ++p) {
      const float *src = scores + p * ld + i0;
      float *step = dst + p * mr;
      for (int64_t i = 0; i < width; ++i) step[i] = src[i];
      for (int64_t i = width; i < mr; ++i) step[i] = 0.0f;
    }
  }
}

/// V rows [0, keys) x cols [0, valueDepth) as nr-column panels of `keys` steps.
void packValues(const float *values, int64_t keys, int64_t valueDepth, int64_t nr, float *dst) {
  for (int64_t jn = 0; jn < valueDepth; jn += nr, dst += keys * nr) {
    const int64_t cols = std::min(nr, valueDepth - jn);
    for (int64_t p = 0; p < keys; ++p) {
      float *row = dst + p * nr;
      std::memcpy(row, values + p * valueDepth + jn, size_t(cols) * sizeof(float));
      std::fill(row + cols, row + nr, 0.0f);
    }
  }
}

// ---- Online softmax over one S^T tile -------------------------------------------------------

/// The first query that sees key j0 + j (0 without a causal mask): the columns before it are
/// hidden, so the softmax skips them and leaves probability 0.
inline int64_t firstVisibleQuery(const AttentionTileArgs &args, int64_t j0, int64_t j) {
  return args.causal ? std::clamp<int64_t>(j0 + j - args.causalShift, 0, args.rows) : 0;
}

/// Adds the mask to the visible columns of row j (key j0 + j).
inline void maskRow(const AttentionTileArgs &args, int64_t j0, int64_t j, float *s) {
  const int64_t queries = args.rows;
  const int64_t first = firstVisibleQuery(args, j0, j);
  if (args.mask == nullptr) return;
  const float *m = args.mask + (j0 + j) * args.maskKeyStride;
  if (args.maskQueryStride == 0) {
    const float bias = m[0];
    for (int64_t i = first; i < queries; ++i) s[i] += bias;
  } else if (args.maskQueryStride == 1) {
    for (int64_t i = first; i < queries; ++i) s[i] += m[i];
  } else {
    const int64_t stride = args.maskQueryStride;
    for (int64_t i = first; i < queries; ++i) s[i] += m[i * stride];
  }
}

/// Turns scores rows [0, keys) into probabilities against the updated running max, and updates
/// the running sums and the accumulator.
inline void onlineSoftmax(const AttentionTileArgs &args, int64_t j0, int64_t keys) {
  const int64_t queries = args.rows;
  auto *blockMax = reinterpret_cast<int32_t *>(args.work);  // Ordered bits; then alpha.
  float *subtrahend = args.work + queries;                   // m', or 0 where m' = -inf.
  const int32_t negInfBits = orderedBits(kNegInf);
  for (int64_t i = 0; i < queries; ++i) blockMax[i] = negInfBits;
  for (int64_t j = 0; j < keys; ++j) {
    float *s = args.scores + j * args.ldScores;
    maskRow(args, j0, j, s);
    for (int64_t i = firstVisibleQuery(args, j0, j); i < queries; ++i) {
      const int32_t v = orderedBits(s[i]);
      blockMax[i] = v > blockMax[i] ? v : blockMax[i];
    }
  }
  float *alpha = args.work;
  for (int64_t i = 0; i < queries; ++i) {
    const float oldMax = args.rowMax[i];
    const float candidate = orderedFloat(blockMax[i]);
    const float newMax = candidate > oldMax ? candidate : oldMax;
    // Nothing visible yet (m' = -inf): subtracting 0 keeps exp(-inf) = 0 instead of NaN.
    const bool none = newMax == kNegInf;
    alpha[i] = none ? 1.0f : fastExp(oldMax - newMax);
    subtrahend[i] = none ? 0.0f : newMax;
    args.rowMax[i] = newMax;
    args.rowSum[i] *= alpha[i];
  }
  for (int64_t j = 0; j < keys; ++j) {
    float *s = args.scores + j * args.ldScores;
    const int64_t first = firstVisibleQuery(args, j0, j);
    std::fill(s, s + first, 0.0f);
    for (int64_t i = first; i < queries; ++i) {
      const float p = fastExp(s[i] - subtrahend[i]);
      s[i] = p;
      args.rowSum[i] += p;
    }
  }
  for (int64_t i = 0; i < queries; ++i) {
    if (alpha[i] == 1.0f) continue;
    float *o = args.out + i * args.ldOut;
    const float a = alpha[i];
    for (int64_t c = 0; c < args.valueDepth; ++c) o[c] *= a;
  }
}

// ---- The task ----------------------------------------------------------------------------------

inline void attentionTileImpl(const AttentionTileArgs &args) {
  const int64_t mr = args.mr, nr = args.nr;
  const int64_t rows = args.rows, depth = args.depth, valueDepth = args.valueDepth;
  const int64_t queryColumns = roundUpTo(rows, nr);  // Columns of S^T the microkernel writes.
  const int64_t outRows = roundUpTo(rows, mr);

  std::fill(args.zeros, args.zeros + depth, 0.0f);
  packRowPanels(args.q, rows, depth, args.scale, nr, args.zeros, args.qPacked);
  std::fill(args.out, args.out + outRows * args.ldOut, 0.0f);
  std::fill(args.rowMax, args.rowMax + rows, kNegInf);
  std::fill(args.rowSum, args.rowSum + rows, 0.0f);

  MicrokernelArgs gemm;
  for (int64_t j0 = 0; j0 < args.keyEnd; j0 += args.keyBlock) {
    const int64_t keys = std::min(args.keyBlock, args.keyEnd - j0);
    const int64_t keyRows = roundUpTo(keys, mr);

    // S^T = K (scale Q)^T over the padded tile.
    if (depth == 0) {
      std::fill(args.scores, args.scores + keyRows * args.ldScores, 0.0f);
    } else {
      packRowPanels(args.k + j0 * depth, keys, depth, 1.0f, mr, args.zeros, args.kPacked);
      gemm = MicrokernelArgs{};
      gemm.k = depth;
      gemm.ldc = args.ldScores;
      gemm.rows = int(mr);
      gemm.cols = int(nr);
      for (int64_t jr = 0; jr < queryColumns; jr += nr) {
        gemm.b = args.qPacked + jr * depth;
        // Under a causal mask, key panels past the panel's last query are hidden from all of it:
        // their scores are never read (the softmax overwrites them with -inf).
        const int64_t keyRowsSeen =
            args.causal ? std::clamp<int64_t>(jr + nr + args.causalShift - j0, 0, keyRows) : keyRows;
        for (int64_t ir = 0; ir < keyRowsSeen; ir += mr) {
          gemm.a = args.kPacked + ir * depth;
          gemm.c = args.scores + ir * args.ldScores + jr;
          args.microkernel(gemm);
        }
      }
    }

    onlineSoftmax(args, j0, keys);

    // O += P V over the valid keys (k = keys needs no padding).
    packProbabilities(args.scores, args.ldScores, keys, rows, mr, args.pPacked);
    packValues(args.v + j0 * valueDepth, keys, valueDepth, nr, args.vPacked);
    gemm = MicrokernelArgs{};
    gemm.ldc = args.ldOut;
    gemm.rows = int(mr);
    gemm.cols = int(nr);
    gemm.accumulate = true;
    for (int64_t jn = 0; jn < valueDepth; jn += nr) {
      gemm.b = args.vPacked + jn * keys;
      for (int64_t ir = 0; ir < outRows; ir += mr) {
        // Under a causal mask the panel's queries see only a prefix of the keys; P is 0 past it.
        gemm.k = args.causal ? std::clamp<int64_t>(ir + mr + args.causalShift - j0, 0, keys) : keys;
        if (gemm.k == 0) continue;
        gemm.a = args.pPacked + ir * keys;
        gemm.c = args.out + ir * args.ldOut + jn;
        args.microkernel(gemm);
      }
    }
  }

  // A query that saw no key has sum 0: 0 * (1/0) is NaN, as softmax over nothing is.
  for (int64_t r = 0; r < rows; ++r) {
    const float inverse = 1.0f / args.rowSum[r];
    const float *o = args.out + r * args.ldOut;
    float *y = args.y + r * valueDepth;
    for (int64_t c = 0; c < valueDepth; ++c) y[c] = o[c] * inverse;
  }
}

// ---- The decode path ------------------------------------------------------------------------

constexpr int64_t kSumLanes = 16;  // Independent partial sums: the loops vectorize without reassociation.

/// The dot product of a and b (n floats) in kSumLanes partial sums.
float dotProduct(const float *a, const float *b, int64_t n) {
  float lanes[kSumLanes] = {};
  int64_t d = 0;
  for (; d + kSumLanes <= n; d += kSumLanes) {
    for (int64_t l = 0; l < kSumLanes; ++l) lanes[l] += a[d + l] * b[d + l];
  }
  float sum = 0.0f;
  for (; d < n; ++d) sum += a[d] * b[d];
  for (int64_t l = 0; l < kSumLanes; ++l) sum += lanes[l];
  return sum;
}

/// e^(x - max) in place over n floats; returns their sum.
float exponentiate(float *x, int64_t n, float max) {
  float lanes[kSumLanes] = {};
  int64_t j = 0;
  for (; j + kSumLanes <= n; j += kSumLanes) {
    for (int64_t l = 0; l < kSumLanes; ++l) lanes[l] += (x[j + l] = fastExp(x[j + l] - max));
  }
  float sum = 0.0f;
  for (; j < n; ++j) sum += (x[j] = fastExp(x[j] - max));
  for (int64_t l = 0; l < kSumLanes; ++l) sum += lanes[l];
  return sum;
}

/// The task body for a few queries (see AttentionTileArgs::rows in attention.h): each query row
/// scores the keys it sees by dot products straight from K's rows, then sums V's rows weighted by
/// the softmax. Nothing is packed or padded to the GEMM tile, which is most of the work when a task
/// has one query (a decode step). Uses args.scores for keyEnd floats.
void attentionRowsImpl(const AttentionTileArgs &args) {
  const int64_t depth = args.depth, valueDepth = args.valueDepth;
  float *scores = args.scores;
  for (int64_t r = 0; r < args.rows; ++r) {
    const float *q = args.q + r * depth;
    float *y = args.y + r * valueDepth;
    const int64_t keys = args.causal ? std::clamp<int64_t>(r + args.causalShift + 1, 0, args.keyEnd) : args.keyEnd;
    for (int64_t j = 0; j < keys; ++j) scores[j] = args.scale * dotProduct(q, args.k + j * depth, depth);
    if (args.mask != nullptr) {
      const float *mask = args.mask + r * args.maskQueryStride;
      for (int64_t j = 0; j < keys; ++j) scores[j] += mask[j * args.maskKeyStride];
    }
    int32_t maxBits = orderedBits(kNegInf);
    for (int64_t j = 0; j < keys; ++j) maxBits = std::max(maxBits, orderedBits(scores[j]));
    const float max = orderedFloat(maxBits);
    if (max == kNegInf) {  // No key seen: softmax over nothing is NaN, as in the reference.
      std::fill(y, y + valueDepth, std::numeric_limits<float>::quiet_NaN());
      continue;
    }
    const float inverse = 1.0f / exponentiate(scores, keys, max);
    std::fill(y, y + valueDepth, 0.0f);
    for (int64_t j = 0; j < keys; ++j) {
      const float p = scores[j];
      const float *v = args.v + j * valueDepth;
      for (int64_t c = 0; c < valueDepth; ++c) y[c] += p * v[c];
    }
    for (int64_t c = 0; c < valueDepth; ++c) y[c] *= inverse;
  }
}

}  // namespace
}  // namespace tessel::cpu
