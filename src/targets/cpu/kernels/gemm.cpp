// The SGEMM driver: BLIS-style loop nest around the microkernels of gemm.def.
//
//   for jc in N by NC          B block (KC x NC) stays in L3 (packed once per (jc, pc))
//     for pc in K by KC        epilogue only on the last pc; later blocks accumulate into C
//       for ic in M by MC      A block (MC x KC) packed into mr-row panels, stays in L2
//         for jr in NC by nr   one packed B micro-panel (KC x nr) stays in L1
//           for ir in MC by mr microkernel: full tile into C, or a ragged edge via a scratch tile
//
// Packed panels are zero-padded to whole tiles, so the microkernels only ever see full mr x nr
// tiles; for a ragged edge the driver runs the tile into scratch and copies the valid part, doing
// accumulate, bias and ReLU itself. Block sizes derive from the row's mr/nr and the cache budgets
// below. Single-threaded (see gemm.h).
#include "targets/cpu/kernels/gemm.h"

#include <algorithm>
#include <cstring>

#include "support/diagnostic.h"

namespace tessel::cpu {
namespace {

// Cache budgets the block sizes are derived from; conservative for current x86 cores (L1D 32-48
// KiB, L2 1-2 MiB per core, L3 several MiB per core).
constexpr int64_t kL1BytesForBPanel = 32 * 1024;    // One KC x nr micro-panel of B.
constexpr int64_t kL2BytesForABlock = 256 * 1024;   // The MC x KC block of A.
constexpr int64_t kL3BytesForBBlock = 4096 * 1024;  // The KC x NC block of B.
constexpr int64_t kMaxKc = 512;                     // Longer K blocks gain nothing measurable.
constexpr int64_t kAlignBytes = 64;                 // Cache line; also the zmm width.

int64_t ceilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }
int64_t roundUp(int64_t a, int64_t b) { return ceilDiv(a, b) * b; }

/// Block sizes for one variant and shape.
struct Blocking {
  int64_t kc, mc, nc;
};

Blocking chooseBlocking(const GemmKernel &kernel, const GemmShape &shape) {
  const int64_t bytes = sizeof(float);
  Blocking blocking;
  blocking.kc = std::clamp<int64_t>(kL1BytesForBPanel / (kernel.nr * bytes), 1, kMaxKc);
  blocking.kc = std::min(blocking.kc, std::max<int64_t>(shape.k, 1));
  const int64_t mcFit = kL2BytesForABlock / (blocking.kc * bytes) / kernel.mr * kernel.mr;
  blocking.mc = std::min(std::max<int64_t>(mcFit, kernel.mr), roundUp(shape.m, kernel.mr));
  const int64_t ncFit = kL3BytesForBBlock / (blocking.kc * bytes) / kernel.nr * kernel.nr;
  blocking.nc = std::min(std::max<int64_t>(ncFit, kernel.nr), roundUp(shape.n, kernel.nr));
  return blocking;
}

std::unique_ptr<float[], AlignedFree> allocateFloats(int64_t count) {
  const size_t bytes = size_t(roundUp(std::max<int64_t>(count, 1) * int64_t(sizeof(float)), kAlignBytes));
  auto *p = static_cast<float *>(std::aligned_alloc(kAlignBytes, bytes));
  TESSEL_CHECK(p != nullptr, "out of memory allocating {} bytes for sgemm", bytes);
  return std::unique_ptr<float[], AlignedFree>(p);
}

/// Packs rows [0, mc) x cols [0, kc) of A into ceil(mc/mr) panels of kc steps of mr floats.
void packA(const GemmKernel &kernel, int64_t mc, int64_t kc, const float *a, int64_t lda, float *dst) {
  const int64_t mr = kernel.mr;
  for (int64_t ir = 0; ir < mc; ir += mr, dst += kc * mr) {
    const int64_t rows = std::min(mr, mc - ir);
    for (int64_t i = 0; i < rows; ++i) {
      const float *src = a + (ir + i) * lda;
      for (int64_t p = 0; p < kc; ++p) dst[p * mr + i] = src[p];
    }
    for (int64_t i = rows; i < mr; ++i) {
      for (int64_t p = 0; p < kc; ++p) dst[p * mr + i] = 0.0f;
    }
  }
}

/// Packs rows [0, kc) x cols [0, nc) of B into ceil(nc/nr) panels; panel j starts at
/// dst + j * panelStride and holds kc steps of nr floats, zero-padded past column nc.
void packBPanels(const GemmKernel &kernel, int64_t kc, int64_t nc, const float *b, int64_t ldb, float *dst,
                 int64_t panelStride) {
  const int64_t nr = kernel.nr;
  for (int64_t jr = 0; jr < nc; jr += nr, dst += panelStride) {
    const int64_t cols = std::min(nr, nc - jr);
    for (int64_t p = 0; p < kc; ++p) {
      float *row = dst + p * nr;
      std::memcpy(row, b + p * ldb + jr, size_t(cols) * sizeof(float));
      std::fill(row + cols, row + nr, 0.0f);
    }
  }
}

/// Where the microkernels find B: panel j of the current (jc, pc) block is at
/// base + j * panelStride and holds kc steps of nr floats.
struct BBlock {
  const float *base;
  int64_t panelStride;
};

/// C = epilogue(A*B) for the whole shape; `bBlock(jc, pc, kc, nc)` gives each packed B block.
template <typename GetBBlock>
void runBlocked(const GemmKernel &kernel, const GemmShape &shape, const float *a, int64_t lda, float *c,
                int64_t ldc, const GemmEpilogue &epilogue, GetBBlock bBlock) {
  const int64_t mr = kernel.mr;
  const int64_t nr = kernel.nr;
  const Blocking blocking = chooseBlocking(kernel, shape);
  auto aPacked = allocateFloats(blocking.mc * blocking.kc);
  auto scratch = allocateFloats(mr * nr);

  MicrokernelArgs args;
  for (int64_t jc = 0; jc < shape.n; jc += blocking.nc) {
    const int64_t nc = std::min(blocking.nc, shape.n - jc);
    for (int64_t pc = 0; pc < shape.k; pc += blocking.kc) {
      const int64_t kc = std::min(blocking.kc, shape.k - pc);
      const bool firstK = pc == 0;
      const bool lastK = pc + kc == shape.k;
      const bool accumulate = !firstK || epilogue.accumulate;
      const BBlock b = bBlock(jc, pc, kc, nc);
      for (int64_t ic = 0; ic < shape.m; ic += blocking.mc) {
        const int64_t mc = std::min(blocking.mc, shape.m - ic);
        packA(kernel, mc, kc, a + ic * lda + pc, lda, aPacked.get());
        for (int64_t jr = 0; jr < nc; jr += nr) {
          const int64_t cols = std::min(nr, nc - jr);
          const float *bPanel = b.base + (jr / nr) * b.panelStride;
          const float *bias = epilogue.bias != nullptr && lastK ? epilogue.bias + jc + jr : nullptr;
          for (int64_t ir = 0; ir < mc; ir += mr) {
            const int64_t rows = std::min(mr, mc - ir);
            float *cTile = c + (ic + ir) * ldc + jc + jr;
            args.k = kc;
            args.a = aPacked.get() + ir * kc;
            args.b = bPanel;
            if (rows == mr && cols == nr) {
              args.c = cTile;
              args.ldc = ldc;
              args.bias = bias;
              args.accumulate = accumulate;
              args.relu = lastK && epilogue.relu;
              kernel.microkernel(args);
              continue;
            }
            // Ragged edge: the full tile goes to scratch; only the valid part reaches C.
            args.c = scratch.get();
            args.ldc = nr;
            args.bias = nullptr;
            args.accumulate = false;
            args.relu = false;
            kernel.microkernel(args);
            for (int64_t i = 0; i < rows; ++i) {
              float *cRow = cTile + i * ldc;
              const float *sRow = scratch.get() + i * nr;
              for (int64_t j = 0; j < cols; ++j) {
                float v = sRow[j];
                if (accumulate) v += cRow[j];
                if (bias != nullptr) v += bias[j];
                if (lastK && epilogue.relu && !(v > 0.0f)) v = 0.0f;
                cRow[j] = v;
              }
            }
          }
        }
      }
    }
  }
}

/// K == 0: the product is zero, so C = epilogue(0) (or C itself when accumulating).
void epilogueOnly(const GemmShape &shape, float *c, int64_t ldc, const GemmEpilogue &epilogue) {
  for (int64_t i = 0; i < shape.m; ++i) {
    float *cRow = c + i * ldc;
    for (int64_t j = 0; j < shape.n; ++j) {
      float v = epilogue.accumulate ? cRow[j] : 0.0f;
      if (epilogue.bias != nullptr) v += epilogue.bias[j];
      if (epilogue.relu && !(v > 0.0f)) v = 0.0f;
      cRow[j] = v;
    }
  }
}

void checkShape(const GemmShape &shape, int64_t lda, int64_t ldc) {
  TESSEL_CHECK(shape.m >= 0 && shape.n >= 0 && shape.k >= 0, "negative sgemm shape {}x{}x{}", shape.m, shape.n,
               shape.k);
  TESSEL_CHECK(lda >= shape.k && ldc >= shape.n, "sgemm strides lda={} ldc={} too small for {}x{}x{}", lda, ldc,
               shape.m, shape.n, shape.k);
}

}  // namespace

