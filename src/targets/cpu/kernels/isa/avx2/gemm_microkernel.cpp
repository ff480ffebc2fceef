// AVX2+FMA GEMM microkernels (compiled with -mavx2 -mfma, nothing else is). One template,
// instantiated for each `avx2` row of gemm.def: an mr x nr tile of C lives in mr * nr/8 ymm
// accumulators (6x16: 12 of the 16 registers, two for B, one broadcast). Only the row functions
// have external linkage, so no code built with these flags leaks into the portable paths.
#include <immintrin.h>

#include "targets/cpu/kernels/gemm_microkernel.h"
#include "targets/cpu/kernels/isa/avx2/gemm_tile_store.h"

namespace tessel::cpu {
namespace {


template <int kMr, int kNr>
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
      a += kMr;
      b += kNr;
    }
  }
  storeTile<kMr, kVecs>(acc, args);
}

}  // namespace

#define KERNEL_avx512(name, mr, nr)
#define KERNEL_avx2(name, mr, nr) \
  void name(const MicrokernelArgs &args) { microkernel<mr, nr>(args); }
#define KERNEL_avx2_bf16(name, mr, nr)
#define KERNEL_avx512_bf16(name, mr, nr)
#define KERNEL_generic(name, mr, nr)
#define KERNEL(name, family, isa, dtype, mr, nr) KERNEL_##family(name, mr, nr)
#include "targets/cpu/kernels/gemm.def"
#undef KERNEL

}  // namespace tessel::cpu
