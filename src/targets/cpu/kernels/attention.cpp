// The flash-attention driver (see attention.h). Per task, with mr x nr the GEMM register tile:
//
//   pack scale * Q_blk into mr-row panels (once per task)
//   for each key block (until the causal diagonal)
//     pack K_blkᵀ into nr-column panels; S = Q_blk K_blkᵀ          (microkernel, k = D)
//     online softmax over S: mask, running max/sum, rescale O        (per-ISA step)
//     pack P into mr-row panels and V_blk into nr-column panels; O += P V_blk  (k = keys)
//   Y_blk = O / running sum
//
// Every tile the microkernel sees is full: the score tile and the accumulator live in scratch,
// padded to whole tiles, and packing pads with zeros.
#include "targets/cpu/kernels/attention.h"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <limits>

#include <fmt/format.h>

namespace tessel::cpu {
namespace {

constexpr int64_t kQueryBlockTarget = 64;  // Rows per task: Q panels and the accumulator stay in L1/L2.
constexpr int64_t kKeyBlockTarget = 128;   // Keys per step: the score tile (64 x 128 floats) fits L1.
constexpr size_t kAlignBytes = 64;

constexpr AttentionSoftmaxKernel kSoftmaxKernels[] = {
    {"f32_attention_softmax__avx512", Isa::Avx512 | Isa::Fma, &f32_attention_softmax__avx512},
    {"f32_attention_softmax__avx2", Isa::Avx2 | Isa::Fma, &f32_attention_softmax__avx2},
    {"f32_attention_softmax__generic", Isa::None, &f32_attention_softmax__generic},
};

int64_t ceilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }
int64_t roundUp(int64_t a, int64_t b) { return ceilDiv(a, b) * b; }
size_t floatBytes(int64_t count) { return size_t(roundUp(count * int64_t(sizeof(float)), kAlignBytes)); }

/// Where each buffer of one worker's slot starts, in bytes from the slot's base.
struct SlotLayout {
  size_t q = 0, k = 0, v = 0, scores = 0, p = 0, out = 0, rowMax = 0, rowSum = 0, total = 0;
  int64_t ldScores = 0;  // Padded key block.
  int64_t ldOut = 0;     // Padded Dv.
};

SlotLayout layoutSlot(const AttentionShape &shape, const AttentionKernels &kernels, const AttentionBlocking &blocking) {
  const int64_t mr = kernels.gemm->mr, nr = kernels.gemm->nr;
  const int64_t rowsPad = roundUp(blocking.queryBlock, mr);
  const int64_t keysPad = roundUp(blocking.keyBlock, nr);
  const int64_t valuePad = roundUp(std::max<int64_t>(shape.valueDepth, 1), nr);
  SlotLayout layout;
  layout.ldScores = keysPad;
  layout.ldOut = valuePad;
  size_t offset = 0;
  auto take = [&](size_t &field, int64_t floats) {
    field = offset;
    offset += floatBytes(floats);
  };
  take(layout.q, rowsPad * shape.depth);
  take(layout.k, keysPad * shape.depth);
  take(layout.v, valuePad * blocking.keyBlock);
  take(layout.scores, rowsPad * keysPad);
  take(layout.p, rowsPad * blocking.keyBlock);
  take(layout.out, rowsPad * valuePad);
  take(layout.rowMax, rowsPad);
  take(layout.rowSum, rowsPad);
  layout.total = offset;
  return layout;
}

/// One worker's buffers, carved from its slot.
struct Slot {
  float *q, *k, *v, *scores, *p, *out, *rowMax, *rowSum;
};

Slot slotAt(void *scratch, const SlotLayout &layout, int index) {
  auto *base = static_cast<std::byte *>(scratch) + size_t(index) * layout.total;
  auto at = [&](size_t offset) { return reinterpret_cast<float *>(base + offset); };
  return {at(layout.q), at(layout.k), at(layout.v), at(layout.scores), at(layout.p), at(layout.out),
          at(layout.rowMax), at(layout.rowSum)};
}

/// Rows [0, rows) of `src` (row stride ld) times `scale`, as mr-row panels of `depth` steps.
void packRowsScaled(const float *src, int64_t ld, int64_t rows, int64_t depth, float scale, int64_t mr, float *dst) {
  for (int64_t ir = 0; ir < rows; ir += mr, dst += depth * mr) {
    for (int64_t i = 0; i < mr; ++i) {
      if (ir + i < rows) {
        const float *row = src + (ir + i) * ld;
        for (int64_t d = 0; d < depth; ++d) dst[d * mr + i] = scale * row[d];
      } else {
        for (int64_t d = 0; d < depth; ++d) dst[d * mr + i] = 0.0f;
      }
    }
  }
}

/// K rows [0, cols) (row stride depth) as the B operand of S = Q Kᵀ: nr-column panels of depth steps.
void packKeysTransposed(const float *keys, int64_t cols, int64_t depth, int64_t nr, float *dst) {
  for (int64_t jr = 0; jr < cols; jr += nr, dst += depth * nr) {
    for (int64_t c = 0; c < nr; ++c) {
      if (jr + c < cols) {
        const float *row = keys + (jr + c) * depth;
        for (int64_t d = 0; d < depth; ++d) dst[d * nr + c] = row[d];
      } else {
        for (int64_t d = 0; d < depth; ++d) dst[d * nr + c] = 0.0f;
      }
    }
  }
}

/// V rows [0, keys) x cols [0, valueDepth) as nr-column panels of `keys` steps.
void packValues(const float *values, int64_t keys, int64_t valueDepth, int64_t nr, float *dst) {
  for (int64_t jn = 0; jn < valueDepth; jn += nr, dst += keys * nr) {
    const int64_t cols = std::min(nr, valueDepth - jn);
    for (int64_t p = 0; p < keys; ++p) {
      float *row = dst + p * nr;
      std::memcpy(row, values + p * valueDepth + jn, size_t(cols) * sizeof(float));
      std::fill(row + cols, row + nr, 0.0f);
    }
  }
}

/// One task: query rows [i0, i0 + rows) of head (b, h).
void attendBlock(const AttentionShape &shape, const AttentionKernels &kernels, const AttentionBlocking &blocking,
                 const SlotLayout &layout, const Slot &slot, int64_t b, int64_t h, int64_t i0, const float *q,
                 const float *k, const float *v, const float *mask, float *y) {
  const GemmKernel &gemm = *kernels.gemm;
  const int64_t mr = gemm.mr, nr = gemm.nr;
  const int64_t depth = shape.depth, valueDepth = shape.valueDepth;
  const int64_t head = b * shape.heads + h;
  const int64_t rows = std::min(blocking.queryBlock, shape.queries - i0);
  const int64_t rowsPad = roundUp(rows, mr);
  const float *kHead = k + head * shape.keys * depth;
  const float *vHead = v + head * shape.keys * valueDepth;

  packRowsScaled(q + (head * shape.queries + i0) * depth, depth, rows, depth, shape.scale, mr, slot.q);
  std::fill(slot.out, slot.out + rowsPad * layout.ldOut, 0.0f);
  std::fill(slot.rowMax, slot.rowMax + rows, -std::numeric_limits<float>::infinity());
  std::fill(slot.rowSum, slot.rowSum + rows, 0.0f);

  // Query i sees keys j <= i + diagonal; keys past the last row's limit are hidden from every row.
  const int64_t diagonal = shape.keys - shape.queries;
  const int64_t keyEnd = shape.causal ? std::clamp<int64_t>(i0 + rows + diagonal, 0, shape.keys) : shape.keys;
  const float *maskRows = nullptr;
  if (mask != nullptr) {
    maskRows = mask + b * shape.maskStrides[0] + h * shape.maskStrides[1] + i0 * shape.maskStrides[2];
  }

  MicrokernelArgs args;
  for (int64_t j0 = 0; j0 < keyEnd; j0 += blocking.keyBlock) {
    const int64_t cols = std::min(blocking.keyBlock, keyEnd - j0);
    const int64_t colsPad = roundUp(cols, nr);

    // S = (scale Q) Kᵀ over the padded tile.
    if (depth == 0) {
      std::fill(slot.scores, slot.scores + rowsPad * layout.ldScores, 0.0f);
    } else {
      packKeysTransposed(kHead + j0 * depth, cols, depth, nr, slot.k);
      args = MicrokernelArgs{};
      args.k = depth;
      args.ldc = layout.ldScores;
      args.rows = gemm.mr;  // Scratch tiles are padded to whole tiles.
      args.cols = gemm.nr;
      for (int64_t jr = 0; jr < colsPad; jr += nr) {
        args.b = slot.k + jr * depth;
        for (int64_t ir = 0; ir < rowsPad; ir += mr) {
          args.a = slot.q + ir * depth;
          args.c = slot.scores + ir * layout.ldScores + jr;
          gemm.microkernel(args);
        }
      }
    }

    AttentionSoftmaxArgs softmax;
    softmax.scores = slot.scores;
    softmax.ldScores = layout.ldScores;
    softmax.rows = rows;
    softmax.cols = cols;
    if (maskRows != nullptr) {
      softmax.mask = maskRows + j0 * shape.maskStrides[3];
      softmax.maskRowStride = shape.maskStrides[2];
      softmax.maskColStride = shape.maskStrides[3];
    }
    if (shape.causal) softmax.causalLast = i0 + diagonal - j0;
    softmax.rowMax = slot.rowMax;
    softmax.rowSum = slot.rowSum;
    softmax.out = slot.out;
    softmax.ldOut = layout.ldOut;
    softmax.outCols = valueDepth;
    kernels.softmax->run(softmax);

    // O += P V over the valid keys (k = cols needs no padding).
    packRowsScaled(slot.scores, layout.ldScores, rows, cols, 1.0f, mr, slot.p);
    packValues(vHead + j0 * valueDepth, cols, valueDepth, nr, slot.v);
    args = MicrokernelArgs{};
    args.k = cols;
    args.ldc = layout.ldOut;
    args.rows = gemm.mr;
    args.cols = gemm.nr;
    args.accumulate = true;
    for (int64_t jn = 0; jn < valueDepth; jn += nr) {
      args.b = slot.v + jn * cols;
      for (int64_t ir = 0; ir < rowsPad; ir += mr) {
        args.a = slot.p + ir * cols;
        args.c = slot.out + ir * layout.ldOut + jn;
        gemm.microkernel(args);
      }
    }
  }

  // A row that saw no key has sum 0: 0 * (1/0) is NaN, as softmax over nothing is.
  float *yRows = y + (head * shape.queries + i0) * valueDepth;
  for (int64_t r = 0; r < rows; ++r) {
    const float inverse = 1.0f / slot.rowSum[r];
    const float *o = slot.out + r * layout.ldOut;
    float *yRow = yRows + r * valueDepth;
    for (int64_t c = 0; c < valueDepth; ++c) yRow[c] = o[c] * inverse;
  }
}

}  // namespace

