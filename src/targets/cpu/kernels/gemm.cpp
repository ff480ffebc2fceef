// The SGEMM driver: BLIS-style loop nest around the microkernels of gemm.def, run once per
// rectangle of C when the work is split over threads.
//
//   for jc in N by NC          B block (KC x NC) stays in L2 (packed once per (jc, pc))
//     for pc in K by KC        epilogue only on the last pc; later blocks accumulate into C
//       for ic in M by MC      A block (MC x KC) stays in L2
//         for jr in NC by nr   one packed B micro-panel (KC x nr) stays in L1
//           for ir in MC by mr microkernel: one mr x nr tile of C, epilogue on the last pc
//
// A is not copied: the microkernel reads row-major A in place through one pointer per row (the
// broadcasts it needs read a row's floats in order, streams the prefetcher follows), which costs
// less than packing A into panels (a transposing copy) would save. Weights on the left arrive
// pre-packed into mr-row panels; IndirectA (implicit GEMM) supplies its own row pointers. Packed B
// panels are zero-padded to whole tiles, so the microkernels always compute full mr x nr tiles
// and store only the valid part of a ragged edge (masked stores), epilogue included.
// Pre-packed operands hold the whole K per panel, so a block is an offset into them and needs no
// packing. A bf16 variant (kPack 2) packs B as (k, k+1) pairs of bf16 in 32-bit words and converts
// each block of A rows to pairs once (the row pointers still find the float rows); K blocks are
// then whole pairs except where K ends. Activations other than ReLU/Clip (which the microkernel does in registers) run on each
// tile right after it is stored, while it is in L1.
#include "targets/cpu/kernels/gemm.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <limits>

#include "support/diagnostic.h"
#include "support/float_types.h"
#include "targets/cpu/kernels/gemm_grid.h"

