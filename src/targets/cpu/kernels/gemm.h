// Single-precision GEMM for the cpu target: C = act(A*B (+ C) + bias + residual), all row-major
// with explicit leading dimensions. A and B are float32 in memory; a bf16 variant rounds them to
// bfloat16 as it packs them (weights once, activations per block) and sums the products in float32. A BLIS-style driver packs A and B into panels, blocks for the
// caches (KC for L1, MC for L2, NC for L3) and calls a register-blocked microkernel chosen at run
// time from gemm.def by the host's ISA. The epilogue runs on each finished output tile while it is
// still in cache.
//
// Constant operands are packed once: packB for weights on the right (MatMul, Gemm), packA for
// weights on the left (convolution: Y[Cout, HW] = W[Cout, K] x cols[K, HW]). The *Into functions
// write into caller memory (a plan's ConstantStore); the views read it without owning it.
//
// Threading: every entry point takes an optional ThreadPool and splits C into a grid of
// rectangles, one per task, each run as an independent blocked GEMM with its own packing buffers.
// Those buffers come from caller scratch (sgemmScratchBytes bytes, 64-byte aligned) or, when none
// is given, from a per-thread buffer that grows once and is then reused, so steady-state calls do
// not allocate either way. Entry points are re-entrant.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <span>

#include "support/thread_pool.h"
#include "targets/cpu/kernels/activation.h"
#include "targets/cpu/kernels/cpu_features.h"
#include "targets/cpu/kernels/gemm_microkernel.h"

namespace tessel::cpu {

/// C is m x n, A is m x k, B is k x n.
struct GemmShape {
  int64_t m = 0;
  int64_t n = 0;
  int64_t k = 0;
};

/// What happens to each output after the product: C = act(A*B [+ C] + bias + residual).
struct GemmEpilogue {
  const float *bias = nullptr;  // n floats, one per column, or null.
  bool biasPerRow = false;      // bias has m floats, one per row (convolution: rows are channels).
  // m x n (row stride ldr) added after the bias, before the activation, or null. It may be C
  // itself (same pointer and stride), which reads as accumulate; any other overlap with C is
  // undefined.
  const float *residual = nullptr;
  int64_t ldr = 0;
  Activation activation;  // Applied last.
  bool accumulate = false;    // C += A*B instead of C = A*B.
};

/// One row of gemm.def.
struct GemmKernel {
  const char *name;
  Isa isa;  // Bits the host must have.
  GemmOperands operands;
  int kPack;  // K values per 32-bit word of packed A and B: 1 (f32), 2 (bf16 pairs).
  int mr;     // Register tile rows.
  int nr;     // Register tile columns.
  GemmMicrokernel microkernel;
  GemmPackPairs packPairs;  // bf16: converts A rows into pairs; null for f32.
};

/// Every variant in gemm.def, best first, including those this host cannot run.
std::span<const GemmKernel> gemmKernels();

/// True when the host (as capped by TESSEL_CPU_ISA) can run `kernel`.
bool canRun(const GemmKernel &kernel);

/// The first f32 row of gemm.def the host can run; chosen once, its name logged once on stderr
/// when TESSEL_LOG_KERNELS is set.
const GemmKernel &selectedGemmKernel();

/// The first row with these operands the host can run, or null (no bf16 row on this host; U8S8
/// rows live in gemm_s8.def).
const GemmKernel *selectedGemmKernel(GemmOperands operands);

/// "f32", "bf16" or "u8s8".
const char *operandsName(GemmOperands operands);

/// The selected variant's name, e.g. "f32_gemm_6x32__avx512".
const char *gemmKernelName();

// ---- Packed operands ------------------------------------------------------------------------

/// A (m x k) packed for one f32 variant (bf16 variants take A as activations, never packed):
/// ceil(m / mr) row panels, each k steps of mr floats, zero-padded past row m. Non-owning; the memory (64-byte aligned) lives elsewhere (a
/// ConstantStore, a PackedA).
struct PackedAView {
  const GemmKernel *kernel = nullptr;
  int64_t m = 0;
  int64_t k = 0;
  const float *data = nullptr;
};

/// B (k x n) packed for one variant: ceil(n / nr) column panels, each ceil(k / kPack) steps of nr
/// 32-bit words (floats, or bf16 pairs of consecutive K), zero-padded past column n and row k.
/// Non-owning.
struct PackedBView {
  const GemmKernel *kernel = nullptr;
  int64_t k = 0;
  int64_t n = 0;
  const float *data = nullptr;
};

/// Bytes packAInto writes for an m x k A (a multiple of 64).
size_t packedASize(const GemmKernel &kernel, int64_t m, int64_t k);

/// Bytes packBInto writes for a k x n B (a multiple of 64).
size_t packedBSize(const GemmKernel &kernel, int64_t k, int64_t n);

/// Packs A (m x k) into dst (packedASize bytes, 64-byte aligned). Element (i, p) is read from
/// a[i * lda + p], or from a[p * lda + i] when `transposed` (A stored as its k x m transpose).
void packAInto(const GemmKernel &kernel, int64_t m, int64_t k, const float *a, int64_t lda, float *dst,
               bool transposed = false);

/// Packs B (k x n) into dst (packedBSize bytes, 64-byte aligned). Element (p, j) is read from
/// b[p * ldb + j], or from b[j * ldb + p] when `transposed` (B stored as its n x k transpose, as
/// in Gemm with transB = 1).
void packBInto(const GemmKernel &kernel, int64_t k, int64_t n, const float *b, int64_t ldb, float *dst,
               bool transposed = false);

/// Frees memory from std::aligned_alloc.
struct AlignedFree {
  void operator()(float *p) const { std::free(p); }
};

/// An owning packed A (tests, benchmarks, callers without a ConstantStore).
struct PackedA {
  const GemmKernel *kernel = nullptr;
  int64_t m = 0;
  int64_t k = 0;
  std::unique_ptr<float[], AlignedFree> data;

