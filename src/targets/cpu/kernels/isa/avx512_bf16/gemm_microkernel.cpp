// AVX512_BF16 GEMM microkernels (compiled with -mavx512bf16 on top of the AVX-512 flags). An mr x nr
// tile of C lives in mr * nr/16 zmm float accumulators; each step takes one (k, k+1) pair: nr/16
// vectors of packed B pairs, one broadcast pair of each A row, and vdpbf16ps adds both products
// to every lane. The driver converts A's rows to pairs once per block (bf16_pack_pairs below), so
// the K loop only loads and multiplies. Internal linkage except the row functions, as in the
// AVX-512 file.
#include <immintrin.h>

#include <algorithm>
#include <array>
#include <utility>

#include "targets/cpu/kernels/gemm_microkernel.h"
#include "targets/cpu/kernels/isa/avx512/gemm_tile_store.h"

namespace tessel::cpu {
namespace {

constexpr int kUnroll = 4;  // Pair steps per loop iteration.

/// One pair step: acc[i][j] += a pair of row i . pairs of columns j * 16 .. j * 16 + 15.
template <int kMr, int kVecs>
inline __attribute__((always_inline)) void pairStep(__m512 (&acc)[kMr][kVecs], const uint32_t *const *rows,
                                                    int64_t p, const float *b) {
  __m512bh bv[kVecs];
#pragma GCC unroll 8
  for (int j = 0; j < kVecs; ++j) bv[j] = (__m512bh)_mm512_load_si512(b + j * kLanes);
#pragma GCC unroll 32
  for (int i = 0; i < kMr; ++i) {
    const __m512bh av = (__m512bh)_mm512_set1_epi32(int(rows[i][p]));
#pragma GCC unroll 8
    for (int j = 0; j < kVecs; ++j) acc[i][j] = _mm512_dpbf16_ps(acc[i][j], av, bv[j]);
  }
}

template <int kMr, int kNr>
void microkernel(const MicrokernelArgs &args) {
  static_assert(kNr % kLanes == 0, "nr must be a multiple of the vector width");
  constexpr int kVecs = kNr / kLanes;
  __m512 acc[kMr][kVecs];
#pragma GCC unroll 32
  for (int i = 0; i < kMr; ++i) {
#pragma GCC unroll 8
    for (int j = 0; j < kVecs; ++j) acc[i][j] = _mm512_setzero_ps();
  }
#pragma GCC unroll 32
  for (int i = 0; i < kMr; ++i) {
    _mm_prefetch(reinterpret_cast<const char *>(args.c + i * args.ldc), _MM_HINT_T0);
    _mm_prefetch(reinterpret_cast<const char *>(args.c + i * args.ldc + kNr - 1), _MM_HINT_T0);
  }
  const uint32_t *rows[kMr];
#pragma GCC unroll 32
  for (int i = 0; i < kMr; ++i) rows[i] = args.aPairs[i];
  const int64_t pairs = (args.k + 1) / 2;
  const float *b = args.b;
  int64_t p = 0;
  for (; p + kUnroll <= pairs; p += kUnroll) {
#pragma GCC unroll 4
    for (int u = 0; u < kUnroll; ++u) {
      pairStep<kMr, kVecs>(acc, rows, p + u, b);
      b += kNr;
    }
  }
  for (; p < pairs; ++p) {
    pairStep<kMr, kVecs>(acc, rows, p, b);
    b += kNr;
  }
  if (args.nextB != nullptr) {
#pragma GCC unroll 8
    for (int line = 0; line < 8; ++line) {
      _mm_prefetch(reinterpret_cast<const char *>(args.nextB + line * kLanes), _MM_HINT_T0);
    }
  }
  storeTile<kMr, kVecs>(acc, args);
}

/// Kernels for 1 .. mr rows, so a ragged bottom edge (and M < mr) costs only its rows.
template <int kNr, int... kRows>
constexpr std::array<GemmMicrokernel, sizeof...(kRows)> rowKernels(std::integer_sequence<int, kRows...>) {
  return {&microkernel<kRows + 1, kNr>...};
}

template <int kMr, int kNr>
void tile(const MicrokernelArgs &args) {
  static constexpr auto kKernels = rowKernels<kNr>(std::make_integer_sequence<int, kMr>{});
  kKernels[size_t(args.rows - 1)](args);
}

}  // namespace

void bf16_pack_pairs__avx512_bf16(const float *const *rows, int64_t count, int64_t k, uint32_t *dst,
                                  int64_t dstStride) {
  // vcvtne2ps2bf16 rounds to nearest-even (flushing denormals, as vdpbf16ps does on its inputs).
  for (int64_t i = 0; i < count; ++i) {
    const float *src = rows[i];
    uint32_t *out = dst + i * dstStride;
    int64_t p = 0;
    for (; p + 32 <= k; p += 32) {
      const __m512 lo = _mm512_loadu_ps(src + p), hi = _mm512_loadu_ps(src + p + 16);
      // bf16 element e of the result is lo's element e for e < 16 and hi's element e - 16 after:
      // the run in K order, so word q is the pair (2q, 2q+1).
      _mm512_storeu_si512(out + p / 2, (__m512i)_mm512_cvtne2ps_pbh(hi, lo));
    }
    if (p < k) {
      // The last (k - p) < 32 values, masked: lanes past k load as zeros, so an odd k's last word
      // gets a zero upper half.
      const int64_t left = k - p;
      const __mmask16 loMask = __mmask16((1u << std::min<int64_t>(left, 16)) - 1u);
      const __mmask16 hiMask = left > 16 ? __mmask16((1u << (left - 16)) - 1u) : __mmask16(0);
      const __m512 lo = _mm512_maskz_loadu_ps(loMask, src + p), hi = _mm512_maskz_loadu_ps(hiMask, src + p + 16);
      const __mmask16 words = __mmask16((1u << ((left + 1) / 2)) - 1u);
      _mm512_mask_storeu_epi32(out + p / 2, words, (__m512i)_mm512_cvtne2ps_pbh(hi, lo));
    }
  }
}

#define KERNEL_avx512(name, mr, nr)
#define KERNEL_avx2(name, mr, nr)
#define KERNEL_avx2_bf16(name, mr, nr)
#define KERNEL_avx512_bf16(name, mr, nr) \
  void name(const MicrokernelArgs &args) { tile<mr, nr>(args); }
#define KERNEL_generic(name, mr, nr)
#define KERNEL(name, family, isa, dtype, mr, nr) KERNEL_##family(name, mr, nr)
#include "targets/cpu/kernels/gemm.def"
#undef KERNEL

}  // namespace tessel::cpu
