// AVX2+FMA microkernels of the bf16 GEMM rows (compiled with the AVX2 flags), for hosts without AVX512_BF16: the same operands as
// the vdpbf16ps rows (B packed as (k, k+1) bf16 pairs, A rows converted to pairs once per block),
// so a model's numbers do not depend on which of the two the host runs. A bf16 is the upper half
// of a float, so each pair word widens to two floats with one shift and one mask; the products
// and sums are fp32 FMAs. What it buys is memory: B (the weights) is half the bytes, which is
// what bounds a decode step (M = 1). 4x16: 8 ymm accumulators, four widened B vectors and the
// two widened A values of a row fit the 16 registers.
#include <immintrin.h>

#include <array>
#include <utility>

#include "targets/cpu/kernels/gemm_microkernel.h"
#include "targets/cpu/kernels/isa/avx2/gemm_tile_store.h"

namespace tessel::cpu {
namespace {


/// The lower (K even) and upper (K odd) bf16 of each pair word, as floats.
inline __attribute__((always_inline)) __m256 evenHalf(__m256i words) {
  return _mm256_castsi256_ps(_mm256_slli_epi32(words, 16));
}
inline __attribute__((always_inline)) __m256 oddHalf(__m256i words) {
  return _mm256_castsi256_ps(_mm256_and_si256(words, _mm256_set1_epi32(int(0xffff0000u))));
}

template <int kMr, int kNr>
void microkernel(const MicrokernelArgs &args) {
  static_assert(kNr % kLanes == 0, "nr must be a multiple of the vector width");
  constexpr int kVecs = kNr / kLanes;
  __m256 acc[kMr][kVecs];
#pragma GCC unroll 32
  for (int i = 0; i < kMr; ++i) {
#pragma GCC unroll 8
    for (int j = 0; j < kVecs; ++j) acc[i][j] = _mm256_setzero_ps();
  }
  const uint32_t *rows[kMr];
#pragma GCC unroll 32
  for (int i = 0; i < kMr; ++i) rows[i] = args.aPairs[i];
  const int64_t pairs = (args.k + 1) / 2;
  const float *b = args.b;
  for (int64_t p = 0; p < pairs; ++p) {
    __m256 even[kVecs], odd[kVecs];
#pragma GCC unroll 8
    for (int j = 0; j < kVecs; ++j) {
      const __m256i words = _mm256_loadu_si256(reinterpret_cast<const __m256i *>(b + j * kLanes));
      even[j] = evenHalf(words);
      odd[j] = oddHalf(words);
    }
#pragma GCC unroll 32
    for (int i = 0; i < kMr; ++i) {
      const __m256i pair = _mm256_set1_epi32(int(rows[i][p]));
      const __m256 a0 = evenHalf(pair), a1 = oddHalf(pair);
#pragma GCC unroll 8
      for (int j = 0; j < kVecs; ++j) acc[i][j] = _mm256_fmadd_ps(a1, odd[j], _mm256_fmadd_ps(a0, even[j], acc[i][j]));
    }
    b += kNr;
  }
  storeTile<kMr, kVecs>(acc, args);
}

/// One row of C (a decode step's M = 1). A pair step is two dependent FMAs per B vector, so one
/// chain of accumulators would wait on their latency every step: the pair steps run over kChains
/// independent sets, summed at the end.
template <int kNr>
void rowMicrokernel(const MicrokernelArgs &args) {
  constexpr int kVecs = kNr / kLanes;
  constexpr int kChains = 4;
  __m256 acc[kChains][kVecs];
#pragma GCC unroll 4
  for (int s = 0; s < kChains; ++s) {
#pragma GCC unroll 8
    for (int j = 0; j < kVecs; ++j) acc[s][j] = _mm256_setzero_ps();
  }
  const uint32_t *row = args.aPairs[0];
  const int64_t pairs = (args.k + 1) / 2;
  const float *b = args.b;
  auto step = [&](__m256(&sums)[kVecs], int64_t p, const float *bStep) __attribute__((always_inline)) {
    const __m256i pair = _mm256_set1_epi32(int(row[p]));
    const __m256 a0 = evenHalf(pair), a1 = oddHalf(pair);
#pragma GCC unroll 8
    for (int j = 0; j < kVecs; ++j) {
      const __m256i words = _mm256_loadu_si256(reinterpret_cast<const __m256i *>(bStep + j * kLanes));
      sums[j] = _mm256_fmadd_ps(a1, oddHalf(words), _mm256_fmadd_ps(a0, evenHalf(words), sums[j]));
    }
  };
  int64_t p = 0;
  for (; p + kChains <= pairs; p += kChains, b += kChains * kNr) {
#pragma GCC unroll 4
    for (int s = 0; s < kChains; ++s) step(acc[s], p + s, b + s * kNr);
  }
  for (; p < pairs; ++p, b += kNr) step(acc[0], p, b);
  __m256 sum[1][kVecs];
#pragma GCC unroll 8
  for (int j = 0; j < kVecs; ++j) {
    sum[0][j] = _mm256_add_ps(_mm256_add_ps(acc[0][j], acc[1][j]), _mm256_add_ps(acc[2][j], acc[3][j]));
  }
  storeTile<1, kVecs>(sum, args);
}

template <int kNr, int kRows>
void rowsKernel(const MicrokernelArgs &args) {
  if constexpr (kRows == 1) {
    rowMicrokernel<kNr>(args);
  } else {
    microkernel<kRows, kNr>(args);
  }
}

/// Kernels for 1 .. mr rows, so a ragged bottom edge (and a decode step's M = 1) costs only its rows.
template <int kNr, int... kRows>
constexpr std::array<GemmMicrokernel, sizeof...(kRows)> rowKernels(std::integer_sequence<int, kRows...>) {
  return {&rowsKernel<kNr, kRows + 1>...};
}

template <int kMr, int kNr>
void tile(const MicrokernelArgs &args) {
  static constexpr auto kKernels = rowKernels<kNr>(std::make_integer_sequence<int, kMr>{});
  kKernels[size_t(args.rows - 1)](args);
}

/// Rounds 8 floats to bf16, nearest-even (NaNs stay NaNs: their payload is forced quiet), in the
/// low 16 bits of each lane.
inline __m256i roundToBf16(__m256 x) {
  const __m256i bits = _mm256_castps_si256(x);
  const __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(bits, 16), _mm256_set1_epi32(1));
  const __m256i rounded = _mm256_srli_epi32(_mm256_add_epi32(bits, _mm256_add_epi32(_mm256_set1_epi32(0x7fff), lsb)), 16);
  const __m256i quietNan = _mm256_or_si256(_mm256_srli_epi32(bits, 16), _mm256_set1_epi32(0x40));
  const __m256 isNan = _mm256_cmp_ps(x, x, _CMP_UNORD_Q);
  return _mm256_blendv_epi8(rounded, quietNan, _mm256_castps_si256(isNan));
}

}  // namespace

