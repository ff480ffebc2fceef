// Int8 GEMM for the cpu target: C = (A - aZero) x (B - bZero) in int32, exact, for A and B each u8
// or s8 (MatMulInteger). The microkernels (gemm_s8.def) multiply u8 by s8 with vpdpbusd, four K
// values per 32-bit lane, so both operands are brought to those types with shifts the result
// then removes:
//
//   A' = A + 128 when A is s8 (else A), a' = aZero + the same shift: A - aZero = A' - a'
//   B' = B - 128 when B is u8 (else B), b' = bZero - the same shift:  B - bZero = B' - b'
//   sum_p (A' - a')(B' - b') = A'.B' - a' * colSum(B') - b' * (rowSum(A') - K * a')
//
// B (the weights) is packed once with its column sums and shifted zero points; each call packs A
// into scratch as u8 quads (K padded to a multiple of 4 with zeros) and takes its row sums on the
// way. The driver blocks for the caches like the f32 one (KC, MC, NC) and splits C over the pool.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "support/thread_pool.h"
#include "targets/cpu/kernels/cpu_features.h"
#include "targets/cpu/kernels/gemm.h"
#include "targets/cpu/kernels/gemm_grid.h"
#include "targets/cpu/kernels/gemm_s8_microkernel.h"

namespace tessel::cpu {

/// One row of gemm_s8.def.
struct S8GemmKernel {
  const char *name;
  Isa isa;  // Bits the host must have.
  int mr;   // Register tile rows.
  int nr;   // Register tile columns.
  S8GemmMicrokernel microkernel;
  S8GemmPackRow packRow;
};

/// Every variant in gemm_s8.def, best first, including those this host cannot run.
std::span<const S8GemmKernel> s8GemmKernels();

/// True when the host (as capped by TESSEL_CPU_ISA) can run `kernel`.
bool canRun(const S8GemmKernel &kernel);

/// The first row of gemm_s8.def the host can run, or null; chosen once, its name logged once on
/// stderr when TESSEL_LOG_KERNELS is set.
const S8GemmKernel *selectedS8GemmKernel();

/// The largest K whose results always fit in int32: each centred operand is at most 255 in
/// magnitude, and 33025 * 255^2 < 2^31 <= 33026 * 255^2. The sums wrap modulo 2^32 on the way, so
/// nothing overflows before the end either.
constexpr int64_t kS8GemmMaxK = 33025;

/// B (k x n) packed for one variant: ceil(n / nr) column panels of ceil(k / 4) steps of nr words
/// (four s8 of consecutive K per column, zero past row k and column n), then colSum(B') and b',
/// each one int32 per column padded to whole panels. Non-owning.
struct PackedS8BView {
  const S8GemmKernel *kernel = nullptr;
  int64_t k = 0;
  int64_t n = 0;
  const std::byte *data = nullptr;
};

/// Bytes packS8BInto writes for a k x n B (a multiple of 64).
size_t packedS8BSize(const S8GemmKernel &kernel, int64_t k, int64_t n);

/// Packs row-major B (k x n; u8, or s8 when `bSigned`) with one zero point per column (n values,
/// of B's type) into dst (packedS8BSize bytes, 64-byte aligned).
void packS8BInto(const S8GemmKernel &kernel, int64_t k, int64_t n, const void *b, bool bSigned,
                 const int32_t *zeroPoints, std::byte *dst);

/// A as a call reads it: row-major (row stride lda bytes), u8 or s8, and its zero points: row i
/// takes zeroPoints[i % zeroPointCount] (a batch of matrices folded into rows repeats them).
struct S8GemmA {
  const void *data = nullptr;
  int64_t lda = 0;
  bool isSigned = false;
  const int32_t *zeroPoints = nullptr;  // Null: zero.
  int64_t zeroPointCount = 1;
};

/// Scratch bytes a call with this shape needs (64-byte aligned): A packed as quads, its row terms
/// and zero points. The same for any number of threads.
size_t s8GemmScratchBytes(const GemmShape &shape);

/// A as the microkernels read it: `rows` words apart (four u8 of consecutive K each), each row's
/// term rowSum(A') - K * a' and its shifted zero point a'. Packed into s8GemmScratchBytes of
/// scratch (carvePackedS8A: A' as u8, rows of packedS8ARowBytes(k)), or, where packing changes
/// nothing the product needs, A's own rows (s8GemmPacked decides). A caller that gathers A's rows
/// itself (a convolution's patches) writes each row's k bytes in place and calls finishPackedS8ARow.
struct PackedS8A {
  uint32_t *rows = nullptr;
  int64_t strideWords = 0;
  int32_t *rowTerm = nullptr;
  int32_t *zero = nullptr;
};

/// Bytes from one packed row of A to the next (whole cache lines).
int64_t packedS8ARowBytes(int64_t k);

/// Where A's packed rows, row terms and zero points lie in `scratch` for this shape.
PackedS8A carvePackedS8A(const GemmShape &shape, std::byte *scratch);

/// True when the product needs A's row sums: A is s8 (its shift to u8 is corrected through them)
/// or a column of B has a zero point. Symmetric weights and u8 activations need none.
bool s8GemmNeedsRowSums(bool aSigned, const PackedS8BView &b);

/// Finishes row `row` of a packed A whose k bytes (u8, or s8 when `isSigned`) were written in
/// place: with `sums`, they become A' and their sum makes the row term; without, only the zero
/// point is set (the bytes past k need not be zero: packed B is zero there).
void finishPackedS8ARow(const S8GemmKernel &kernel, int64_t k, bool isSigned, int32_t zeroPoint, bool sums,
                        const PackedS8A &a, int64_t row);

/// A call's requantized output (QLinear*): C's bytes (or their dequantized floats) at y, row
/// stride ldy elements.
struct S8GemmBytes {
  S8Requantization requantization;
  std::byte *y = nullptr;
  int64_t ldy = 0;
  /// Dequantized floats only: a bias per column, a residual (m x n, row stride ldr) and an
  /// activation applied to them in that order, each block of y as the GEMM finishes it (cache-hot).
  /// biasPerRow and accumulate are not used.
  GemmEpilogue dequantized;
  /// Where element (row, col) of y is.
  std::byte *at(int64_t row, int64_t col) const { return y + (row * ldy + col) * requantization.elementBytes(); }
};

/// `epilogue` (bias per column, residual, activation; its pointers at element (0, 0) of the
/// rectangle) on rows x cols floats of y, row stride ldy, in place.
void applyDequantizedEpilogue(const GemmEpilogue &epilogue, float *y, int64_t ldy, int64_t rows, int64_t cols);

/// True when a product of depth k is summed in several K blocks: only then does a call that
/// requantizes (S8GemmBytes) write C, its earlier blocks' sums.
bool s8GemmSplitsK(const S8GemmKernel &kernel, int64_t k);

/// C (m x n int32, row stride ldc) = (A - aZero) x (B - bZero) with A and B packed (B's variant is
/// used); with `bytes`, C requantized to bytes instead (C then needed only when s8GemmSplitsK).
/// Requires shape.k == b.k <= kS8GemmMaxK, shape.n == b.n and ldc >= n.
void s8GemmPrepacked(const GemmShape &shape, const PackedS8A &a, const PackedS8BView &b, int32_t *c, int64_t ldc,
                     const S8GemmBytes *bytes, ThreadPool *pool);

/// How s8GemmPrepacked splits C over `threads` threads. A caller that gathers A's rows itself may
/// gather, where the split is by rows only, each task's rows in that task (and call
/// s8GemmPrepacked on them without a pool): one hand-off, the rows in the cache that reads them.
GemmGrid s8GemmGrid(const S8GemmKernel &kernel, const GemmShape &shape, int threads);

/// s8GemmPrepacked on A packed (threaded) into s8GemmScratchBytes of scratch. Requires lda >= k.
void s8GemmPacked(const GemmShape &shape, const S8GemmA &a, const PackedS8BView &b, int32_t *c, int64_t ldc,
                  ThreadPool *pool, std::span<std::byte> scratch, const S8GemmBytes *bytes = nullptr);

}  // namespace tessel::cpu
