// The flash-attention driver (see attention.h): blocking, the scratch layout of one worker's
// slot, and the spread of (batch, head, query block) tasks over the pool. The task body is
// attention_tile_impl.h, compiled per ISA.
#include "targets/cpu/kernels/attention.h"

#include <algorithm>
#include <atomic>

#include <fmt/format.h>

#include "support/diagnostic.h"

namespace tessel::cpu {
namespace {

// Queries per task: at most this many, so the S^T tile (keys x queries) and the accumulator stay
// in L2. Fewer when the heads alone give too few tasks for the threads: every task packs the K and
// V blocks it reads, so fewer, larger tasks pack less.
constexpr int64_t kMaxQueryBlock = 256;
constexpr int64_t kTasksPerThread = 2;  // Enough for dynamic claiming to even out the tail.
constexpr int64_t kKeyBlockTarget = 128;   // Keys per step: the score tile (128 x 64 floats) fits L1.
constexpr size_t kAlignBytes = 64;
constexpr int64_t kMaxTileWidth = 64;      // The task body's bound on mr and nr.

constexpr AttentionTileKernel kTileKernels[] = {
    {"f32_attention_tile__avx512", Isa::Avx512 | Isa::Fma, &f32_attention_tile__avx512, &f32_attention_rows__avx512},
    {"f32_attention_tile__avx2", Isa::Avx2 | Isa::Fma, &f32_attention_tile__avx2, &f32_attention_rows__avx2},
    {"f32_attention_tile__generic", Isa::None, &f32_attention_tile__generic, &f32_attention_rows__generic},
};

int64_t ceilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }
int64_t roundUp(int64_t a, int64_t b) { return ceilDiv(a, b) * b; }
size_t floatBytes(int64_t count) { return size_t(roundUp(count * int64_t(sizeof(float)), kAlignBytes)); }

/// Where each buffer of one worker's slot starts, in bytes from the slot's base.
struct SlotLayout {
  size_t q = 0, k = 0, v = 0, scores = 0, p = 0, out = 0, rowMax = 0, rowSum = 0, work = 0, zeros = 0, total = 0;
  int64_t ldScores = 0;  // Padded query block.
  int64_t ldOut = 0;     // Padded Dv.
};

SlotLayout layoutSlot(const AttentionShape &shape, const AttentionKernels &kernels, const AttentionBlocking &blocking) {
  SlotLayout layout;
  if (blocking.rowsPath) {  // The scores of one query row.
    layout.total = floatBytes(std::max<int64_t>(shape.keys, 1));
    return layout;
  }
  const int64_t mr = kernels.gemm->mr, nr = kernels.gemm->nr;
  const int64_t queriesPad = roundUp(blocking.queryBlock, nr);  // Columns of S^T.
  const int64_t outRows = roundUp(blocking.queryBlock, mr);     // Rows of O.
  const int64_t keysPad = roundUp(blocking.keyBlock, mr);
  const int64_t valuePad = roundUp(std::max<int64_t>(shape.valueDepth, 1), nr);
  layout.ldScores = queriesPad;
  layout.ldOut = valuePad;
  size_t offset = 0;
  auto take = [&](size_t &field, int64_t floats) {
    field = offset;
    offset += floatBytes(floats);
  };
  take(layout.q, queriesPad * shape.depth);
  take(layout.k, keysPad * shape.depth);
  take(layout.v, valuePad * blocking.keyBlock);
  take(layout.scores, keysPad * queriesPad);
  take(layout.p, outRows * blocking.keyBlock);
  take(layout.out, outRows * valuePad);
  take(layout.rowMax, queriesPad);
  take(layout.rowSum, queriesPad);
  take(layout.work, 2 * queriesPad);
  take(layout.zeros, shape.depth);
  layout.total = offset;
  return layout;
}

/// The task body's arguments for worker slot `index`, with everything fixed per call filled in.
AttentionTileArgs slotArgs(void *scratch, const SlotLayout &layout, int index, const AttentionShape &shape,
                           const AttentionKernels &kernels, const AttentionBlocking &blocking) {
  auto *base = static_cast<std::byte *>(scratch) + size_t(index) * layout.total;
  auto at = [&](size_t offset) { return reinterpret_cast<float *>(base + offset); };
  AttentionTileArgs args;
  args.microkernel = kernels.gemm->microkernel;
  args.mr = kernels.gemm->mr;
  args.nr = kernels.gemm->nr;
  args.depth = shape.depth;
  args.valueDepth = shape.valueDepth;
  args.keyBlock = blocking.keyBlock;
  args.scale = shape.scale;
  args.causal = shape.causal;
  args.qPacked = at(layout.q);
  args.kPacked = at(layout.k);
  args.vPacked = at(layout.v);
  args.scores = at(layout.scores);
  args.ldScores = layout.ldScores;
  args.pPacked = at(layout.p);
  args.out = at(layout.out);
  args.ldOut = layout.ldOut;
  args.rowMax = at(layout.rowMax);
  args.rowSum = at(layout.rowSum);
  args.work = at(layout.work);
  args.zeros = at(layout.zeros);
  return args;
}

/// Points `args` at one task: queries [i0, i0 + rows) of head (b, h).
void setTask(AttentionTileArgs &args, const AttentionShape &shape, const AttentionBlocking &blocking, int64_t b,
             int64_t h, int64_t i0, const float *q, const float *k, const float *v, const float *mask, float *y) {
  const int64_t head = b * shape.heads + h;
  const int64_t kvHeads = shape.kvHeads > 0 ? shape.kvHeads : shape.heads;
  const int64_t kvHead = b * kvHeads + h / (shape.heads / kvHeads);
  args.rows = std::min(blocking.queryBlock, shape.queries - i0);
  args.q = q + (head * shape.queries + i0) * shape.depth;
  args.k = k + kvHead * shape.keys * shape.depth;
  args.v = v + kvHead * shape.keys * shape.valueDepth;
  args.y = y + (head * shape.queries + i0) * shape.valueDepth;
  // Query i0 + i sees keys j <= i0 + i + diagonal; keys past the last query's limit are hidden
  // from all, so the task stops there.
  const int64_t diagonal = shape.keys - shape.queries;
  args.causalShift = i0 + diagonal;
  args.keyEnd = shape.causal ? std::clamp<int64_t>(i0 + args.rows + diagonal, 0, shape.keys) : shape.keys;
  args.mask = nullptr;
  if (mask != nullptr) {
    args.mask = mask + b * shape.maskStrides[0] + h * shape.maskStrides[1] + i0 * shape.maskStrides[2];
    args.maskQueryStride = shape.maskStrides[2];
    args.maskKeyStride = shape.maskStrides[3];
  }
}

}  // namespace