std::span<const AttentionSoftmaxKernel> attentionSoftmaxKernels() { return kSoftmaxKernels; }

bool canRun(const AttentionSoftmaxKernel &kernel) { return hasAll(hostIsa(), kernel.isa); }

AttentionKernels selectedAttentionKernels() {
  AttentionKernels kernels;
  kernels.gemm = &selectedGemmKernel();
  for (const AttentionSoftmaxKernel &softmax : kSoftmaxKernels) {
    if (canRun(softmax)) {
      kernels.softmax = &softmax;
      break;
    }
  }
  return kernels;
}

AttentionBlocking chooseAttentionBlocking(const AttentionShape &shape, const AttentionKernels &kernels) {
  const int64_t mr = kernels.gemm->mr, nr = kernels.gemm->nr;
  AttentionBlocking blocking;
  // Equal blocks (rounded to whole tiles) waste less padding than target-sized blocks plus a stub.
  const int64_t queries = std::max<int64_t>(shape.queries, 1);
  const int64_t queryBlocks = ceilDiv(queries, kQueryBlockTarget);
  blocking.queryBlock = roundUp(ceilDiv(queries, queryBlocks), mr);
  blocking.queryBlocks = ceilDiv(shape.queries, blocking.queryBlock);
  const int64_t keys = std::max<int64_t>(shape.keys, 1);
  const int64_t keyBlocks = ceilDiv(keys, kKeyBlockTarget);
  blocking.keyBlock = roundUp(ceilDiv(keys, keyBlocks), nr);
  return blocking;
}

