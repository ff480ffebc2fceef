// Single-precision GEMM for the cpu target: C = A * B (+ C) (+ bias per column) (then ReLU), all
// row-major with explicit leading dimensions. A BLIS-style driver packs A and B into panels, blocks
// for the caches (KC for L1, MC for L2, NC for L3) and calls a register-blocked microkernel chosen
// at run time from gemm.def by the host's ISA. Weights can be packed once (packB) and reused by
// sgemmPacked, which is what the cpu plan does for constant B operands.
//
// Threading: every entry point is single-threaded and re-entrant (no shared mutable state beyond
// the one-time dispatch choice); callers may run independent GEMMs on several threads. Splitting
// one GEMM across threads (over the jc/ic loops) is left for the thread pool work.
#pragma once

#include <cstdint>
#include <cstdlib>
#include <memory>
#include <span>

#include "targets/cpu/kernels/cpu_features.h"
#include "targets/cpu/kernels/gemm_microkernel.h"

namespace tessel::cpu {

/// C is m x n, A is m x k, B is k x n.
struct GemmShape {
  int64_t m = 0;
  int64_t n = 0;
  int64_t k = 0;
};

/// What happens to each output after the product, on the last K block.
struct GemmEpilogue {
  const float *bias = nullptr;  // n floats added to every row of C, or null.
  bool relu = false;            // max(x, 0) after the bias.
  bool accumulate = false;      // C += A*B instead of C = A*B (e.g. a fused residual Add).
};

/// One row of gemm.def.
struct GemmKernel {
  const char *name;
  Isa isa;  // Bits the host must have.
  int mr;   // Register tile rows.
  int nr;   // Register tile columns.
  GemmMicrokernel microkernel;
};

/// Every variant in gemm.def, best first, including those this host cannot run.
std::span<const GemmKernel> gemmKernels();

/// True when the host (as capped by TESSEL_CPU_ISA) can run `kernel`.
bool canRun(const GemmKernel &kernel);

/// The first row of gemm.def the host can run; chosen once, its name logged once on stderr when
/// TESSEL_LOG_KERNELS is set.
const GemmKernel &selectedGemmKernel();

/// The selected variant's name, e.g. "f32_gemm_6x32__avx512".
const char *gemmKernelName();

/// C = A*B with the selected variant. Requires lda >= k, ldb >= n, ldc >= n.
void sgemm(const GemmShape &shape, const float *a, int64_t lda, const float *b, int64_t ldb, float *c,
           int64_t ldc, const GemmEpilogue &epilogue = {});

/// Same, with an explicit variant (tests and benchmarks); the host must be able to run it.
void sgemm(const GemmKernel &kernel, const GemmShape &shape, const float *a, int64_t lda, const float *b,
           int64_t ldb, float *c, int64_t ldc, const GemmEpilogue &epilogue = {});

/// Frees memory from std::aligned_alloc.
struct AlignedFree {
  void operator()(float *p) const { std::free(p); }
};

/// B (k x n) packed for one variant: ceil(n / nr) column panels, each k rows of nr floats,
/// zero-padded past column n. Built once (e.g. for weights at compile time) and read-only after.
struct PackedB {
  const GemmKernel *kernel = nullptr;
  int64_t k = 0;
  int64_t n = 0;
  std::unique_ptr<float[], AlignedFree> data;

  /// Floats in `data`.
  int64_t size() const;
};

/// Packs row-major B (k x n, row stride ldb) for the selected variant.
PackedB packB(int64_t k, int64_t n, const float *b, int64_t ldb);

/// Packs B for an explicit variant.
PackedB packB(const GemmKernel &kernel, int64_t k, int64_t n, const float *b, int64_t ldb);

/// C = A*B with B pre-packed; shape.k and shape.n must match the packed B.
void sgemmPacked(const GemmShape &shape, const float *a, int64_t lda, const PackedB &b, float *c, int64_t ldc,
                 const GemmEpilogue &epilogue = {});

}  // namespace tessel::cpu