  PackedAView view() const { return {kernel, m, k, data.get()}; }
  operator PackedAView() const { return view(); }  // NOLINT: a view of an owner, like string_view.
};

/// An owning packed B. Built once (e.g. for weights) and read-only after.
struct PackedB {
  const GemmKernel *kernel = nullptr;
  int64_t k = 0;
  int64_t n = 0;
  std::unique_ptr<float[], AlignedFree> data;

  /// 32-bit words in `data`.
  int64_t size() const;
  PackedBView view() const { return {kernel, k, n, data.get()}; }
  operator PackedBView() const { return view(); }  // NOLINT: a view of an owner, like string_view.
};

/// Packs A for the selected variant (or an explicit one).
PackedA packA(int64_t m, int64_t k, const float *a, int64_t lda, bool transposed = false);
PackedA packA(const GemmKernel &kernel, int64_t m, int64_t k, const float *a, int64_t lda, bool transposed = false);

/// Packs row-major B (k x n, row stride ldb) for the selected variant (or an explicit one).
PackedB packB(int64_t k, int64_t n, const float *b, int64_t ldb, bool transposed = false);
PackedB packB(const GemmKernel &kernel, int64_t k, int64_t n, const float *b, int64_t ldb, bool transposed = false);

// ---- Products -------------------------------------------------------------------------------

/// Which operands arrive packed: B then needs no packing buffer in scratch, A no row pointers (an
/// A that is not pre-packed, row-major or IndirectA, is read in place through row pointers).
struct GemmPacking {
  bool a = false;
  bool b = false;
};

/// A read in place through row pointers instead of packed (implicit GEMM). The driver asks, once
/// per block of rows and K, for a pointer to each row's run of that K block; K blocks never cross
/// a multiple of `segment`, so a convolution whose K runs over (kernel tap, input channel) can
/// point each row at one input pixel's channels.
struct IndirectA {
  const void *context = nullptr;
  /// Sets out[i] = &A[row0 + i][k0] for i < count; from there to the end of k0's segment the
  /// floats must be readable.
  void (*rows)(const void *context, int64_t row0, int64_t count, int64_t k0, const float **out) = nullptr;
  int64_t segment = 0;  // 0: all of K is one segment.
};

/// The bf16 variants take every entry point but sgemmPackedA; an indirect A's segment must then be
/// a multiple of kPack.
///
/// Scratch bytes a call with this shape needs to run on `threads` threads (the pool's size(); 1
/// without a pool) with no allocation. Scratch must be 64-byte aligned. Passing less (or none) is
/// allowed: the call then runs on fewer tasks, or falls back to a per-thread buffer.
size_t sgemmScratchBytes(const GemmKernel &kernel, const GemmShape &shape, int threads, GemmPacking packing = {});
size_t sgemmScratchBytes(const GemmShape &shape, int threads, GemmPacking packing = {});

/// C = A*B with the selected variant, then the epilogue. Requires lda >= k, ldb >= n, ldc >= n.
void sgemm(const GemmShape &shape, const float *a, int64_t lda, const float *b, int64_t ldb, float *c,
           int64_t ldc, const GemmEpilogue &epilogue = {}, ThreadPool *pool = nullptr,
           std::span<std::byte> scratch = {});

/// Same, with an explicit variant (tests and benchmarks); the host must be able to run it.
void sgemm(const GemmKernel &kernel, const GemmShape &shape, const float *a, int64_t lda, const float *b,
           int64_t ldb, float *c, int64_t ldc, const GemmEpilogue &epilogue = {}, ThreadPool *pool = nullptr,
           std::span<std::byte> scratch = {});

/// C = A*B with B pre-packed (its variant is used); shape.k and shape.n must match it.
void sgemmPacked(const GemmShape &shape, const float *a, int64_t lda, const PackedBView &b, float *c, int64_t ldc,
                 const GemmEpilogue &epilogue = {}, ThreadPool *pool = nullptr, std::span<std::byte> scratch = {});

/// C = A*B with A indirect and B pre-packed (its variant is used); shape.k and shape.n must match
/// B. Scratch: sgemmScratchBytes with packing {.a = false, .b = true}.
void sgemmIndirect(const GemmShape &shape, const IndirectA &a, const PackedBView &b, float *c, int64_t ldc,
                   const GemmEpilogue &epilogue = {}, ThreadPool *pool = nullptr, std::span<std::byte> scratch = {});

/// C = A*B with A pre-packed (its variant is used); shape.m and shape.k must match it.
void sgemmPackedA(const GemmShape &shape, const PackedAView &a, const float *b, int64_t ldb, float *c, int64_t ldc,
                  const GemmEpilogue &epilogue = {}, ThreadPool *pool = nullptr, std::span<std::byte> scratch = {});

}  // namespace tessel::cpu