namespace tessel::cpu {
namespace {

// Cache budgets the block sizes are derived from; for current x86 cores (L1D 32-48 KiB, L2 1-2
// MiB per core). The B block shares L2 with the A block: an L3 shared with other tenants (or a
// virtual machine's) streams it too slowly at 2048 and up, and since A is read in place a narrower
// B block costs no repacking.
// One KC x nr micro-panel of B. It may exceed L1: the microkernel streams it in order (the
// prefetcher keeps up from L2), and the longer K blocks halve the passes over C, which is what
// holds large products back (measured: 2048 and 4096 went from 73% to 85% of peak).
// bf16 variants take twice the bytes (twice the K of pairs again): at 4096 the passes over C, which
// no cache holds, are what is left to save (measured: 0.77 to 0.79 of peak, mean of five runs).
constexpr int64_t kL1BytesForBPanel = 64 * 1024;
constexpr int64_t kL2BytesForABlock = 384 * 1024;   // The MC x KC block of A.
constexpr int64_t kL2BytesForBBlock = 512 * 1024;  // The KC x NC block of B.
constexpr int64_t kMaxKc = 512;                     // Longer K blocks gain nothing measurable.
// One panel of A rows (at most mr: a decode step's M = 1) has no A block to keep in cache, and B
// is read once whatever KC is: K is blocked only past this, so each B panel streams whole, the
// panels one after another, and C is written once.
constexpr int64_t kMaxRowKc = 8192;
constexpr int64_t kAlignBytes = 64;                 // Cache line; also the zmm width.
// Packing one float of B (a strided load and a store) costs about this many multiply-adds, in the
// thread split's cost model (gemm_grid.h).
constexpr int64_t kPackCost = 16;

int64_t ceilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }
int64_t roundUp(int64_t a, int64_t b) { return ceilDiv(a, b) * b; }

/// Packed steps (32-bit words per row or column) that hold k values.
int64_t kSteps(const GemmKernel &kernel, int64_t k) { return ceilDiv(k, kernel.kPack); }

/// Block sizes for one variant and (sub)shape.
struct Blocking {
  int64_t kc, mc, nc;
};

Blocking chooseBlocking(const GemmKernel &kernel, const GemmShape &shape) {
  const int64_t bytes = sizeof(float);
  // Packed B holds kPack values per word, so a panel of the same bytes covers kPack times the K.
  const int64_t bBytes = bytes / kernel.kPack;
  Blocking blocking;
  blocking.kc = shape.m <= kernel.mr ? kMaxRowKc
                             : std::clamp<int64_t>(kL1BytesForBPanel * kernel.kPack / (kernel.nr * bBytes), 1,
                                                          kMaxKc * kernel.kPack * kernel.kPack);
  // Split K evenly rather than leaving a thin last block.
  const int64_t k = std::max<int64_t>(shape.k, 1);
  blocking.kc = roundUp(ceilDiv(k, ceilDiv(k, blocking.kc)), kernel.kPack);
  const int64_t mcFit = kL2BytesForABlock / (blocking.kc * bytes) / kernel.mr * kernel.mr;
  blocking.mc = std::min(std::max<int64_t>(mcFit, kernel.mr), roundUp(shape.m, kernel.mr));
  const int64_t ncFit = kL2BytesForBBlock / (blocking.kc * bBytes) / kernel.nr * kernel.nr;
  blocking.nc = std::min(std::max<int64_t>(ncFit, kernel.nr), roundUp(shape.n, kernel.nr));
  return blocking;
}

size_t alignedBytes(int64_t floats) { return size_t(roundUp(floats * int64_t(sizeof(float)), kAlignBytes)); }

/// Packing buffers of one task, carved from scratch.
struct TaskBuffers {
  float *b = nullptr;             // KC x NC block of B (null when B is pre-packed).
  const float **aRows = nullptr;  // MC + mr row pointers of A read in place (null when pre-packed).
  // bf16: the block of A rows as pairs (MC rows of pairStride words) and a pointer to each row.
  uint32_t *aPairs = nullptr;
  const uint32_t **aPairRows = nullptr;
  int64_t pairStride = 0;
  // bf16 with A read in place over several column blocks: all of the task's A rows as pairs, over
  // the whole K (null otherwise), converted once instead of once per column block.
  uint32_t *aAllPairs = nullptr;
  int64_t allPairStride = 0;
};

size_t rowPointerBytes(const GemmKernel &kernel, const Blocking &blocking) {
  return size_t(roundUp(int64_t((blocking.mc + kernel.mr) * sizeof(const float *)), kAlignBytes));
}

/// Words per row of the converted A block: a whole number of cache lines.
int64_t pairStride(const GemmKernel &kernel, const Blocking &blocking) {
  return roundUp(kSteps(kernel, blocking.kc), kAlignBytes / int64_t(sizeof(uint32_t)));
}

/// Whether a task converts all its A rows to bf16 pairs up front: a bf16 variant, A read in place,
/// and more than one column block, each of which would convert (and read from memory) A again.
bool convertsAllOfA(const GemmKernel &kernel, const GemmShape &part, const Blocking &blocking, GemmPacking packing) {
  return kernel.kPack > 1 && !packing.a && blocking.nc < part.n;
}

/// Words per row of all of A as pairs: a whole number of cache lines.
int64_t allPairStride(const GemmKernel &kernel, int64_t k) {
  return roundUp(kSteps(kernel, std::max<int64_t>(k, 1)), kAlignBytes / int64_t(sizeof(uint32_t)));
}

size_t taskScratchBytes(const GemmKernel &kernel, const GemmShape &part, GemmPacking packing) {
  const Blocking blocking = chooseBlocking(kernel, part);
  size_t bytes = 0;
  if (!packing.a) bytes += rowPointerBytes(kernel, blocking);
  if (kernel.kPack > 1) bytes += rowPointerBytes(kernel, blocking) + alignedBytes(blocking.mc * pairStride(kernel, blocking));
  if (convertsAllOfA(kernel, part, blocking, packing)) {
    bytes += alignedBytes(part.m * allPairStride(kernel, part.k) * int64_t(sizeof(uint32_t)));
  }
  // One block of rows packs B a panel at a time into the same place (see runTask).
  if (!packing.b) {
    bytes += alignedBytes(kSteps(kernel, blocking.kc) * (part.m <= blocking.mc ? kernel.nr : blocking.nc));
  }
  return bytes;
}

TaskBuffers carveTaskBuffers(const GemmKernel &kernel, const GemmShape &part, GemmPacking packing, std::byte *base) {
  const Blocking blocking = chooseBlocking(kernel, part);
  TaskBuffers buffers;
  if (!packing.a) {
    buffers.aRows = reinterpret_cast<const float **>(base);
    base += rowPointerBytes(kernel, blocking);
  }
  if (kernel.kPack > 1) {
    buffers.aPairRows = reinterpret_cast<const uint32_t **>(base);
    base += rowPointerBytes(kernel, blocking);
    buffers.pairStride = pairStride(kernel, blocking);
    buffers.aPairs = reinterpret_cast<uint32_t *>(base);
    base += alignedBytes(blocking.mc * buffers.pairStride);
  }
  if (convertsAllOfA(kernel, part, blocking, packing)) {
    buffers.allPairStride = allPairStride(kernel, part.k);
    buffers.aAllPairs = reinterpret_cast<uint32_t *>(base);
    base += alignedBytes(part.m * buffers.allPairStride * int64_t(sizeof(uint32_t)));
  }
  if (!packing.b) buffers.b = reinterpret_cast<float *>(base);
  return buffers;
}

GemmGrid chooseGrid(const GemmKernel &kernel, const GemmShape &shape, int threads, GemmPacking packing) {
  return chooseGemmGrid(kernel.mr, kernel.nr, shape, threads, packing.b ? 0 : kPackCost);
}

/// One full panel of kMr rows of row-major A: reads kMr rows side by side so each K step is one
/// contiguous run of stores (the compiler unrolls the rows).
template <int kMr>
void packAPanelRows(int64_t kc, const float *a, int64_t lda, float *dst) {
  const float *rows[kMr];
  for (int i = 0; i < kMr; ++i) rows[i] = a + i * lda;
  for (int64_t p = 0; p < kc; ++p, dst += kMr) {
#pragma GCC unroll 16
    for (int i = 0; i < kMr; ++i) dst[i] = rows[i][p];
  }
}

/// Packs rows [0, mc) x cols [0, kc) of A (element (i, p) at a[i * rowStride + p * colStride])
/// into ceil(mc/mr) panels of kc steps of mr floats; panel r starts at dst + r * panelStride.
void packAPanels(int64_t mr, int64_t mc, int64_t kc, const float *a, int64_t rowStride, int64_t colStride,
                 float *dst, int64_t panelStride) {
  for (int64_t ir = 0; ir < mc; ir += mr, dst += panelStride) {
    const int64_t rows = std::min(mr, mc - ir);
    const float *src = a + ir * rowStride;
    if (colStride == 1 && rows == mr) {
      // The tile heights of gemm.def; others take the general loop.
      switch (mr) {
        case 4: packAPanelRows<4>(kc, src, rowStride, dst); continue;
        case 6: packAPanelRows<6>(kc, src, rowStride, dst); continue;
        case 8: packAPanelRows<8>(kc, src, rowStride, dst); continue;
        case 14: packAPanelRows<14>(kc, src, rowStride, dst); continue;
        default: break;
      }
    }
    for (int64_t p = 0; p < kc; ++p) {
      for (int64_t i = 0; i < rows; ++i) dst[p * mr + i] = src[i * rowStride + p * colStride];
      std::fill(dst + p * mr + rows, dst + p * mr + mr, 0.0f);
    }
  }
}

/// Packs rows [0, kc) x cols [0, nc) of B (element (p, j) at b[p * rowStride + j * colStride])
/// into ceil(nc/nr) panels; panel j starts at dst + j * panelStride and holds kc steps of nr
/// floats, zero-padded past column nc.
void packBPanels(int64_t nr, int64_t kc, int64_t nc, const float *b, int64_t rowStride, int64_t colStride,
                 float *dst, int64_t panelStride) {
  for (int64_t jr = 0; jr < nc; jr += nr, dst += panelStride) {
    const int64_t cols = std::min(nr, nc - jr);
    if (colStride == 1) {
      for (int64_t p = 0; p < kc; ++p) {
        float *row = dst + p * nr;
        std::memcpy(row, b + p * rowStride + jr, size_t(cols) * sizeof(float));
        std::fill(row + cols, row + nr, 0.0f);
      }
    } else {
      for (int64_t j = 0; j < cols; ++j) {
        const float *src = b + (jr + j) * colStride;
        for (int64_t p = 0; p < kc; ++p) dst[p * nr + j] = src[p * rowStride];
      }
      for (int64_t p = 0; p < kc; ++p) std::fill(dst + p * nr + cols, dst + p * nr + nr, 0.0f);
    }
  }
}

/// packBPanels for a bf16 variant: panels of ceil(kc/2) steps of nr words, each the (p, p+1) pair
/// of one column rounded to bf16 (zero past column nc and past row kc).
void packBPairPanels(int64_t nr, int64_t kc, int64_t nc, const float *b, int64_t rowStride, int64_t colStride,
                     uint32_t *dst, int64_t panelStride) {
  for (int64_t jr = 0; jr < nc; jr += nr, dst += panelStride) {
    const int64_t cols = std::min(nr, nc - jr);
    for (int64_t q = 0; q < ceilDiv(kc, 2); ++q) {
      uint32_t *step = dst + q * nr;
      const float *first = b + 2 * q * rowStride + jr * colStride;
      const bool hasSecond = 2 * q + 1 < kc;
      for (int64_t j = 0; j < cols; ++j) {
        const uint32_t lo = BFloat16::fromFloat(first[j * colStride]);
        const uint32_t hi = hasSecond ? BFloat16::fromFloat(first[rowStride + j * colStride]) : 0u;
        step[j] = lo | (hi << 16);
      }
      std::fill(step + cols, step + nr, 0u);
    }
  }
}

/// Packs a block of B for `kernel` (floats, or bf16 pairs).
void packBBlock(const GemmKernel &kernel, int64_t kc, int64_t nc, const float *b, int64_t rowStride,
                int64_t colStride, float *dst, int64_t panelStride) {
  if (kernel.kPack == 1) return packBPanels(kernel.nr, kc, nc, b, rowStride, colStride, dst, panelStride);
  packBPairPanels(kernel.nr, kc, nc, b, rowStride, colStride, reinterpret_cast<uint32_t *>(dst), panelStride);
}

/// One GEMM operand: raw row-major memory (packed block by block into the task's buffer), a
/// whole pre-packed operand (panels of the full K, panelStride floats apart), or (A only) rows
/// read in place through IndirectA, from row `firstRow` on.
struct Operand {
  const float *raw = nullptr;
  int64_t ld = 0;
  const float *packed = nullptr;
  int64_t panelStride = 0;
  const IndirectA *indirect = nullptr;
  int64_t firstRow = 0;
};

/// Depth of the K block starting at pc: blocks of at most kcMax, as even as the segment allows,
/// whole multiples of kPack (but at the end of K), never crossing a multiple of `segment` (0: K is
/// one segment; otherwise itself a multiple of kPack).
int64_t blockDepth(int64_t pc, int64_t k, int64_t kcMax, int64_t segment, int64_t kPack) {
  if (segment <= 0 || segment > k) segment = k;
  const int64_t segmentStart = pc / segment * segment;
  const int64_t segmentLength = std::min(segment, k - segmentStart);
  const int64_t piece = roundUp(ceilDiv(segmentLength, ceilDiv(segmentLength, kcMax)), kPack);
  return std::min(piece, segmentStart + segmentLength - pc);
}

/// Activation work left for the driver after the microkernel's clamp.
struct EpiloguePlan {
  bool clamp = false;
  float lo = 0.0f, hi = 0.0f;
  bool applyAfter = false;  // applyActivation on each stored tile.
};

EpiloguePlan planEpilogue(const Activation &activation) {
  EpiloguePlan plan;
  switch (activation.kind) {
    case ActivationKind::None:
      break;
    case ActivationKind::Relu:
      plan = {true, 0.0f, std::numeric_limits<float>::infinity(), false};
      break;
    case ActivationKind::Clip:
      plan = {true, activation.alpha, activation.beta, false};
      break;
    default:
      plan.applyAfter = true;
      break;
  }
  return plan;
}

/// C = epilogue(A*B) for one rectangle of C (shape is the rectangle; the operands, C, bias and
/// residual already point at its top-left corner).
/// `blocking` is the one the task's buffers were carved for (chosen for the grid's whole-tile part,
/// which a last, ragged task may be smaller than).
void runTask(const GemmKernel &kernel, const GemmShape &shape, const Blocking &blocking, const Operand &aOp,
             const Operand &bOp, float *c, int64_t ldc, const GemmEpilogue &epilogue, const EpiloguePlan &plan,
             const TaskBuffers &buffers) {
  const int64_t mr = kernel.mr;
  const int64_t nr = kernel.nr;

  MicrokernelArgs args;
  // All of A's rows to pairs once (a block of rows at a time, through the row pointers).
  const bool allPairs = buffers.aAllPairs != nullptr && aOp.raw != nullptr && aOp.indirect == nullptr &&
                        aOp.packed == nullptr;
  if (allPairs) {
    for (int64_t ic = 0; ic < shape.m; ic += blocking.mc) {
      const int64_t mc = std::min(blocking.mc, shape.m - ic);
      for (int64_t i = 0; i < mc; ++i) buffers.aRows[i] = aOp.raw + (ic + i) * aOp.ld;
      kernel.packPairs(buffers.aRows, mc, shape.k, buffers.aAllPairs + ic * buffers.allPairStride,
                       buffers.allPairStride);
    }
  }
  for (int64_t jc = 0; jc < shape.n; jc += blocking.nc) {
    const int64_t nc = std::min(blocking.nc, shape.n - jc);
    const int64_t segment = aOp.indirect != nullptr ? aOp.indirect->segment : 0;
    for (int64_t pc = 0, kc = 0; pc < shape.k; pc += kc) {
      kc = blockDepth(pc, shape.k, blocking.kc, segment, kernel.kPack);
      const bool lastK = pc + kc == shape.k;
      const bool accumulate = pc != 0 || epilogue.accumulate;
      const float *bBase;
      int64_t bStride;
      // With one block of rows, each B panel is used right after it is packed: pack it then, while
      // it is in L1, rather than the whole block up front (which falls out of L2 when NC is large).
      const bool packBPerPanel = bOp.packed == nullptr && shape.m <= blocking.mc;
      if (bOp.packed != nullptr) {
        bBase = bOp.packed + (jc / nr) * bOp.panelStride + (pc / kernel.kPack) * nr;
        bStride = bOp.panelStride;
      } else {
        bStride = kSteps(kernel, kc) * nr;
        if (!packBPerPanel) packBBlock(kernel, kc, nc, bOp.raw + pc * bOp.ld + jc, bOp.ld, 1, buffers.b, bStride);
        bBase = buffers.b;
      }
      for (int64_t ic = 0; ic < shape.m; ic += blocking.mc) {
        const int64_t mc = std::min(blocking.mc, shape.m - ic);
        const float *aBase;
        int64_t aStride;
        if (aOp.indirect != nullptr) {
          // Row pointers for the block; the last tile's missing rows repeat its last row.
          aOp.indirect->rows(aOp.indirect->context, aOp.firstRow + ic, mc, pc, buffers.aRows);
          for (int64_t i = mc; i < roundUp(mc, mr); ++i) buffers.aRows[i] = buffers.aRows[mc - 1];
          aBase = nullptr;
          aStride = 0;
        } else if (aOp.packed != nullptr) {
          aBase = aOp.packed + (ic / mr) * aOp.panelStride + pc * mr;
          aStride = aOp.panelStride;
        } else {
          for (int64_t i = 0; i < mc; ++i) buffers.aRows[i] = aOp.raw + (ic + i) * aOp.ld + pc;
          for (int64_t i = mc; i < roundUp(mc, mr); ++i) buffers.aRows[i] = buffers.aRows[mc - 1];
          aBase = nullptr;
          aStride = 0;
        }
        if (allPairs) {
          // Converted up front: the block's rows from the K block's first pair (pc is even).
          for (int64_t i = 0; i < mc; ++i) {
            buffers.aPairRows[i] = buffers.aAllPairs + (ic + i) * buffers.allPairStride + pc / kernel.kPack;
          }
          for (int64_t i = mc; i < roundUp(mc, mr); ++i) buffers.aPairRows[i] = buffers.aPairRows[mc - 1];
        } else if (kernel.kPack > 1) {
          // Once per block: every B panel of the block multiplies the same converted rows.
          kernel.packPairs(buffers.aRows, mc, kc, buffers.aPairs, buffers.pairStride);
          for (int64_t i = 0; i < mc; ++i) buffers.aPairRows[i] = buffers.aPairs + i * buffers.pairStride;
          for (int64_t i = mc; i < roundUp(mc, mr); ++i) buffers.aPairRows[i] = buffers.aPairRows[mc - 1];
        }
        for (int64_t jr = 0; jr < nc; jr += nr) {
          const int64_t cols = std::min(nr, nc - jr);
          const int64_t col = jc + jr;
          const float *bPanel = bBase + (jr / nr) * bStride;
          if (packBPerPanel) {
            // Every panel reuses the same buffer, which stays in L1.
            packBBlock(kernel, kc, cols, bOp.raw + pc * bOp.ld + jc + jr, bOp.ld, 1, buffers.b, bStride);
            bPanel = buffers.b;
          }
          const float *colBias =
              lastK && epilogue.bias != nullptr && !epilogue.biasPerRow ? epilogue.bias + col : nullptr;
          for (int64_t ir = 0; ir < mc; ir += mr) {
            const int64_t rows = std::min(mr, mc - ir);
            const int64_t row = ic + ir;
            float *cTile = c + row * ldc + col;
            const float *rowBias =
                lastK && epilogue.bias != nullptr && epilogue.biasPerRow ? epilogue.bias + row : nullptr;
            const float *residual =
                lastK && epilogue.residual != nullptr ? epilogue.residual + row * epilogue.ldr + col : nullptr;
            args.k = kc;
            args.a = aBase != nullptr ? aBase + (ir / mr) * aStride : nullptr;
            args.aRows = aBase == nullptr && kernel.kPack == 1 ? buffers.aRows + ir : nullptr;
            args.aPairs = kernel.kPack > 1 ? buffers.aPairRows + ir : nullptr;
            args.b = bPanel;
            args.nextB = ir + mr >= mc && jr + nr < nc && !packBPerPanel ? bPanel + bStride : nullptr;
            args.c = cTile;
            args.ldc = ldc;
            args.rows = int(rows);
            args.cols = int(cols);
            args.bias = colBias;
            args.rowBias = rowBias;
            args.residual = residual;
            args.ldr = epilogue.ldr;
            args.accumulate = accumulate;
            args.clamp = lastK && plan.clamp;
            args.lo = plan.lo;
            args.hi = plan.hi;
            kernel.microkernel(args);
            if (lastK && plan.applyAfter) {
              for (int64_t i = 0; i < rows; ++i) applyActivation(epilogue.activation, cTile + i * ldc, cols);
            }
          }
        }
      }
    }
  }
}

/// K == 0: the product is zero, so C = epilogue(0) (or of C itself when accumulating).
void epilogueOnly(const GemmShape &shape, float *c, int64_t ldc, const GemmEpilogue &epilogue) {
  for (int64_t i = 0; i < shape.m; ++i) {
    float *cRow = c + i * ldc;
    for (int64_t j = 0; j < shape.n; ++j) {
      float v = epilogue.accumulate ? cRow[j] : 0.0f;
      if (epilogue.bias != nullptr) v += epilogue.biasPerRow ? epilogue.bias[i] : epilogue.bias[j];
      if (epilogue.residual != nullptr) v += epilogue.residual[i * epilogue.ldr + j];
      cRow[j] = v;
    }
    if (epilogue.activation.kind != ActivationKind::None) applyActivation(epilogue.activation, cRow, shape.n);
  }
}

void checkShape(const GemmShape &shape, int64_t ldc, const GemmEpilogue &epilogue) {
  TESSEL_CHECK(shape.m >= 0 && shape.n >= 0 && shape.k >= 0, "negative sgemm shape {}x{}x{}", shape.m, shape.n,
               shape.k);
  TESSEL_CHECK(ldc >= shape.n, "sgemm ldc={} < n={}", ldc, shape.n);
  TESSEL_CHECK(epilogue.residual == nullptr || epilogue.ldr >= shape.n, "sgemm ldr={} < n={}", epilogue.ldr,
               shape.n);
}

/// A buffer per thread for calls without caller scratch: grows to the largest request, then is
/// reused, so steady-state calls do not allocate.
std::byte *threadLocalScratch(size_t bytes) {
  struct Buffer {
    std::byte *data = nullptr;
    size_t size = 0;
    ~Buffer() { std::free(data); }
  };
  thread_local Buffer buffer;
  if (buffer.size < bytes) {
    std::free(buffer.data);
    buffer.size = std::max(bytes, buffer.size * 2);
    buffer.data = static_cast<std::byte *>(std::aligned_alloc(kAlignBytes, buffer.size));
    TESSEL_CHECK(buffer.data != nullptr, "out of memory allocating {} bytes for sgemm", buffer.size);
  }
  return buffer.data;
}

/// Splits C over the pool's threads (as far as scratch allows) and runs each rectangle.
void runGemm(const GemmKernel &kernel, const GemmShape &shape, const Operand &aOp, const Operand &bOp, float *c,
             int64_t ldc, GemmEpilogue epilogue, ThreadPool *pool, std::span<std::byte> scratch) {
  TESSEL_CHECK(canRun(kernel), "sgemm variant {} needs ISA this host lacks", kernel.name);
  TESSEL_CHECK(kernel.kPack == 1 || aOp.packed == nullptr, "sgemm variant {} takes A unpacked", kernel.name);
  if (shape.m == 0 || shape.n == 0) return;
  if (epilogue.residual == c && epilogue.ldr == ldc && !epilogue.accumulate) {
    // The residual is C itself: that is accumulation, and reading it after C's first K block was
    // written would be wrong.
    epilogue.residual = nullptr;
    epilogue.accumulate = true;
  }
  if (shape.k == 0) return epilogueOnly(shape, c, ldc, epilogue);
  // The microkernels load packed panels with aligned vector loads.
  TESSEL_CHECK(reinterpret_cast<uintptr_t>(scratch.data()) % kAlignBytes == 0 &&
                   reinterpret_cast<uintptr_t>(aOp.packed) % kAlignBytes == 0 &&
                   reinterpret_cast<uintptr_t>(bOp.packed) % kAlignBytes == 0,
               "sgemm scratch and packed operands must be {}-byte aligned", kAlignBytes);
  const GemmPacking packing{aOp.packed != nullptr, bOp.packed != nullptr};
  const int threads = pool != nullptr ? pool->size() : 1;

  GemmGrid grid = chooseGrid(kernel, shape, threads, packing);
  size_t taskBytes = taskScratchBytes(kernel, grid.part(shape), packing);
  std::byte *base = scratch.data();
  if (scratch.size() < taskBytes * size_t(grid.tasks())) {
    // Too little caller scratch for this split: take the widest split that fits, else our own.
    base = nullptr;
    for (int t = threads - 1; t >= 1 && base == nullptr; --t) {
      grid = chooseGrid(kernel, shape, t, packing);
      taskBytes = taskScratchBytes(kernel, grid.part(shape), packing);
      if (scratch.size() >= taskBytes * size_t(grid.tasks())) base = scratch.data();
    }
    if (base == nullptr) {
      grid = chooseGrid(kernel, shape, threads, packing);
      taskBytes = taskScratchBytes(kernel, grid.part(shape), packing);
      base = threadLocalScratch(taskBytes * size_t(grid.tasks()));
    }
  }
  const EpiloguePlan plan = planEpilogue(epilogue.activation);
  const Blocking blocking = chooseBlocking(kernel, grid.part(shape));

  auto runOne = [&](int64_t task) {
    const int64_t row0 = (task / grid.taskCols) * grid.rowsPerTask;
    const int64_t col0 = (task % grid.taskCols) * grid.colsPerTask;
    const GemmShape part{std::min(grid.rowsPerTask, shape.m - row0), std::min(grid.colsPerTask, shape.n - col0),
                         shape.k};
    Operand a = aOp, b = bOp;
    if (a.indirect != nullptr) {
      a.firstRow += row0;
    } else if (a.packed != nullptr) {
      a.packed += (row0 / kernel.mr) * a.panelStride;
    } else {
      a.raw += row0 * a.ld;
    }
    if (b.packed != nullptr) {
      b.packed += (col0 / kernel.nr) * b.panelStride;
    } else {
      b.raw += col0;
    }
    GemmEpilogue local = epilogue;
    if (local.bias != nullptr) local.bias += local.biasPerRow ? row0 : col0;
    if (local.residual != nullptr) local.residual += row0 * local.ldr + col0;
    const TaskBuffers buffers = carveTaskBuffers(kernel, grid.part(shape), packing, base + size_t(task) * taskBytes);
    runTask(kernel, part, blocking, a, b, c + row0 * ldc + col0, ldc, local, plan, buffers);
  };
  if (grid.tasks() == 1 || pool == nullptr) {
    for (int64_t task = 0; task < grid.tasks(); ++task) runOne(task);
  } else {
    pool->parallelFor(grid.tasks(), runOne);
  }
}

float *allocateFloats(size_t bytes) {
  auto *p = static_cast<float *>(std::aligned_alloc(kAlignBytes, std::max<size_t>(bytes, kAlignBytes)));
  TESSEL_CHECK(p != nullptr, "out of memory allocating {} bytes for sgemm", bytes);
  return p;
}

}  // namespace

