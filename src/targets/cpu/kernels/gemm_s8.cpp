// The int8 GEMM driver: run-time choice of the gemm_s8.def variant, B's one-time packing, and the
// blocked loop nest around the microkernels, run once per rectangle of C when the work is split
// over threads.
//
//   pack A (threaded)          the variant's packRow over the whole A, row terms, zero points
//                              (or A arrives packed: s8GemmPrepacked)
//   for jc in N by NC          B block (KC x NC) stays in L2
//     for pc in K by KC        corrections (and requantization to bytes) only on the last pc;
//                              later blocks accumulate into C
//       for ic in M by MC      A block (MC x KC) stays in L2
//         for jr in NC by nr   one packed B micro-panel (KC x nr) stays in L1
//           for ir in MC by mr microkernel: one mr x nr tile of C
//
// Both operands arrive packed over the whole K (A per call, B once), so a block is an offset into
// them. Packing A costs one pass over m x k bytes, a 1/n share of the multiply-adds; a u8 A whose
// row sums the product does not need (B without zero points) is read where it is.
#include "targets/cpu/kernels/gemm_s8.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>

#include "support/diagnostic.h"
#include "targets/cpu/kernels/elementwise.h"
#include "targets/cpu/kernels/gemm_grid.h"
#include "targets/cpu/kernels/quantize.h"