void sgemm(const GemmKernel &kernel, const GemmShape &shape, const float *a, int64_t lda, const float *b,
           int64_t ldb, float *c, int64_t ldc, const GemmEpilogue &epilogue) {
  checkShape(shape, lda, ldc);
  TESSEL_CHECK(ldb >= shape.n, "sgemm ldb={} < n={}", ldb, shape.n);
  TESSEL_CHECK(canRun(kernel), "sgemm variant {} needs ISA this host lacks", kernel.name);
  if (shape.m == 0 || shape.n == 0) return;
  if (shape.k == 0) return epilogueOnly(shape, c, ldc, epilogue);
  const Blocking blocking = chooseBlocking(kernel, shape);
  const int64_t panelStride = blocking.kc * kernel.nr;
  auto bPacked = allocateFloats(ceilDiv(blocking.nc, kernel.nr) * panelStride);
  runBlocked(kernel, shape, a, lda, c, ldc, epilogue, [&](int64_t jc, int64_t pc, int64_t kc, int64_t nc) {
    packBPanels(kernel, kc, nc, b + pc * ldb + jc, ldb, bPacked.get(), panelStride);
    return BBlock{bPacked.get(), panelStride};
  });
}

void sgemm(const GemmShape &shape, const float *a, int64_t lda, const float *b, int64_t ldb, float *c, int64_t ldc,
           const GemmEpilogue &epilogue) {
  sgemm(selectedGemmKernel(), shape, a, lda, b, ldb, c, ldc, epilogue);
}

