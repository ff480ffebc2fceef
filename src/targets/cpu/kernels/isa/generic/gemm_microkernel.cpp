// Portable C++ GEMM microkernels for hosts without AVX2+FMA (and the reference the vector
// variants are tested beside). One template, instantiated for each `generic` row of gemm.def; the
// accumulator tile is a local array the compiler keeps in registers where it can.
#include <algorithm>

#include "targets/cpu/kernels/gemm_microkernel.h"

namespace tessel::cpu {
namespace {

template <int kMr, int kNr>
void microkernel(const MicrokernelArgs &args) {
  float acc[kMr][kNr] = {};
  const float *a = args.a;
  const float *b = args.b;
  for (int64_t p = 0; p < args.k; ++p) {
    for (int i = 0; i < kMr; ++i) {
      const float av = args.aRows != nullptr ? args.aRows[i][p] : a[i];
      for (int j = 0; j < kNr; ++j) acc[i][j] += av * b[j];
    }
    a += kMr;
    b += kNr;
  }
  for (int i = 0; i < args.rows; ++i) {
    float *c = args.c + i * args.ldc;
    for (int j = 0; j < args.cols; ++j) {
      float v = acc[i][j];
      if (args.accumulate) v += c[j];
      if (args.bias != nullptr) v += args.bias[j];
      if (args.rowBias != nullptr) v += args.rowBias[i];
      if (args.residual != nullptr) v += args.residual[i * args.ldr + j];
      if (args.clamp) v = std::min(std::max(v, args.lo), args.hi);
      c[j] = v;
    }
  }
}

}  // namespace

#define KERNEL_avx512(name, mr, nr)
#define KERNEL_avx2(name, mr, nr)
#define KERNEL_avx2_bf16(name, mr, nr)
#define KERNEL_avx512_bf16(name, mr, nr)
#define KERNEL_generic(name, mr, nr) \
  void name(const MicrokernelArgs &args) { microkernel<mr, nr>(args); }
#define KERNEL(name, family, isa, dtype, mr, nr) KERNEL_##family(name, mr, nr)
#include "targets/cpu/kernels/gemm.def"
#undef KERNEL

}  // namespace tessel::cpu