namespace tessel::cpu {
namespace {

constexpr S8GemmKernel kS8GemmKernels[] = {
#define S8GEMM(name, family, isa, mr, nr) {#name, isa, mr, nr, &name, &u8s8_pack_row__##family},
#include "targets/cpu/kernels/gemm_s8.def"
#undef S8GEMM
};

// Cache budgets the block sizes come from, those of the f32 driver (gemm.cpp says why).
constexpr int64_t kL1BytesForBPanel = 64 * 1024;
constexpr int64_t kL2BytesForABlock = 384 * 1024;
constexpr int64_t kL2BytesForBBlock = 512 * 1024;
constexpr int64_t kAlignBytes = 64;  // Cache line; also the zmm width.
constexpr int64_t kWordBytes = 4;    // One packed quad.
// Multiply-adds an extra task costs (wake-up, claiming, cold caches), as in gemm.cpp.
constexpr int64_t kPackGrainBytes = 16384;  // Bytes of A per packing task.
constexpr int32_t kSignShift = 128;         // s8 + 128 is u8; u8 - 128 is s8.
constexpr int64_t kMaxNr = 64;              // The widest register tile in gemm_s8.def.
// What a task pays, in multiply-adds, per byte of A or B it brings in: vpdpbusd does 128 a cycle
// on two ports, and an operand another core just wrote (a convolution's patches) arrives at about
// a byte a cycle. A 784 x 128 x 1152 product (a 3x3 conv at 28x28) split by rows instead of columns,
// so neither task reads all of A: 0.28 -> 0.21 ms on two threads.
constexpr int64_t kOperandByteCost = 64;
// Tasks per thread of a split by rows alone, and the fewest rows such a task takes.
constexpr int64_t kTasksPerThread = 2;
constexpr int64_t kMinRowsPerTask = 192;

int64_t ceilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }
int64_t roundUp(int64_t a, int64_t b) { return ceilDiv(a, b) * b; }
size_t alignedBytes(int64_t bytes) { return size_t(roundUp(bytes, kAlignBytes)); }

int64_t quadsOf(int64_t k) { return ceilDiv(k, kS8GemmKPack); }
/// Words from one packed row of A to the next: whole cache lines.
int64_t aStrideWords(int64_t k) { return roundUp(quadsOf(k), kAlignBytes / kWordBytes); }
/// Bytes of B's panels, before the column sums and zero points.
int64_t panelBytes(const S8GemmKernel &kernel, int64_t k, int64_t n) {
  return roundUp(n, kernel.nr) * quadsOf(k) * kWordBytes;
}

/// Block sizes, in quads of K and in rows and columns of C.
struct Blocking {
  int64_t kq, mc, nc;
};

Blocking chooseBlocking(const S8GemmKernel &kernel, const GemmShape &shape) {
  const int64_t quads = quadsOf(shape.k);
  Blocking blocking;
  blocking.kq = std::clamp<int64_t>(kL1BytesForBPanel / (kernel.nr * kWordBytes), 1, quads);
  blocking.kq = ceilDiv(quads, ceilDiv(quads, blocking.kq));  // Even blocks, no thin last one.
  const int64_t blockBytes = blocking.kq * kWordBytes;
  blocking.mc = std::min(std::max<int64_t>(kL2BytesForABlock / blockBytes / kernel.mr * kernel.mr, kernel.mr),
                         roundUp(shape.m, kernel.mr));
  blocking.nc = std::min(std::max<int64_t>(kL2BytesForBBlock / blockBytes / kernel.nr * kernel.nr, kernel.nr),
                         roundUp(shape.n, kernel.nr));
  return blocking;
}

/// Whether a column of packed B has a zero point (b', stored after the column sums).
bool hasZeroPoints(const PackedS8BView &b) {
  const int64_t paddedN = roundUp(b.n, b.kernel->nr);
  const auto *bZero = reinterpret_cast<const int32_t *>(b.data + panelBytes(*b.kernel, b.k, b.n)) + paddedN;
  return std::any_of(bZero, bZero + b.n, [](int32_t z) { return z != 0; });
}

/// Packs rows [begin, end) of A as A' (u8, zero past K to whole cache lines) with their row terms
/// and shifted zero points.
void packARows(const S8GemmKernel &kernel, const GemmShape &shape, const S8GemmA &a, int64_t begin, int64_t end,
               const PackedS8A &packed) {
  const int64_t k = shape.k;
  const int32_t shift = a.isSigned ? kSignShift : 0;
  for (int64_t i = begin; i < end; ++i) {
    const uint8_t *src = static_cast<const uint8_t *>(a.data) + i * a.lda;
    // At most kS8GemmMaxK * 255 < 2^24.
    const int32_t sum = kernel.packRow(src, k, a.isSigned, reinterpret_cast<uint8_t *>(packed.rows + i * packed.strideWords));
    const int32_t zero = (a.zeroPoints != nullptr ? a.zeroPoints[i % a.zeroPointCount] : 0) + shift;
    packed.zero[i] = zero;
    packed.rowTerm[i] = sum - int32_t(k) * zero;
  }
}

/// A's own rows as the microkernels' operand, when its bytes are already A' (u8), its rows whole
/// words apart and no row sum is needed; only the zero points are set. The last quad of a row
/// must not run past it: k is a multiple of four.
bool readAInPlace(const GemmShape &shape, const S8GemmA &a, const PackedS8BView &b, const PackedS8A &packed,
                  PackedS8A *inPlace) {
  if (a.isSigned || a.lda % kS8GemmKPack != 0 || shape.k % kS8GemmKPack != 0 ||
      reinterpret_cast<uintptr_t>(a.data) % kWordBytes != 0 || s8GemmNeedsRowSums(false, b)) {
    return false;
  }
  *inPlace = packed;
  // Only ever read: the microkernels take A as const.
  inPlace->rows = const_cast<uint32_t *>(static_cast<const uint32_t *>(a.data));
  inPlace->strideWords = a.lda / kS8GemmKPack;
  // One zero point for all rows (a convolution's pixels) fills without a division per row.
  if (a.zeroPoints == nullptr || a.zeroPointCount == 1) {
    std::fill(inPlace->zero, inPlace->zero + shape.m, a.zeroPoints != nullptr ? a.zeroPoints[0] : 0);
  } else {
    for (int64_t i = 0; i < shape.m; ++i) inPlace->zero[i] = a.zeroPoints[i % a.zeroPointCount];
  }
  std::fill(inPlace->rowTerm, inPlace->rowTerm + shape.m, 0);  // Multiplies B's zero points, all zero.
  return true;
}

bool hasDequantizedEpilogue(const S8GemmBytes *bytes) {
  return bytes != nullptr && (bytes->dequantized.bias != nullptr || bytes->dequantized.residual != nullptr ||
                              bytes->dequantized.activation.kind != ActivationKind::None);
}

/// C = the product for one rectangle of C: `shape` is the rectangle, and A's rows, B's panels and
/// columns and C already point at its top-left corner.
/// `sharedZero` (null when the rows' corrections differ): the a' of every row, B having no zero
/// points; the corrections then fold into one offset per column.
void runTask(const S8GemmKernel &kernel, const GemmShape &shape, const PackedS8A &a, const int8_t *bPanels,
             int64_t panelStrideBytes, const int32_t *colSum, const int32_t *bZero, int32_t *c, int64_t ldc,
             const S8GemmBytes *bytes, const int32_t *sharedZero) {
  const int64_t mr = kernel.mr, nr = kernel.nr;
  alignas(kAlignBytes) int32_t colOffset[kMaxNr];
  const int64_t quads = quadsOf(shape.k), aStride = a.strideWords;
  const Blocking blocking = chooseBlocking(kernel, shape);
  S8MicrokernelArgs args;
  args.aStride = aStride;
  args.ldc = ldc;
  // The last K block's requantization: the same for every tile but its column offsets.
  const S8Requantization *requantization = bytes != nullptr ? &bytes->requantization : nullptr;
  if (requantization != nullptr) {
    args.requantize = *requantization;
    args.ldy = bytes->ldy * requantization->elementBytes();
  }
  for (int64_t jc = 0; jc < shape.n; jc += blocking.nc) {
    const int64_t nc = std::min(blocking.nc, shape.n - jc);
    for (int64_t pq = 0, kq = 0; pq < quads; pq += kq) {
      kq = std::min(blocking.kq, quads - pq);
      const bool lastK = pq + kq == quads;
      for (int64_t ic = 0; ic < shape.m; ic += blocking.mc) {
        const int64_t mc = std::min(blocking.mc, shape.m - ic);
        for (int64_t jr = 0; jr < nc; jr += nr) {
          const int64_t col = jc + jr;
          const int8_t *bPanel = bPanels + (col / nr) * panelStrideBytes + pq * nr * kWordBytes;
          const bool folded = lastK && sharedZero != nullptr;
          if (folded) {  // bias - a' * colSum, wrapping as the microkernel's int32 lanes do.
            const int32_t *bias = bytes != nullptr ? bytes->requantization.bias : nullptr;
            for (int64_t j = 0; j < nr; ++j) {
              const uint32_t b = bias != nullptr && col + j < shape.n ? uint32_t(bias[col + j]) : 0;
              colOffset[j] = int32_t(b - uint32_t(*sharedZero) * uint32_t(colSum[col + j]));
            }
          }
          for (int64_t ir = 0; ir < mc; ir += mr) {
            const int64_t row = ic + ir;
            args.quads = kq;
            args.a = a.rows + row * aStride + pq;
            args.b = bPanel;
            args.c = c + row * ldc + col;
            args.rows = int(std::min(mr, mc - ir));
            args.cols = int(std::min(nr, nc - jr));
            args.accumulate = pq != 0;
            const bool perRow = lastK && !folded;
            args.rowTerm = perRow ? a.rowTerm + row : nullptr;
            args.aZero = perRow ? a.zero + row : nullptr;
            args.bZero = perRow ? bZero + col : nullptr;
            args.colSum = perRow ? colSum + col : nullptr;
            args.colOffset = folded ? colOffset : nullptr;
            // Bytes only from the last K block; the earlier ones store their partial sums in C.
            args.y = nullptr;
            if (lastK && requantization != nullptr) {
              args.requantize.bias =
                  folded || requantization->bias == nullptr ? nullptr : requantization->bias + col;
              args.requantize.multiplier = requantization->multiplier + col;
              args.y = bytes->at(row, col);
            }
            kernel.microkernel(args);
          }
        }
        // The block's floats are final and still in the cache.
        if (lastK && hasDequantizedEpilogue(bytes)) {
          GemmEpilogue block = bytes->dequantized;
          if (block.bias != nullptr) block.bias += jc;
          if (block.residual != nullptr) block.residual += ic * block.ldr + jc;
          applyDequantizedEpilogue(block, reinterpret_cast<float *>(bytes->at(ic, jc)), bytes->ldy, mc, nc);
        }
      }
    }
  }
}

}  // namespace

