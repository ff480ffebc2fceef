// The online-softmax step of the attention kernel (see attention_softmax.h), written once in plain
// C++ and included by one small file per isa/<family>/ folder so the compiler vectorizes it with
// that ISA's flags. Everything here has internal linkage: each ISA's copy stays its own.
//
// Reductions (row max, row sum) keep kSoftmaxLanes partial results so the loops vectorize without
// reassociation flags; exp is vector_math.h's fastExp (no libm call), so it vectorizes too.
#pragma once

#include <algorithm>
#include <bit>
#include <cstdint>
#include <limits>

#include "targets/cpu/kernels/attention_softmax.h"
#include "targets/cpu/kernels/vector_math.h"

namespace tessel::cpu {
namespace {

constexpr int kSoftmaxLanes = 16;  // Partial maxima/sums per row: a multiple of every vector width.
constexpr float kNegInf = -std::numeric_limits<float>::infinity();

/// The bits of x as an int32 that orders like x (negative floats get their magnitude bits
/// flipped): an integer max vectorizes without the finite-math flags a float max needs. A positive
/// NaN orders above +inf, so it still reaches the result.
inline int32_t orderedBits(float x) {
  const int32_t bits = std::bit_cast<int32_t>(x);
  return bits ^ ((bits >> 31) & 0x7fffffff);
}

/// The inverse of orderedBits (the mapping is its own inverse).
inline float orderedFloat(int32_t ordered) { return std::bit_cast<float>(ordered ^ ((ordered >> 31) & 0x7fffffff)); }

/// Adds the mask to the first `valid` scores of a row and returns their maximum (-inf if none).
inline float maskAndMax(float *s, int64_t valid, const float *mask, int64_t maskColStride) {
  if (mask != nullptr && maskColStride == 1) {
    for (int64_t c = 0; c < valid; ++c) s[c] += mask[c];
  } else if (mask != nullptr) {
    const float bias = mask[0];
    for (int64_t c = 0; c < valid; ++c) s[c] += bias;
  }
  int32_t partial[kSoftmaxLanes];
  for (int32_t &m : partial) m = orderedBits(kNegInf);
  int64_t c = 0;
  for (; c + kSoftmaxLanes <= valid; c += kSoftmaxLanes) {
    for (int l = 0; l < kSoftmaxLanes; ++l) {
      const int32_t v = orderedBits(s[c + l]);
      partial[l] = v > partial[l] ? v : partial[l];
    }
  }
  int32_t m = orderedBits(kNegInf);
  for (; c < valid; ++c) {
    const int32_t v = orderedBits(s[c]);
    m = v > m ? v : m;
  }
  for (int32_t v : partial) m = v > m ? v : m;
  return orderedFloat(m);
}

/// s[c] = exp(s[c] - max) for c < valid, 0 for valid <= c < cols; returns the sum.
inline float exponentiate(float *s, int64_t valid, int64_t cols, float max) {
  float partial[kSoftmaxLanes] = {};
  int64_t c = 0;
  for (; c + kSoftmaxLanes <= valid; c += kSoftmaxLanes) {
    for (int l = 0; l < kSoftmaxLanes; ++l) {
      const float p = fastExp(s[c + l] - max);
      s[c + l] = p;
      partial[l] += p;
    }
  }
  float sum = 0.0f;
  for (; c < valid; ++c) {
    const float p = fastExp(s[c] - max);
    s[c] = p;
    sum += p;
  }
  for (float v : partial) sum += v;
  for (c = std::max<int64_t>(valid, 0); c < cols; ++c) s[c] = 0.0f;
  return sum;
}

inline void attentionSoftmaxImpl(const AttentionSoftmaxArgs &args) {
  for (int64_t r = 0; r < args.rows; ++r) {
    float *s = args.scores + r * args.ldScores;
    int64_t valid = args.cols;
    if (args.causalLast != INT64_MAX) valid = std::clamp<int64_t>(args.causalLast + r + 1, 0, args.cols);
    const float *mask = args.mask != nullptr ? args.mask + r * args.maskRowStride : nullptr;
    const float blockMax = maskAndMax(s, valid, mask, args.maskColStride);
    const float oldMax = args.rowMax[r];
    const float newMax = blockMax > oldMax ? blockMax : oldMax;
    if (newMax == kNegInf) {
      // Nothing visible yet: no probability mass, and the accumulator stays zero.
      for (int64_t c = 0; c < args.cols; ++c) s[c] = 0.0f;
      continue;
    }
    const float alpha = fastExp(oldMax - newMax);
    const float sum = exponentiate(s, valid, args.cols, newMax);
    args.rowSum[r] = args.rowSum[r] * alpha + sum;
    args.rowMax[r] = newMax;
    if (alpha != 1.0f) {
      float *o = args.out + r * args.ldOut;
      for (int64_t c = 0; c < args.outCols; ++c) o[c] *= alpha;
    }
  }
}

}  // namespace
}  // namespace tessel::cpu