void bf16_pack_pairs__avx2_bf16(const float *const *rows, int64_t count, int64_t k, uint32_t *dst, int64_t dstStride) {
  const __m256i evenLanes = _mm256_setr_epi32(0, 2, 4, 6, 1, 3, 5, 7);
  for (int64_t i = 0; i < count; ++i) {
    const float *src = rows[i];
    uint32_t *out = dst + i * dstStride;
    int64_t p = 0;
    for (; p + 16 <= k; p += 16) {
      // Rounded halves of 16 consecutive K, then word q = (2q) | (2q+1) << 16.
      const __m256i r0 = roundToBf16(_mm256_loadu_ps(src + p)), r1 = roundToBf16(_mm256_loadu_ps(src + p + 8));
      // Gather each vector's even and odd elements into its lower and upper 128 bits.
      const __m256i s0 = _mm256_permutevar8x32_epi32(r0, evenLanes), s1 = _mm256_permutevar8x32_epi32(r1, evenLanes);
      const __m256i evens = _mm256_permute2x128_si256(s0, s1, 0x20), odds = _mm256_permute2x128_si256(s0, s1, 0x31);
      _mm256_storeu_si256(reinterpret_cast<__m256i *>(out + p / 2), _mm256_or_si256(evens, _mm256_slli_epi32(odds, 16)));
    }
    for (; p < k; p += 2) {
      const float second = p + 1 < k ? src[p + 1] : 0.0f;
      alignas(32) uint32_t halves[8];
      _mm256_store_si256(reinterpret_cast<__m256i *>(halves), roundToBf16(_mm256_setr_ps(src[p], second, 0, 0, 0, 0, 0, 0)));
      out[p / 2] = halves[0] | (halves[1] << 16);
    }
  }
}

#define KERNEL_avx512(name, mr, nr)
#define KERNEL_avx2(name, mr, nr)
#define KERNEL_avx2_bf16(name, mr, nr) \
  void name(const MicrokernelArgs &args) { tile<mr, nr>(args); }
#define KERNEL_avx512_bf16(name, mr, nr)
#define KERNEL_generic(name, mr, nr)
#define KERNEL(name, family, isa, dtype, mr, nr) KERNEL_##family(name, mr, nr)
#include "targets/cpu/kernels/gemm.def"
#undef KERNEL

}  // namespace tessel::cpu