void applyDequantizedEpilogue(const GemmEpilogue &epilogue, float *y, int64_t ldy, int64_t rows, int64_t cols) {
  const ElementwiseKernels &loops = elementwiseKernels();
  for (int64_t i = 0; i < rows; ++i) {
    float *row = y + i * ldy;
    if (epilogue.bias != nullptr) loops.binary(BinaryOp::Add, row, false, epilogue.bias, false, row, cols);
    if (epilogue.residual != nullptr) {
      loops.binary(BinaryOp::Add, row, false, epilogue.residual + i * epilogue.ldr, false, row, cols);
    }
    if (epilogue.activation.kind != ActivationKind::None) applyActivation(epilogue.activation, row, cols);
  }
}

std::span<const S8GemmKernel> s8GemmKernels() { return kS8GemmKernels; }

bool canRun(const S8GemmKernel &kernel) { return hasAll(hostIsa(), kernel.isa); }

const S8GemmKernel *selectedS8GemmKernel() {
  static const S8GemmKernel *const selected = [] {
    for (const S8GemmKernel &kernel : kS8GemmKernels) {
      if (!canRun(kernel)) continue;
      if (std::getenv("TESSEL_LOG_KERNELS") != nullptr) {
        std::fprintf(stderr, "tessel: u8s8 gemm uses %s (host isa: %s)\n", kernel.name, isaName(hostIsa()).c_str());
      }
      return &kernel;
    }
    return static_cast<const S8GemmKernel *>(nullptr);
  }();
  return selected;
}