size_t packedASize(const GemmKernel &kernel, int64_t m, int64_t k) {
  return alignedBytes(ceilDiv(m, kernel.mr) * kernel.mr * k);
}

size_t packedBSize(const GemmKernel &kernel, int64_t k, int64_t n) {
  return alignedBytes(ceilDiv(n, kernel.nr) * kernel.nr * kSteps(kernel, k));
}

void packAInto(const GemmKernel &kernel, int64_t m, int64_t k, const float *a, int64_t lda, float *dst,
               bool transposed) {
  TESSEL_CHECK(m >= 0 && k >= 0 && lda >= (transposed ? m : k), "bad packA shape m={} k={} lda={}", m, k, lda);
  TESSEL_CHECK(kernel.kPack == 1, "sgemm variant {} takes A unpacked", kernel.name);
  packAPanels(kernel.mr, m, k, a, transposed ? 1 : lda, transposed ? lda : 1, dst, k * kernel.mr);
}

void packBInto(const GemmKernel &kernel, int64_t k, int64_t n, const float *b, int64_t ldb, float *dst,
               bool transposed) {
  TESSEL_CHECK(k >= 0 && n >= 0 && ldb >= (transposed ? k : n), "bad packB shape k={} n={} ldb={}", k, n, ldb);
  packBBlock(kernel, k, n, b, transposed ? 1 : ldb, transposed ? ldb : 1, dst, kSteps(kernel, k) * kernel.nr);
}

