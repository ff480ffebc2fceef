// AVX-512 GEMM microkernels (compiled with -mavx512f -mavx512vl -mfma, nothing else is). One
// template, instantiated for each `avx512` row of gemm.def: an mr x nr tile of C lives in
// mr * nr/16 zmm accumulators; each K step loads nr/16 vectors of packed B and broadcasts mr
// values of packed A. Everything here has internal linkage except the row functions, so no code
// built with these flags can be linked into a path that runs on an older CPU.
#include <immintrin.h>

#include "targets/cpu/kernels/gemm_microkernel.h"

namespace tessel::cpu {
namespace {

constexpr int kLanes = 16;  // floats per zmm register.
// ReLU as a max over all lanes; the masked form, because GCC 12 reports a false
// -Wmaybe-uninitialized inside the unmasked _mm512_max_ps.
constexpr __mmask16 kAllLanes = 0xFFFF;

template <int kMr, int kNr>
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
#pragma GCC unroll 8
    for (int j = 0; j < kVecs; ++j) _mm_prefetch(reinterpret_cast<const char *>(args.c + i * args.ldc + j * kLanes), _MM_HINT_T0);
  }
  const float *a = args.a;
  const float *b = args.b;
  for (int64_t p = 0; p < args.k; ++p) {
    __m512 bv[kVecs];
#pragma GCC unroll 8
    for (int j = 0; j < kVecs; ++j) bv[j] = _mm512_loadu_ps(b + j * kLanes);
#pragma GCC unroll 32
    for (int i = 0; i < kMr; ++i) {
      const __m512 av = _mm512_set1_ps(a[i]);
#pragma GCC unroll 8
      for (int j = 0; j < kVecs; ++j) acc[i][j] = _mm512_fmadd_ps(av, bv[j], acc[i][j]);
    }
    a += kMr;
    b += kNr;
  }
  const __m512 zero = _mm512_setzero_ps();
#pragma GCC unroll 32
  for (int i = 0; i < kMr; ++i) {
    float *c = args.c + i * args.ldc;
#pragma GCC unroll 8
    for (int j = 0; j < kVecs; ++j) {
      __m512 v = acc[i][j];
      if (args.accumulate) v = _mm512_add_ps(v, _mm512_loadu_ps(c + j * kLanes));
      if (args.bias != nullptr) v = _mm512_add_ps(v, _mm512_loadu_ps(args.bias + j * kLanes));
      if (args.relu) v = _mm512_maskz_max_ps(kAllLanes, v, zero);
      _mm512_storeu_ps(c + j * kLanes, v);
    }
  }
}

}  // namespace

#define KERNEL_avx512(name, mr, nr) \
  void name(const MicrokernelArgs &args) { microkernel<mr, nr>(args); }
#define KERNEL_avx2(name, mr, nr)
#define KERNEL_generic(name, mr, nr)
#define KERNEL(name, family, isa, dtype, mr, nr) KERNEL_##family(name, mr, nr)
#include "targets/cpu/kernels/gemm.def"
#undef KERNEL

}  // namespace tessel::cpu
