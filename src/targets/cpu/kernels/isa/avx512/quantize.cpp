// The quantization loops of quantize_impl.h compiled with -mavx512f and friends.
// Before every include, so all functions of this file share the options (GCC does not inline
// across different ones): without FP traps GCC may evaluate both sides of a select, which is what
// lets it if-convert and vectorize the clamps. Nothing here reads FP exception flags or errno.
// The pragma also resets GCC's contraction to fused multiply-adds, which would round the QLinearAdd
// sum differently from the reference's: fp-contract=off restates what -std=c++20 gives.
#pragma GCC optimize("no-trapping-math", "no-math-errno", "fp-contract=off")
#include "targets/cpu/kernels/quantize_impl.h"

#include <immintrin.h>

#include <cmath>
#include <type_traits>

// GCC 12 warns inside the AVX-512 intrinsics themselves (their _mm512_undefined_* sources);
// nothing of ours is read uninitialized.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

namespace tessel::cpu {
namespace {

/// addQuantizedU8Loop / addQuantizedS8Loop written out, bit for bit the same bytes, without a
/// division for most elements. QLinearAdd is an affine map of the two inputs: in units of y's
/// step, q = a * aGain + b * bGain + offset with aGain = aScale / yScale, bGain = bScale / yScale
/// and the inputs' zero points in offset (computed in double), two fused multiply-adds. Each of
/// its five roundings errs by half an ulp of a value below 510 * (aGain + bGain), the reference's
/// three steps ((a - aZero) * aScale + (b - bZero) * bScale, then / yScale) by as much in all as
/// three of 255 * (aGain + bGain), so the two quotients differ by less than 2040 * 2^-24 * (aGain +
/// bGain) < margin = 2^-12 * (aGain + bGain): where q is farther than the margin from a rounding tie,
/// both round to the same integer. A block of 64 with any value nearer a tie (a few in a thousand
/// for calibrated scales; a sixth for decimal ones whose quotients land on ties) is computed again
/// the reference's way. y's zero point is added after the rounding, as the reference does: an odd
/// one would move a tie's even neighbour.
template <class T>
void addQuantizedAvx512(const T *a, const T *b, const QuantizedAddParams &p, T *y, int64_t n) {
  constexpr bool kSigned = std::is_same_v<T, int8_t>;
  const double aRatio = double(p.aScale) / p.yScale, bRatio = double(p.bScale) / p.yScale;
  const __m512 aGain = _mm512_set1_ps(float(aRatio)), bGain = _mm512_set1_ps(float(bRatio));
  const __m512 offset = _mm512_set1_ps(float(-p.aZero * aRatio - p.bZero * bRatio));
  // A margin of half a step or more (gains past 2048) takes the reference's steps everywhere.
  const float margin = float(std::ldexp(aRatio + bRatio, -12));
  const __m512 nearTie = _mm512_set1_ps(margin < 0.5f ? 0.5f - margin : -1.0f), limit = _mm512_set1_ps(1024.0f);
  const __m512 aZero = _mm512_set1_ps(p.aZero), aScale = _mm512_set1_ps(p.aScale);
  const __m512 bZero = _mm512_set1_ps(p.bZero), bScale = _mm512_set1_ps(p.bScale);
  const __m512 yScale = _mm512_set1_ps(p.yScale);
  const __m512i yZero = _mm512_set1_epi32(int(p.yZero));
  const __m512i lo = _mm512_set1_epi32(kSigned ? -128 : 0), hi = _mm512_set1_epi32(kSigned ? 127 : 255);
  auto widen = [](__m128i bytes) {
    return _mm512_cvtepi32_ps(kSigned ? _mm512_cvtepi8_epi32(bytes) : _mm512_cvtepu8_epi32(bytes));
  };
  // Range imm 2 keeps the operand of smaller magnitude with the first one's sign: a clamp to +-1024
  // (past where any zero point saturates) in one step.
  auto rounded = [&](__m512 q) {
    return _mm512_roundscale_ps(_mm512_range_ps(q, limit, 2), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  };
  // The reference's steps: (a - aZero) * aScale + (b - bZero) * bScale, divided by yScale.
  auto exact = [&](__m128i av, __m128i bv) {
    const __m512 sum = _mm512_add_ps(_mm512_mul_ps(_mm512_sub_ps(widen(av), aZero), aScale),
                                     _mm512_mul_ps(_mm512_sub_ps(widen(bv), bZero), bScale));
    return rounded(_mm512_div_ps(sum, yScale));
  };
  // Rounded values as int32 with y's zero point, saturated to bytes, into the masked elements of out.
  auto store = [&](T *out, __m512 r, __mmask16 mask) {
    const __m512i q = _mm512_add_epi32(_mm512_cvtps_epi32(r), yZero);
    _mm512_mask_cvtepi32_storeu_epi8(out, mask, _mm512_min_epi32(_mm512_max_epi32(q, lo), hi));
  };
  // packs interleave the vectors' 128-bit groups: dword 4g + v holds group g of vector v.
  const __m512i order = _mm512_set_epi32(15, 11, 7, 3, 14, 10, 6, 2, 13, 9, 5, 1, 12, 8, 4, 0);
  int64_t i = 0;
  for (; i + 64 <= n; i += 64) {
    __m128i av[4], bv[4];
    __m512 r[4];
    __mmask16 near = 0;
    for (int v = 0; v < 4; ++v) {
      av[v] = _mm_loadu_si128(reinterpret_cast<const __m128i *>(a + i) + v);
      bv[v] = _mm_loadu_si128(reinterpret_cast<const __m128i *>(b + i) + v);
      const __m512 q = _mm512_fmadd_ps(widen(av[v]), aGain, _mm512_fmadd_ps(widen(bv[v]), bGain, offset));
      r[v] = rounded(q);
      // |q - round(q)| near a half: abs clears the sign bit.
      const __m512 distance = _mm512_abs_ps(_mm512_sub_ps(q, r[v]));
      near |= _mm512_cmp_ps_mask(distance, nearTie, _CMP_GE_OQ);
    }
    if (near != 0) {
      for (int v = 0; v < 4; ++v) r[v] = exact(av[v], bv[v]);
    }
    // Within +-(1024 + 255) with the zero point: the int16 step saturates nothing, the byte step
    // clamps to [lo, hi].
    const __m512i low = _mm512_packs_epi32(_mm512_add_epi32(_mm512_cvtps_epi32(r[0]), yZero),
                                           _mm512_add_epi32(_mm512_cvtps_epi32(r[1]), yZero));
    const __m512i high = _mm512_packs_epi32(_mm512_add_epi32(_mm512_cvtps_epi32(r[2]), yZero),
                                            _mm512_add_epi32(_mm512_cvtps_epi32(r[3]), yZero));
    const __m512i bytes = kSigned ? _mm512_packs_epi16(low, high) : _mm512_packus_epi16(low, high);
    _mm512_storeu_si512(y + i, _mm512_permutexvar_epi32(order, bytes));
  }
  for (; i < n; i += 16) {
    const __mmask16 mask = n - i >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << (n - i)) - 1u);
    store(y + i, exact(_mm_maskz_loadu_epi8(mask, a + i), _mm_maskz_loadu_epi8(mask, b + i)), mask);
  }
}

}  // namespace

extern const QuantizeKernels kQuantizeAvx512;
const QuantizeKernels kQuantizeAvx512 = {"quantize__avx512", Isa::Avx512 | Isa::Fma, &rangeLoop, &quantizeU8Loop,
    &quantizeS8Loop, &dequantizeU8Loop, &dequantizeS8Loop, &requantizeU8Loop, &requantizeS8Loop,
    &requantizeColumnsU8Loop, &requantizeColumnsS8Loop,
    &addQuantizedAvx512<uint8_t>, &addQuantizedAvx512<int8_t>,
    &centerU8Loop, &centerS8Loop, &int32FromFloatLoop, &int32FromSplitSumsLoop};

}  // namespace tessel::cpu