int64_t PackedB::size() const {
  return kernel == nullptr ? 0 : ceilDiv(n, kernel->nr) * kernel->nr * kSteps(*kernel, k);
}

PackedA packA(const GemmKernel &kernel, int64_t m, int64_t k, const float *a, int64_t lda, bool transposed) {
  PackedA packed;
  packed.kernel = &kernel;
  packed.m = m;
  packed.k = k;
  packed.data.reset(allocateFloats(packedASize(kernel, m, k)));
  packAInto(kernel, m, k, a, lda, packed.data.get(), transposed);
  return packed;
}

PackedA packA(int64_t m, int64_t k, const float *a, int64_t lda, bool transposed) {
  return packA(selectedGemmKernel(), m, k, a, lda, transposed);
}

PackedB packB(const GemmKernel &kernel, int64_t k, int64_t n, const float *b, int64_t ldb, bool transposed) {
  PackedB packed;
  packed.kernel = &kernel;
  packed.k = k;
  packed.n = n;
  packed.data.reset(allocateFloats(packedBSize(kernel, k, n)));
  packBInto(kernel, k, n, b, ldb, packed.data.get(), transposed);
  return packed;
}

PackedB packB(int64_t k, int64_t n, const float *b, int64_t ldb, bool transposed) {
  return packB(selectedGemmKernel(), k, n, b, ldb, transposed);
}