std::span<const AttentionTileKernel> attentionTileKernels() { return kTileKernels; }

bool canRun(const AttentionTileKernel &kernel) { return hasAll(hostIsa(), kernel.isa); }

AttentionKernels selectedAttentionKernels() {
  AttentionKernels kernels;
  kernels.gemm = &selectedGemmKernel();
  for (const AttentionTileKernel &tile : kTileKernels) {
    if (canRun(tile)) {
      kernels.tile = &tile;
      break;
    }
  }
  return kernels;
}

AttentionBlocking chooseAttentionBlocking(const AttentionShape &shape, const AttentionKernels &kernels, int threads) {
  const int64_t mr = kernels.gemm->mr, nr = kernels.gemm->nr;
  AttentionBlocking blocking;
  if (shape.queries <= kMaxRowsPathQueries) {
    blocking.rowsPath = true;
    blocking.queryBlock = std::max<int64_t>(shape.queries, 1);
    blocking.queryBlocks = 1;
    blocking.keyBlock = shape.keys;
    return blocking;
  }
  // Equal blocks (rounded to whole tiles) waste less padding than target-sized blocks plus a stub.
  // Queries are columns of S^T (whole nr panels); keys are its rows (whole mr panels).
  const int64_t queries = std::max<int64_t>(shape.queries, 1);
  const int64_t heads = std::max<int64_t>(shape.batch * shape.heads, 1);
  const int64_t forThreads = ceilDiv(int64_t(std::max(threads, 1)) * kTasksPerThread, heads);
  const int64_t queryBlocks =
      std::clamp<int64_t>(forThreads, ceilDiv(queries, kMaxQueryBlock), std::max<int64_t>(ceilDiv(queries, nr), 1));
  blocking.queryBlock = roundUp(ceilDiv(queries, queryBlocks), nr);
  blocking.queryBlocks = ceilDiv(shape.queries, blocking.queryBlock);
  const int64_t keys = std::max<int64_t>(shape.keys, 1);
  const int64_t keyBlocks = ceilDiv(keys, kKeyBlockTarget);
  blocking.keyBlock = roundUp(ceilDiv(keys, keyBlocks), mr);
  return blocking;
}