int64_t PackedB::size() const { return kernel == nullptr ? 0 : ceilDiv(n, kernel->nr) * kernel->nr * k; }

PackedB packB(const GemmKernel &kernel, int64_t k, int64_t n, const float *b, int64_t ldb) {
  TESSEL_CHECK(k >= 0 && n >= 0 && ldb >= n, "bad packB shape k={} n={} ldb={}", k, n, ldb);
  PackedB packed;
  packed.kernel = &kernel;
  packed.k = k;
  packed.n = n;
  packed.data = allocateFloats(packed.size());
  packBPanels(kernel, k, n, b, ldb, packed.data.get(), k * kernel.nr);
  return packed;
}

PackedB packB(int64_t k, int64_t n, const float *b, int64_t ldb) { return packB(selectedGemmKernel(), k, n, b, ldb); }

void sgemmPacked(const GemmShape &shape, const float *a, int64_t lda, const PackedB &b, float *c, int64_t ldc,
                 const GemmEpilogue &epilogue) {
  checkShape(shape, lda, ldc);
  TESSEL_CHECK(b.kernel != nullptr && b.k == shape.k && b.n == shape.n,
               "packed B is {}x{}, sgemm wants {}x{}", b.k, b.n, shape.k, shape.n);
  TESSEL_CHECK(canRun(*b.kernel), "packed B is for {}, which this host cannot run", b.kernel->name);
  if (shape.m == 0 || shape.n == 0) return;
  if (shape.k == 0) return epilogueOnly(shape, c, ldc, epilogue);
  const int64_t nr = b.kernel->nr;
  const int64_t panelStride = shape.k * nr;
  runBlocked(*b.kernel, shape, a, lda, c, ldc, epilogue, [&](int64_t jc, int64_t pc, int64_t, int64_t) {
    return BBlock{b.data.get() + (jc / nr) * panelStride + pc * nr, panelStride};
  });
}

}  // namespace tessel::cpu