size_t attentionSlotBytes(const AttentionShape &shape, const AttentionKernels &kernels) {
  return layoutSlot(shape, kernels, chooseAttentionBlocking(shape, kernels)).total;
}

size_t attentionScratchBytes(const AttentionShape &shape, const AttentionKernels &kernels, int threads) {
  return attentionSlotBytes(shape, kernels) * size_t(std::max(threads, 1));
}

void attention(const AttentionShape &shape, const AttentionKernels &kernels, const float *q, const float *k,
               const float *v, const float *mask, float *y, void *scratch, int slots, ThreadPool *pool) {
  if (shape.batch == 0 || shape.heads == 0 || shape.queries == 0 || shape.valueDepth == 0) return;
  if (shape.keys == 0) {
    // An empty weighted sum (the reference's convention for attending over no keys at all).
    std::fill(y, y + shape.batch * shape.heads * shape.queries * shape.valueDepth, 0.0f);
    return;
  }
  const AttentionBlocking blocking = chooseAttentionBlocking(shape, kernels);
  const SlotLayout layout = layoutSlot(shape, kernels, blocking);
  const int64_t tasks = shape.batch * shape.heads * blocking.queryBlocks;
  auto runTask = [&](int64_t task, const Slot &slot) {
    // Under a causal mask later query blocks see more keys; handing them out first evens the tail.
    const int64_t qb = blocking.queryBlocks - 1 - task % blocking.queryBlocks;
    const int64_t head = task / blocking.queryBlocks;
    attendBlock(shape, kernels, blocking, layout, slot, head / shape.heads, head % shape.heads,
                qb * blocking.queryBlock, q, k, v, mask, y);
  };
  const int64_t workers = std::min<int64_t>({std::max(slots, 1), pool != nullptr ? pool->size() : 1, tasks});
  if (workers <= 1) {
    const Slot slot = slotAt(scratch, layout, 0);
    for (int64_t task = 0; task < tasks; ++task) runTask(task, slot);
    return;
  }
  // One parallel task per slot; each claims work items from a shared counter, so no two running
  // tasks share a slot and uneven items still balance.
  std::atomic<int64_t> next{0};
  pool->parallelFor(workers, [&](int64_t worker) {
    const Slot slot = slotAt(scratch, layout, int(worker));
    for (int64_t task = next.fetch_add(1); task < tasks; task = next.fetch_add(1)) runTask(task, slot);
  });
}

std::string attentionKernelName(const AttentionKernels &kernels) {
  return fmt::format("flash_attention {}+{}", kernels.gemm->name, kernels.softmax->name);
}

}  // namespace tessel::cpu