size_t sgemmScratchBytes(const GemmKernel &kernel, const GemmShape &shape, int threads, GemmPacking packing) {
  if (shape.m <= 0 || shape.n <= 0 || shape.k <= 0) return 0;
  const GemmGrid grid = chooseGrid(kernel, shape, std::max(threads, 1), packing);
  return taskScratchBytes(kernel, grid.part(shape), packing) * size_t(grid.tasks());
}

size_t sgemmScratchBytes(const GemmShape &shape, int threads, GemmPacking packing) {
  return sgemmScratchBytes(selectedGemmKernel(), shape, threads, packing);
}

void sgemm(const GemmKernel &kernel, const GemmShape &shape, const float *a, int64_t lda, const float *b,
           int64_t ldb, float *c, int64_t ldc, const GemmEpilogue &epilogue, ThreadPool *pool,
           std::span<std::byte> scratch) {
  checkShape(shape, ldc, epilogue);
  TESSEL_CHECK(lda >= shape.k && ldb >= shape.n, "sgemm strides lda={} ldb={} too small for {}x{}x{}", lda, ldb,
               shape.m, shape.n, shape.k);
  runGemm(kernel, shape, Operand{a, lda, nullptr, 0}, Operand{b, ldb, nullptr, 0}, c, ldc, epilogue, pool, scratch);
}