size_t packedS8BSize(const S8GemmKernel &kernel, int64_t k, int64_t n) {
  // The panels, then colSum(B') and b', nr-padded int32 each.
  return alignedBytes(panelBytes(kernel, k, n) + 2 * roundUp(n, kernel.nr) * kWordBytes);
}

void packS8BInto(const S8GemmKernel &kernel, int64_t k, int64_t n, const void *b, bool bSigned,
                 const int32_t *zeroPoints, std::byte *dst) {
  TESSEL_CHECK(k >= 0 && n >= 0, "bad packS8B shape k={} n={}", k, n);
  const int64_t nr = kernel.nr, quads = quadsOf(k), paddedN = roundUp(n, nr);
  const int32_t shift = bSigned ? 0 : kSignShift;
  auto value = [&](int64_t p, int64_t j) {
    const int64_t i = p * n + j;
    return bSigned ? int32_t(static_cast<const int8_t *>(b)[i]) : int32_t(static_cast<const uint8_t *>(b)[i]) - shift;
  };
  auto *panels = reinterpret_cast<int8_t *>(dst);
  for (int64_t j = 0; j < paddedN; ++j) {
    int8_t *column = panels + (j / nr) * quads * nr * kWordBytes + (j % nr) * kWordBytes;
    for (int64_t q = 0; q < quads; ++q) {
      for (int64_t t = 0; t < kS8GemmKPack; ++t) {
        const int64_t p = q * kS8GemmKPack + t;
        column[q * nr * kWordBytes + t] = j < n && p < k ? int8_t(value(p, j)) : int8_t{0};
      }
    }
  }
  auto *colSum = reinterpret_cast<int32_t *>(dst + panelBytes(kernel, k, n));
  int32_t *bZero = colSum + paddedN;
  std::fill(colSum, colSum + 2 * paddedN, 0);
  for (int64_t j = 0; j < n; ++j) {
    for (int64_t p = 0; p < k; ++p) colSum[j] += value(p, j);
    bZero[j] = zeroPoints[j] - shift;
  }
}

size_t s8GemmScratchBytes(const GemmShape &shape) {
  return alignedBytes(shape.m * aStrideWords(shape.k) * kWordBytes) + 2 * alignedBytes(shape.m * kWordBytes);
}

int64_t packedS8ARowBytes(int64_t k) { return aStrideWords(k) * kWordBytes; }

PackedS8A carvePackedS8A(const GemmShape &shape, std::byte *scratch) {
  PackedS8A packed;
  packed.rows = reinterpret_cast<uint32_t *>(scratch);
  packed.strideWords = aStrideWords(shape.k);
  scratch += alignedBytes(shape.m * aStrideWords(shape.k) * kWordBytes);
  packed.rowTerm = reinterpret_cast<int32_t *>(scratch);
  scratch += alignedBytes(shape.m * kWordBytes);
  packed.zero = reinterpret_cast<int32_t *>(scratch);
  return packed;
}

bool s8GemmNeedsRowSums(bool aSigned, const PackedS8BView &b) { return aSigned || hasZeroPoints(b); }

