// AVX-512 GEMM microkernels (compiled with -mavx512f -mavx512vl -mfma, nothing else is). One
// template, instantiated for each `avx512` row of gemm.def: an mr x nr tile of C lives in
// mr * nr/16 zmm accumulators; each K step loads nr/16 vectors of packed B and broadcasts mr
// values of packed A. Everything here has internal linkage except the row functions, so no code
// built with these flags can be linked into a path that runs on an older CPU.
#include <immintrin.h>

#include <array>
#include <utility>

#include "targets/cpu/kernels/gemm_microkernel.h"
#include "targets/cpu/kernels/isa/avx512/gemm_tile_store.h"

namespace tessel::cpu {
namespace {

// How far ahead (in K steps) packed A is prefetched: A streams from L2 while B stays in L1.
constexpr int kAPrefetchSteps = 16;

/// One K step: acc[i][j] += a[i] * b[j * 16 .. j * 16 + 15].
template <int kMr, int kVecs>
inline __attribute__((always_inline)) void step(__m512 (&acc)[kMr][kVecs], const float *a, const float *b) {
  __m512 bv[kVecs];
#pragma GCC unroll 8
  for (int j = 0; j < kVecs; ++j) bv[j] = _mm512_load_ps(b + j * kLanes);
#pragma GCC unroll 32
  for (int i = 0; i < kMr; ++i) {
    const __m512 av = _mm512_set1_ps(a[i]);
#pragma GCC unroll 8
    for (int j = 0; j < kVecs; ++j) acc[i][j] = _mm512_fmadd_ps(av, bv[j], acc[i][j]);
  }
}

/// All K steps with indirect A: row i's values are read in place from rows[i], one float further
/// each step (the rows are streams the hardware prefetcher follows).
template <int kMr, int kVecs>
inline __attribute__((always_inline)) void indirectSteps(__m512 (&acc)[kMr][kVecs], const float *const *aRows,
                                                         const float *b, int64_t k) {
  const float *rows[kMr];
#pragma GCC unroll 32
  for (int i = 0; i < kMr; ++i) rows[i] = aRows[i];
  int64_t p = 0;
  for (; p + 4 <= k; p += 4) {
#pragma GCC unroll 4
    for (int u = 0; u < 4; ++u) {
      __m512 bv[kVecs];
#pragma GCC unroll 8
      for (int j = 0; j < kVecs; ++j) bv[j] = _mm512_load_ps(b + j * kLanes);
#pragma GCC unroll 32
      for (int i = 0; i < kMr; ++i) {
        const __m512 av = _mm512_set1_ps(rows[i][p + u]);
#pragma GCC unroll 8
        for (int j = 0; j < kVecs; ++j) acc[i][j] = _mm512_fmadd_ps(av, bv[j], acc[i][j]);
      }
      b += kVecs * kLanes;
    }
  }
  for (; p < k; ++p) {
    __m512 bv[kVecs];
#pragma GCC unroll 8
    for (int j = 0; j < kVecs; ++j) bv[j] = _mm512_load_ps(b + j * kLanes);
#pragma GCC unroll 32
    for (int i = 0; i < kMr; ++i) {
      const __m512 av = _mm512_set1_ps(rows[i][p]);
#pragma GCC unroll 8
      for (int j = 0; j < kVecs; ++j) acc[i][j] = _mm512_fmadd_ps(av, bv[j], acc[i][j]);
    }
    b += kVecs * kLanes;
  }
}

/// The tile kernel for kMr rows of C; packed A advances kAStep floats per K step (the variant's
/// mr, which is larger than kMr for the kernels that finish a ragged bottom edge).
template <int kMr, int kNr, int kAStep>
inline __attribute__((always_inline)) void microkernel(const MicrokernelArgs &args) {
  static_assert(kNr % kLanes == 0, "nr must be a multiple of the vector width");
  constexpr int kVecs = kNr / kLanes;
  __m512 acc[kMr][kVecs];
#pragma GCC unroll 32
  for (int i = 0; i < kMr; ++i) {
#pragma GCC unroll 8
    for (int j = 0; j < kVecs; ++j) acc[i][j] = _mm512_setzero_ps();
  }
  // Start pulling the C tile in now; it is read (accumulate) or written only after the K loop,
  // and its rows are ldc apart, often the same L1 set.
#pragma GCC unroll 32
  for (int i = 0; i < kMr; ++i) {
    _mm_prefetch(reinterpret_cast<const char *>(args.c + i * args.ldc), _MM_HINT_T0);
    _mm_prefetch(reinterpret_cast<const char *>(args.c + i * args.ldc + kNr - 1), _MM_HINT_T0);
  }
  const float *b = args.b;
  if (args.aRows != nullptr) {
    indirectSteps<kMr, kVecs>(acc, args.aRows, b, args.k);
  } else {
    const float *a = args.a;
    // K in groups of kUnroll steps, with the prefetch of A (kUnroll * mr floats, a few lines) once
    // per group rather than once per step.
    constexpr int kUnroll = 4;
    constexpr int kALinesPerGroup = (kUnroll * kAStep * 4 + 63) / 64;
    int64_t p = 0;
    for (; p + kUnroll <= args.k; p += kUnroll) {
#pragma GCC unroll 8
      for (int line = 0; line < kALinesPerGroup; ++line) {
        _mm_prefetch(reinterpret_cast<const char *>(a + kAPrefetchSteps * kAStep + line * kLanes), _MM_HINT_T0);
      }
#pragma GCC unroll 4
      for (int u = 0; u < kUnroll; ++u) {
        step<kMr, kVecs>(acc, a, b);
        a += kAStep;
        b += kNr;
      }
    }
    for (; p < args.k; ++p) {
      step<kMr, kVecs>(acc, a, b);
      a += kAStep;
      b += kNr;
    }
  }
  if (args.nextB != nullptr) {
    // The next call's B panel starts in L2 (packed B of the next jr); its first lines are enough
    // to get the hardware prefetcher going.
#pragma GCC unroll 8
    for (int line = 0; line < 8; ++line) {
      _mm_prefetch(reinterpret_cast<const char *>(args.nextB + line * kLanes), _MM_HINT_T0);
    }
  }
  storeTile<kMr, kVecs>(acc, args);
}

template <int kMr, int kNr, int kRows>
void bottomEdge(const MicrokernelArgs &args) {
  microkernel<kRows, kNr, kMr>(args);
}

/// Kernels for 1 .. mr-1 rows, so a ragged bottom edge (and M < mr) costs only its rows.
template <int kMr, int kNr, int... kRows>
constexpr std::array<GemmMicrokernel, sizeof...(kRows)> bottomEdges(std::integer_sequence<int, kRows...>) {
  return {&bottomEdge<kMr, kNr, kRows + 1>...};
}

template <int kMr, int kNr>
void tile(const MicrokernelArgs &args) {
  static constexpr auto kEdges = bottomEdges<kMr, kNr>(std::make_integer_sequence<int, kMr - 1>{});
  if (args.rows == kMr) return microkernel<kMr, kNr, kMr>(args);
  kEdges[size_t(args.rows - 1)](args);
}

}  // namespace

#define KERNEL_avx512(name, mr, nr) \
  void name(const MicrokernelArgs &args) { tile<mr, nr>(args); }
#define KERNEL_avx2(name, mr, nr)
#define KERNEL_avx2_bf16(name, mr, nr)
#define KERNEL_avx512_bf16(name, mr, nr)
#define KERNEL_generic(name, mr, nr)
#define KERNEL(name, family, isa, dtype, mr, nr) KERNEL_##family(name, mr, nr)
#include "targets/cpu/kernels/gemm.def"
#undef KERNEL

}  // namespace tessel::cpu