void sgemm(const GemmShape &shape, const float *a, int64_t lda, const float *b, int64_t ldb, float *c, int64_t ldc,
           const GemmEpilogue &epilogue, ThreadPool *pool, std::span<std::byte> scratch) {
  sgemm(selectedGemmKernel(), shape, a, lda, b, ldb, c, ldc, epilogue, pool, scratch);
}

void sgemmPacked(const GemmShape &shape, const float *a, int64_t lda, const PackedBView &b, float *c, int64_t ldc,
                 const GemmEpilogue &epilogue, ThreadPool *pool, std::span<std::byte> scratch) {
  checkShape(shape, ldc, epilogue);
  TESSEL_CHECK(lda >= shape.k, "sgemm lda={} < k={}", lda, shape.k);
  TESSEL_CHECK(b.kernel != nullptr && b.k == shape.k && b.n == shape.n, "packed B is {}x{}, sgemm wants {}x{}", b.k,
               b.n, shape.k, shape.n);
  runGemm(*b.kernel, shape, Operand{a, lda, nullptr, 0}, Operand{nullptr, 0, b.data, kSteps(*b.kernel, shape.k) * b.kernel->nr}, c, ldc,
          epilogue, pool, scratch);
}

void sgemmIndirect(const GemmShape &shape, const IndirectA &a, const PackedBView &b, float *c, int64_t ldc,
                   const GemmEpilogue &epilogue, ThreadPool *pool, std::span<std::byte> scratch) {
  checkShape(shape, ldc, epilogue);
  TESSEL_CHECK(a.rows != nullptr, "sgemm indirect A has no row function");
  TESSEL_CHECK(b.kernel == nullptr || a.segment % b.kernel->kPack == 0,
               "sgemm variant {} needs indirect A segments in whole pairs; got {}", b.kernel->name, a.segment);
  TESSEL_CHECK(b.kernel != nullptr && b.k == shape.k && b.n == shape.n, "packed B is {}x{}, sgemm wants {}x{}", b.k,
               b.n, shape.k, shape.n);
  Operand aOp;
  aOp.indirect = &a;
  runGemm(*b.kernel, shape, aOp, Operand{nullptr, 0, b.data, kSteps(*b.kernel, shape.k) * b.kernel->nr}, c, ldc, epilogue, pool,
          scratch);
}

void sgemmPackedA(const GemmShape &shape, const PackedAView &a, const float *b, int64_t ldb, float *c, int64_t ldc,
                  const GemmEpilogue &epilogue, ThreadPool *pool, std::span<std::byte> scratch) {
  checkShape(shape, ldc, epilogue);
  TESSEL_CHECK(ldb >= shape.n, "sgemm ldb={} < n={}", ldb, shape.n);
  TESSEL_CHECK(a.kernel != nullptr && a.m == shape.m && a.k == shape.k, "packed A is {}x{}, sgemm wants {}x{}", a.m,
               a.k, shape.m, shape.k);
  runGemm(*a.kernel, shape, Operand{nullptr, 0, a.data, shape.k * a.kernel->mr}, Operand{b, ldb, nullptr, 0}, c, ldc,
          epilogue, pool, scratch);
}

}  // namespace tessel::cpu