void finishPackedS8ARow(const S8GemmKernel &kernel, int64_t k, bool isSigned, int32_t zeroPoint, bool sums,
                        const PackedS8A &a, int64_t row) {
  if (!sums) {
    TESSEL_CHECK(!isSigned, "an s8 A is shifted to u8 through its row sums");
    a.zero[row] = zeroPoint;
    a.rowTerm[row] = 0;
    return;
  }
  // packRow reads each 64 bytes before it writes them, so it may pack a row onto itself.
  auto *bytes = reinterpret_cast<uint8_t *>(a.rows + row * a.strideWords);
  const int32_t sum = kernel.packRow(bytes, k, isSigned, bytes);
  const int32_t zero = zeroPoint + (isSigned ? kSignShift : 0);
  a.zero[row] = zero;
  a.rowTerm[row] = sum - int32_t(k) * zero;
}

bool s8GemmSplitsK(const S8GemmKernel &kernel, int64_t k) {
  return k > 0 && chooseBlocking(kernel, GemmShape{1, kernel.nr, k}).kq < quadsOf(k);
}

GemmGrid s8GemmGrid(const S8GemmKernel &kernel, const GemmShape &shape, int threads) {
  GemmGrid grid = chooseGemmGrid(kernel.mr, kernel.nr, shape, threads, kOperandByteCost, kOperandByteCost);
  // A split by rows alone runs as several tasks per thread, claimed as the threads come free, so a
  // thread slowed by another process on its core (a shared machine) hands its work to the others
  // instead of keeping them waiting. Each task reads all of B, so tasks keep kMinRowsPerTask rows.
  if (grid.taskCols == 1 && grid.taskRows > 1) {
    const int64_t rows = std::max(roundUp(ceilDiv(grid.rowsPerTask, kTasksPerThread), kernel.mr),
                                  roundUp(kMinRowsPerTask, kernel.mr));
    grid.rowsPerTask = std::min(grid.rowsPerTask, rows);
    grid.taskRows = ceilDiv(shape.m, grid.rowsPerTask);
  }
  return grid;
}

void s8GemmPrepacked(const GemmShape &shape, const PackedS8A &a, const PackedS8BView &b, int32_t *c, int64_t ldc,
                     const S8GemmBytes *bytes, ThreadPool *pool) {
  TESSEL_CHECK(b.kernel != nullptr && b.k == shape.k && b.n == shape.n, "packed B is {}x{}, s8 gemm wants {}x{}", b.k,
               b.n, shape.k, shape.n);
  const S8GemmKernel &kernel = *b.kernel;
  TESSEL_CHECK(canRun(kernel), "s8 gemm variant {} needs ISA this host lacks", kernel.name);
  TESSEL_CHECK(shape.m >= 0 && shape.k >= 1 && shape.k <= kS8GemmMaxK,
               "s8 gemm shape {}x{}x{}: K must be 1..{} (above, int32 may overflow)", shape.m, shape.n, shape.k,
               kS8GemmMaxK);
  TESSEL_CHECK(ldc >= shape.n && reinterpret_cast<uintptr_t>(b.data) % kAlignBytes == 0,
               "s8 gemm ldc={} too small for n={}, or packed B not aligned", ldc, shape.n);
  if (shape.m == 0 || shape.n == 0) return;
  const auto *panels = reinterpret_cast<const int8_t *>(b.data);
  const auto *colSum = reinterpret_cast<const int32_t *>(b.data + panelBytes(kernel, shape.k, shape.n));
  const int32_t *bZero = colSum + roundUp(shape.n, kernel.nr);
  const int64_t panelStrideBytes = quadsOf(shape.k) * kernel.nr * kWordBytes;
  TESSEL_CHECK(kernel.nr <= kMaxNr, "s8 gemm variant {} is wider than {} columns", kernel.name, kMaxNr);
  const GemmGrid grid = s8GemmGrid(kernel, shape, pool != nullptr ? pool->size() : 1);
  // Every row's corrections alike: B without zero points and one a' (the usual activations).
  const bool sharedZero = !hasZeroPoints(b) &&
                          std::all_of(a.zero, a.zero + shape.m, [&](int32_t z) { return z == a.zero[0]; });
  auto runOne = [&](int64_t task) {
    const int64_t row0 = (task / grid.taskCols) * grid.rowsPerTask;
    const int64_t col0 = (task % grid.taskCols) * grid.colsPerTask;
    const GemmShape part{std::min(grid.rowsPerTask, shape.m - row0), std::min(grid.colsPerTask, shape.n - col0),
                         shape.k};
    const PackedS8A rows{a.rows + row0 * a.strideWords, a.strideWords, a.rowTerm + row0, a.zero + row0};
    S8GemmBytes partBytes;
    if (bytes != nullptr) {
      partBytes = *bytes;
      if (partBytes.requantization.bias != nullptr) partBytes.requantization.bias += col0;
      partBytes.requantization.multiplier += col0;
      partBytes.y = bytes->at(row0, col0);
      if (partBytes.dequantized.bias != nullptr) partBytes.dequantized.bias += col0;
      if (partBytes.dequantized.residual != nullptr) partBytes.dequantized.residual += row0 * bytes->dequantized.ldr + col0;
    }
    runTask(kernel, part, rows, panels + (col0 / kernel.nr) * panelStrideBytes, panelStrideBytes, colSum + col0,
            bZero + col0, c + row0 * ldc + col0, ldc, bytes != nullptr ? &partBytes : nullptr,
            sharedZero ? a.zero : nullptr);
  };
  if (grid.tasks() == 1 || pool == nullptr) {
    for (int64_t task = 0; task < grid.tasks(); ++task) runOne(task);
  } else {
    pool->parallelFor(grid.tasks(), runOne);
  }
}

