// The quantization loops of quantize_impl.h compiled with -mavx512f and friends.
// Before every include, so all functions of this file share the options (GCC does not inline
// across different ones): without FP traps GCC may evaluate both sides of a select, which is what
// lets it if-convert and vectorize the clamps. Nothing here reads FP exception flags or errno.
// The pragma also resets GCC's contraction to fused multiply-adds, which would round the QLinearAdd
// sum differently from the reference's: fp-contract=off restates what -std=c++20 gives.
#pragma GCC optimize("no-trapping-math", "no-math-errno", "fp-contract=off")
#include "targets/cpu/kernels/quantize_impl.h"

#include <immintrin.h>

#include <type_traits>

// GCC 12 warns inside the AVX-512 intrinsics themselves (their _mm512_undefined_* sources);
// nothing of ours is read uninitialized.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

namespace tessel::cpu {
namespace {

/// addQuantizedU8Loop / addQuantizedS8Loop with the extending loads, the clamps, the rounding
/// conversion and the narrowing store written out (GCC vectorizes the generic loop's clamps as
/// compare-and-blend pairs, twice the work). The same float steps in the same order, so the same
/// bytes: after the clamp to +-512 everything is on integers, where rounding in the conversion and
/// adding the zero point there is exact.
template <class T>
void addQuantizedAvx512(const T *a, const T *b, const QuantizedAddParams &p, T *y, int64_t n) {
  constexpr bool kSigned = std::is_same_v<T, int8_t>;
  const __m512 aZero = _mm512_set1_ps(p.aZero), aScale = _mm512_set1_ps(p.aScale);
  const __m512 bZero = _mm512_set1_ps(p.bZero), bScale = _mm512_set1_ps(p.bScale);
  const __m512 yScale = _mm512_set1_ps(p.yScale), limit = _mm512_set1_ps(512.0f), lowest = _mm512_set1_ps(-512.0f);
  const __m512i yZero = _mm512_set1_epi32(int(p.yZero));
  const __m512i lo = _mm512_set1_epi32(kSigned ? -128 : 0), hi = _mm512_set1_epi32(kSigned ? 127 : 255);
  auto widen = [](__m128i bytes) {
    return _mm512_cvtepi32_ps(kSigned ? _mm512_cvtepi8_epi32(bytes) : _mm512_cvtepu8_epi32(bytes));
  };
  auto added = [&](__m128i av, __m128i bv) {
    const __m512 sum = _mm512_add_ps(_mm512_mul_ps(_mm512_sub_ps(widen(av), aZero), aScale),
                                     _mm512_mul_ps(_mm512_sub_ps(widen(bv), bZero), bScale));
    const __m512 q = _mm512_min_ps(_mm512_max_ps(_mm512_div_ps(sum, yScale), lowest), limit);
    const __m512i r = _mm512_add_epi32(_mm512_cvt_roundps_epi32(q, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC),
                                       yZero);
    return _mm512_min_epi32(_mm512_max_epi32(r, lo), hi);
  };
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m512i r = added(_mm_loadu_si128(reinterpret_cast<const __m128i *>(a + i)),
                            _mm_loadu_si128(reinterpret_cast<const __m128i *>(b + i)));
    _mm_storeu_si128(reinterpret_cast<__m128i *>(y + i), _mm512_cvtepi32_epi8(r));
  }
  if (i < n) {
    const __mmask16 mask = __mmask16((1u << (n - i)) - 1u);
    const __m512i r = added(_mm_maskz_loadu_epi8(mask, a + i), _mm_maskz_loadu_epi8(mask, b + i));
    _mm512_mask_cvtepi32_storeu_epi8(y + i, mask, r);
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
