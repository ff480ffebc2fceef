// The int8 channels-last depthwise loop: depthwise_conv_nhwc_rows.h with 8-bit elements, compiled
// per ISA by isa/<family>/depthwise_conv_s8.cpp, which defines TESSEL_DEPTHWISE_S8_FN (the exported
// name) and the row loop's TESSEL_DEPTHWISE_NHWC_{LANES,PIXELS}.
// The sums are float vectors and exact: every product (x - xZero) * w is an integer of magnitude at
// most 255 * 255, so a sum over at most kMaxExactTaps taps stays below 2^24, where floats hold
// every integer (and the fused multiply-adds round nothing). The requantization then takes the sum
// back to int32 and is the reference's, bit for bit: float(sum + bias) * multiplier, clamped,
// rounded half to even, plus the zero point.
#include "targets/cpu/kernels/depthwise_conv_s8_variants.h"

#ifndef TESSEL_DEPTHWISE_S8_FN
#error "define TESSEL_DEPTHWISE_S8_FN before including depthwise_conv_s8_impl.h"
#endif

#include "targets/cpu/kernels/depthwise_conv_nhwc_rows.h"

#if defined(__AVX2__)
#include <immintrin.h>
#endif

namespace tessel::cpu {
namespace {

static_assert(kMaxExactTaps * 255 * 255 < (1 << 24), "sums of this many taps must be exact in floats");

typedef int32_t IntVec __attribute__((vector_size(kLanes * sizeof(int32_t))));
typedef int16_t ShortVec __attribute__((vector_size(kLanes * sizeof(int16_t)), aligned(alignof(int16_t))));
/// kLanes bytes of type T (uint8_t or int8_t) at any address. A member typedef: an alias template
/// would drop the alignment attribute.
template <class T>
struct Bytes {
  typedef T Vec __attribute__((vector_size(kLanes), aligned(1)));
};

/// kLanes bytes from p as int32 lanes. GCC 12 turns a vector-extension conversion from bytes into
/// one scalar load per lane, so the AVX builds use the extending load's intrinsic.
template <class T>
TESSEL_DW_NHWC_INLINE IntVec widenBytes(const T *p) {
  [[maybe_unused]] constexpr bool kSigned = std::is_same_v<T, int8_t>;
#if defined(__AVX512F__)
  static_assert(kLanes == 16);
  const __m128i bytes = _mm_loadu_si128(reinterpret_cast<const __m128i *>(p));
  // The zero-masked forms (all lanes on): the plain ones trip GCC 12's uninitialized warning.
  constexpr __mmask16 kAll = 0xffff;
  return (IntVec)(kSigned ? _mm512_maskz_cvtepi8_epi32(kAll, bytes) : _mm512_maskz_cvtepu8_epi32(kAll, bytes));
#elif defined(__AVX2__)
  static_assert(kLanes == 8);
  const __m128i bytes = _mm_loadl_epi64(reinterpret_cast<const __m128i *>(p));
  return (IntVec)(kSigned ? _mm256_cvtepi8_epi32(bytes) : _mm256_cvtepu8_epi32(bytes));
#else
  IntVec v;
  for (int i = 0; i < kLanes; ++i) v[i] = int32_t(p[i]);
  return v;
#endif
}

/// `count` elements from p as float lanes (all of a vector unless kPartial; the rest zero).
template <bool kPartial, class T>
TESSEL_DW_NHWC_INLINE Vec loadAsFloats(const T *p, int count) {
  if constexpr (!kPartial) {
    if constexpr (sizeof(T) == 1) {
      return __builtin_convertvector(widenBytes(p), Vec);
    } else {
      return __builtin_convertvector(__builtin_convertvector(*reinterpret_cast<const ShortVec *>(p), IntVec), Vec);
    }
  } else {
    Vec v = {};
    for (int i = 0; i < count; ++i) v[i] = float(p[i]);
    return v;
  }
}

template <bool kPartial, class T>
TESSEL_DW_NHWC_INLINE IntVec loadInts(const T *p, int count) {
  IntVec v = {};
  if constexpr (!kPartial) count = kLanes;
  for (int i = 0; i < count; ++i) v[i] = int32_t(p[i]);
  return v;
}

/// round_half_to_even(v) for |v| <= 2^22 (as quantize_impl.h).
TESSEL_DW_NHWC_INLINE Vec roundHalfEven(Vec v) {
  const Vec shift = Vec{} + 12582912.0f;  // 1.5 * 2^23.
  return (v + shift) - shift;
}

/// The 8-bit element policy of the row loop (X and Y: uint8_t or int8_t).
template <class X, class Y>
struct ByteDepthwise {
  using Args = DepthwiseS8Args;
  using Input = X;