void s8GemmPacked(const GemmShape &shape, const S8GemmA &a, const PackedS8BView &b, int32_t *c, int64_t ldc,
                  ThreadPool *pool, std::span<std::byte> scratch, const S8GemmBytes *bytes) {
  TESSEL_CHECK(a.lda >= shape.k, "s8 gemm lda={} too small for k={}", a.lda, shape.k);
  if (shape.m == 0 || shape.n == 0) return;
  if (shape.k == 0) {  // An empty sum: zeros, requantized when asked.
    const QuantizeKernels &q = quantizeKernels();
    for (int64_t i = 0; i < shape.m; ++i) {
      int32_t *row = c + i * ldc;
      std::fill(row, row + shape.n, 0);
      if (bytes == nullptr) continue;
      const S8Requantization &r = bytes->requantization;
      std::byte *y = bytes->at(i, 0);
      // Dequantized output: the bytes first, in C's row (its int32 zeros are read first), then
      // widened into y.
      void *quantized = r.dequantizeScale != 0.0f ? static_cast<void *>(row) : static_cast<void *>(y);
      if (r.ySigned) {
        q.requantizeColumnsS8(row, r.bias, r.multiplier, r.zeroPoint, static_cast<int8_t *>(quantized), shape.n);
      } else {
        q.requantizeColumnsU8(row, r.bias, r.multiplier, r.zeroPoint, static_cast<uint8_t *>(quantized), shape.n);
      }
      if (r.dequantizeScale != 0.0f) {
        dequantizeLinear(q, quantized, r.ySigned, r.dequantizeScale, r.zeroPoint, reinterpret_cast<float *>(y), shape.n,
                         nullptr);
      }
      if (hasDequantizedEpilogue(bytes)) {
        GemmEpilogue rowEpilogue = bytes->dequantized;
        if (rowEpilogue.residual != nullptr) rowEpilogue.residual += i * rowEpilogue.ldr;
        applyDequantizedEpilogue(rowEpilogue, reinterpret_cast<float *>(y), bytes->ldy, 1, shape.n);
      }
    }
    return;
  }
  TESSEL_CHECK(scratch.size() >= s8GemmScratchBytes(shape) &&
                   reinterpret_cast<uintptr_t>(scratch.data()) % kAlignBytes == 0,
               "s8 gemm needs {} bytes of {}-byte aligned scratch", s8GemmScratchBytes(shape), kAlignBytes);
  TESSEL_CHECK(b.kernel != nullptr, "s8 gemm without a packed B variant");
  const PackedS8A packedA = carvePackedS8A(shape, scratch.data());
  PackedS8A inPlace;
  if (readAInPlace(shape, a, b, packedA, &inPlace)) {
    s8GemmPrepacked(shape, inPlace, b, c, ldc, bytes, pool);
    return;
  }
  parallelRanges(pool, shape.m, std::max<int64_t>(1, kPackGrainBytes / shape.k),
                 [&](int64_t begin, int64_t end) { packARows(*b.kernel, shape, a, begin, end, packedA); });
  s8GemmPrepacked(shape, packedA, b, c, ldc, bytes, pool);
}

}  // namespace tessel::cpu