size_t attentionScratchBytes(const AttentionShape &shape, const AttentionKernels &kernels, int threads) {
  const int slots = std::max(threads, 1);
  return layoutSlot(shape, kernels, chooseAttentionBlocking(shape, kernels, slots)).total * size_t(slots);
}

void attention(const AttentionShape &shape, const AttentionKernels &kernels, const float *q, const float *k,
               const float *v, const float *mask, float *y, void *scratch, int slots, ThreadPool *pool) {
  if (shape.batch == 0 || shape.heads == 0 || shape.queries == 0 || shape.valueDepth == 0) return;
  if (shape.keys == 0) {
    // An empty weighted sum (the reference's convention for attending over no keys at all).
    std::fill(y, y + shape.batch * shape.heads * shape.queries * shape.valueDepth, 0.0f);
    return;
  }
  const AttentionBlocking blocking = chooseAttentionBlocking(shape, kernels, std::max(slots, 1));
  const SlotLayout layout = layoutSlot(shape, kernels, blocking);
  TESSEL_CHECK(kernels.gemm->operands == GemmOperands::F32, "attention: GEMM variant {} does not multiply floats",
               kernels.gemm->name);
  TESSEL_CHECK(kernels.gemm->mr <= kMaxTileWidth && kernels.gemm->nr <= kMaxTileWidth,
               "attention: GEMM tile {}x{} is wider than the task body handles", kernels.gemm->mr, kernels.gemm->nr);
  const int64_t tasks = shape.batch * shape.heads * blocking.queryBlocks;
  auto runTask = [&](int64_t task, AttentionTileArgs &args) {
    // Under a causal mask later query blocks see more keys; handing them out first evens the tail.
    const int64_t qb = blocking.queryBlocks - 1 - task % blocking.queryBlocks;
    const int64_t head = task / blocking.queryBlocks;
    setTask(args, shape, blocking, head / shape.heads, head % shape.heads, qb * blocking.queryBlock, q, k, v, mask, y);
    (blocking.rowsPath ? kernels.tile->rows : kernels.tile->run)(args);
  };
  const int64_t workers = std::min<int64_t>({std::max(slots, 1), pool != nullptr ? pool->size() : 1, tasks});
  if (workers <= 1) {
    AttentionTileArgs args = slotArgs(scratch, layout, 0, shape, kernels, blocking);
    for (int64_t task = 0; task < tasks; ++task) runTask(task, args);
    return;
  }
  // One parallel task per slot; each claims work items from a shared counter, so no two running
  // tasks share a slot and uneven items still balance.
  std::atomic<int64_t> next{0};
  pool->parallelFor(workers, [&](int64_t worker) {
    AttentionTileArgs args = slotArgs(scratch, layout, int(worker), shape, kernels, blocking);
    for (int64_t task = next.fetch_add(1); task < tasks; task = next.fetch_add(1)) runTask(task, args);
  });
}

std::string attentionKernelName(const AttentionKernels &kernels) {
  return fmt::format("flash_attention {}+{}", kernels.gemm->name, kernels.tile->name);
}

std::string attentionKernelName(const AttentionShape &shape, const AttentionKernels &kernels) {
  // The rows path needs no GEMM and no scratch beyond one row of scores, so threads do not matter.
  if (chooseAttentionBlocking(shape, kernels, 1).rowsPath) return fmt::format("attention_rows {}", kernels.tile->name);
  return attentionKernelName(kernels);
}

}  // namespace tessel::cpu