  const int16_t *weights;  // This vector's first tap; taps are `channels` apart.
  int64_t channels, kernelWidthValue;
  Y *yRow;
  Vec xZero, multiplier, below, above, yZero;
  IntVec bias;
  int count;

  TESSEL_DW_NHWC_INLINE ByteDepthwise(const Args &a, int64_t oh, int64_t channel, int channelCount)
      : weights(a.weights + channel),
        channels(a.channels),
        kernelWidthValue(a.kernelWidth),
        yRow(static_cast<Y *>(a.y) + oh * a.outWidth * a.channels + channel),
        xZero(Vec{} + float(a.xZero)),
        multiplier(channelCount == kLanes ? loadVec(a.multiplier + channel)
                                          : loadAsFloats<true>(a.multiplier + channel, channelCount)),
        // The clamp to the integers that land in [lo, hi] after adding yZero comes before the
        // rounding: the same as rounding first (the bounds are integers), and it keeps the values
        // small enough for roundHalfEven.
        below(Vec{} + ((std::is_same_v<Y, int8_t> ? -128.0f : 0.0f) - a.yZero)),
        above(Vec{} + ((std::is_same_v<Y, int8_t> ? 127.0f : 255.0f) - a.yZero)),
        yZero(Vec{} + a.yZero),
        bias(channelCount == kLanes ? loadInts<false>(a.bias + channel, kLanes)
                                    : loadInts<true>(a.bias + channel, channelCount)),
        count(channelCount) {}

  TESSEL_DW_NHWC_INLINE int64_t kernelWidth() const { return kernelWidthValue; }
  TESSEL_DW_NHWC_INLINE Vec tap(int64_t t) const {
    const int16_t *w = weights + t * channels;
    return count == kLanes ? loadAsFloats<false>(w, kLanes) : loadAsFloats<true>(w, count);
  }

  template <bool kPartial>
  TESSEL_DW_NHWC_INLINE Vec load(const X *p) const {
    return loadAsFloats<kPartial>(p, count) - xZero;
  }

  template <bool kPartial>
  TESSEL_DW_NHWC_INLINE Vec start(int64_t) const {
    return Vec{};
  }

  template <bool kPartial>
  TESSEL_DW_NHWC_INLINE void finish(int64_t ow, Vec sum) const {
    Vec v = __builtin_convertvector(__builtin_convertvector(sum, IntVec) + bias, Vec) * multiplier;
    v = v < below ? below : v;
    v = v > above ? above : v;
    const IntVec q = __builtin_convertvector(roundHalfEven(v) + yZero, IntVec);
    Y *out = yRow + ow * channels;
    if constexpr (!kPartial) {
      *reinterpret_cast<typename Bytes<Y>::Vec *>(out) = __builtin_convertvector(q, typename Bytes<Y>::Vec);
    } else {
      for (int i = 0; i < count; ++i) out[i] = Y(q[i]);
    }
  }
};

}  // namespace

void TESSEL_DEPTHWISE_S8_FN(const DepthwiseS8Args &args) {
  if (args.xSigned) {
    args.ySigned ? convolveDepthwiseRows<ByteDepthwise<int8_t, int8_t>>(args, 0, args.channels)
                 : convolveDepthwiseRows<ByteDepthwise<int8_t, uint8_t>>(args, 0, args.channels);
  } else {
    args.ySigned ? convolveDepthwiseRows<ByteDepthwise<uint8_t, int8_t>>(args, 0, args.channels)
                 : convolveDepthwiseRows<ByteDepthwise<uint8_t, uint8_t>>(args, 0, args.channels);
  }
}

}  // namespace tessel::cpu
