// AVX2+FMA GEMM microkernels (compiled with -mavx2 -mfma, nothing else is). One template,
// instantiated for each `avx2` row of gemm.def: an mr x nr tile of C lives in mr * nr/8 ymm
// accumulators (6x16: 12 of the 16 registers, two for B, one broadcast). A ragged bottom edge runs
// a kernel for just its rows, and one row (a decode step's M = 1, a matrix-vector product) its own
// kernel. Only the row functions have external linkage, so no code built with these flags leaks
// into the portable paths.
#include <immintrin.h>

#include <array>
#include <utility>

#include "targets/cpu/kernels/gemm_microkernel.h"
#include "targets/cpu/kernels/isa/avx2/gemm_tile_store.h"

namespace tessel::cpu {
namespace {

/// The tile kernel for kMr rows of C; packed A advances kAStep floats per K step (the variant's
/// mr, which is larger than kMr for the kernels that finish a ragged bottom edge).
template <int kMr, int kNr, int kAStep>
inline __attribute__((always_inline)) void microkernel(const MicrokernelArgs &args) {
  static_assert(kNr % kLanes == 0, "nr must be a multiple of the vector width");
  constexpr int kVecs = kNr / kLanes;
  __m256 acc[kMr][kVecs];
#pragma GCC unroll 32
  for (int i = 0; i < kMr; ++i) {
#pragma GCC unroll 8
    for (int j = 0; j < kVecs; ++j) acc[i][j] = _mm256_setzero_ps();
  }
  const float *b = args.b;
  if (args.aRows != nullptr) {
    // Indirect A: the broadcasts read the rows in place, one float further each step.
    const float *rows[kMr];
#pragma GCC unroll 32
    for (int i = 0; i < kMr; ++i) rows[i] = args.aRows[i];
    for (int64_t p = 0; p < args.k; ++p) {
      __m256 bv[kVecs];
#pragma GCC unroll 8
      for (int j = 0; j < kVecs; ++j) bv[j] = _mm256_loadu_ps(b + j * kLanes);
#pragma GCC unroll 32
      for (int i = 0; i < kMr; ++i) {
        const __m256 av = _mm256_broadcast_ss(rows[i] + p);
#pragma GCC unroll 8
        for (int j = 0; j < kVecs; ++j) acc[i][j] = _mm256_fmadd_ps(av, bv[j], acc[i][j]);
      }
      b += kNr;
    }
  } else {
    const float *a = args.a;
    for (int64_t p = 0; p < args.k; ++p) {
      __m256 bv[kVecs];
#pragma GCC unroll 8
      for (int j = 0; j < kVecs; ++j) bv[j] = _mm256_loadu_ps(b + j * kLanes);
#pragma GCC unroll 32
      for (int i = 0; i < kMr; ++i) {
        const __m256 av = _mm256_broadcast_ss(a + i);
#pragma GCC unroll 8
        for (int j = 0; j < kVecs; ++j) acc[i][j] = _mm256_fmadd_ps(av, bv[j], acc[i][j]);
      }
      a += kAStep;
      b += kNr;
    }
  }
  storeTile<kMr, kVecs>(acc, args);
}

/// One row of C. Each K step is one FMA per B vector loaded, so a single chain of accumulators
/// would wait on the FMA latency (4 cycles) every step: K runs over kChains independent sets,
/// summed at the end, and the row streams B at the rate the loads allow.
template <int kNr, int kAStep>
inline __attribute__((always_inline)) void rowMicrokernel(const MicrokernelArgs &args) {
  constexpr int kVecs = kNr / kLanes;
  constexpr int kChains = 4;
  __m256 acc[kChains][kVecs];
#pragma GCC unroll 4
  for (int s = 0; s < kChains; ++s) {
#pragma GCC unroll 8
    for (int j = 0; j < kVecs; ++j) acc[s][j] = _mm256_setzero_ps();
  }
  // Indirect A reads its row in place (one float per step), packed A one float in every kAStep.
  const float *a = args.aRows != nullptr ? args.aRows[0] : args.a;
  const int64_t aStep = args.aRows != nullptr ? 1 : kAStep;
  const float *b = args.b;
  int64_t p = 0;
  for (; p + kChains <= args.k; p += kChains) {
#pragma GCC unroll 4
    for (int s = 0; s < kChains; ++s) {
      const __m256 av = _mm256_broadcast_ss(a + (p + s) * aStep);
#pragma GCC unroll 8
      for (int j = 0; j < kVecs; ++j) {
        acc[s][j] = _mm256_fmadd_ps(av, _mm256_loadu_ps(b + s * kNr + j * kLanes), acc[s][j]);
      }
    }
    b += kChains * kNr;
  }
  for (; p < args.k; ++p, b += kNr) {
    const __m256 av = _mm256_broadcast_ss(a + p * aStep);
#pragma GCC unroll 8
    for (int j = 0; j < kVecs; ++j) acc[0][j] = _mm256_fmadd_ps(av, _mm256_loadu_ps(b + j * kLanes), acc[0][j]);
  }
  __m256 sum[1][kVecs];
#pragma GCC unroll 8
  for (int j = 0; j < kVecs; ++j) {
    sum[0][j] = _mm256_add_ps(_mm256_add_ps(acc[0][j], acc[1][j]), _mm256_add_ps(acc[2][j], acc[3][j]));
  }
  storeTile<1, kVecs>(sum, args);
}

template <int kMr, int kNr, int kRows>
void bottomEdge(const MicrokernelArgs &args) {
  if constexpr (kRows == 1) {
    rowMicrokernel<kNr, kMr>(args);
  } else {
    microkernel<kRows, kNr, kMr>(args);
  }
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

#define KERNEL_avx512(name, mr, nr)
#define KERNEL_avx2(name, mr, nr) \
  void name(const MicrokernelArgs &args) { tile<mr, nr>(args); }
#define KERNEL_avx2_bf16(name, mr, nr)
#define KERNEL_avx512_bf16(name, mr, nr)
#define KERNEL_generic(name, mr, nr)
#define KERNEL(name, family, isa, dtype, mr, nr) KERNEL_##family(name, mr, nr)
#include "targets/cpu/kernels/gemm.def"
#undef KERNEL

}  // namespace tessel::cpu
