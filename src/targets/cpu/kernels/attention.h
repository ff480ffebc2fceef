// Fused scaled-dot-product attention for the cpu target (the tessel Attention op, docs/cpu.md):
// Y = softmax(scale * Q Kᵀ + Mask + causal) V, computed flash-style so the Sq x Sk score matrix is
// never materialized. Each task takes one (batch, head, block of query rows) and walks the key
// blocks: scores S^T = K_blk Q_blkᵀ through the selected GEMM microkernel (gemm.def), an online
// softmax (running max and sum), then O += P V_blk through the microkernel again; key blocks a
// causal mask hides entirely are skipped. The task body is compiled per ISA (attention_tile.h).
//
// Threading: tasks are spread over a ThreadPool; each worker owns one slot of scratch (Q, K and V
// panels, the score tile and the accumulator), so a run allocates nothing.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include "support/thread_pool.h"
#include "targets/cpu/kernels/attention_tile.h"
#include "targets/cpu/kernels/gemm.h"

namespace tessel::cpu {

/// Sizes and options of one attention call; Q [B,H,Sq,D], K [B,Hkv,Sk,D], V [B,Hkv,Sk,Dv],
/// Y [B,H,Sq,Dv], all dense row-major. Query head h reads K/V head h / (H / Hkv) (grouped-query
/// attention; Hkv = H is multi-head attention).
struct AttentionShape {
  int64_t batch = 0;
  int64_t heads = 0;
  int64_t queries = 0;     // Sq.
  int64_t keys = 0;        // Sk.
  int64_t depth = 0;       // D.
  int64_t valueDepth = 0;  // Dv.
  float scale = 0.0f;      // Multiplies Q Kᵀ; the caller resolves the op's 0 to 1/sqrt(D).
  bool causal = false;     // Query i sees keys j <= i + Sk - Sq.
  // Element strides of the additive mask along B, H, Sq, Sk (0 where it broadcasts); used only
  // when a mask is passed.
  int64_t maskStrides[4] = {0, 0, 0, 0};
  int64_t kvHeads = 0;  // Hkv, dividing H; 0 reads as H.
};

/// One variant of the task bodies, per ISA: the flash tile (packing, online softmax,
/// normalization) and the rows path that calls with at most kMaxRowsPathQueries queries take.
struct AttentionTileKernel {
  const char *name;  // e.g. "f32_attention_tile__avx512".
  Isa isa;           // Bits the host must have.
  AttentionTileFn run;
  AttentionTileFn rows;
};

/// Calls with at most this many queries (decode steps) score them one at a time against K's rows
/// instead of padding them to a GEMM tile of nr queries.
constexpr int64_t kMaxRowsPathQueries = 4;

/// The task-body variants, best first, including those the host cannot run (tests iterate them).
std::span<const AttentionTileKernel> attentionTileKernels();

/// True when the host (as capped by TESSEL_CPU_ISA) can run `kernel`.
bool canRun(const AttentionTileKernel &kernel);

/// The kernels one attention call runs: a GEMM microkernel row and a task-body variant.
struct AttentionKernels {
  const GemmKernel *gemm = nullptr;
  const AttentionTileKernel *tile = nullptr;
};

/// The best variants the host can run (the selected GEMM row and the first runnable task body).
AttentionKernels selectedAttentionKernels();

/// How a call is split: query rows per task and keys per inner block, from the shape and kernels.
struct AttentionBlocking {
  bool rowsPath = false;   // The tile kernel's `rows` body: one task per head, no packing.
  int64_t queryBlock = 0;  // Queries per task (a multiple of the GEMM kernel's nr, or all on the rows path).
  int64_t keyBlock = 0;    // Keys per inner step (a multiple of mr).
  int64_t queryBlocks = 0;  // ceil(Sq / queryBlock).
};

/// The split for a call whose scratch has `threads` slots (the same value must reach attention()).
AttentionBlocking chooseAttentionBlocking(const AttentionShape &shape, const AttentionKernels &kernels, int threads);

/// Scratch for a call running on up to `threads` threads: one slot per thread (64-byte multiples).
size_t attentionScratchBytes(const AttentionShape &shape, const AttentionKernels &kernels, int threads);

/// Runs attention. `scratch` holds attentionScratchBytes(shape, kernels, slots) bytes (64-byte
/// aligned); the call uses at most `slots` threads of `pool` (null: the calling thread only), and
/// splits its work as chooseAttentionBlocking does for `slots`.
/// `mask` may be null.
void attention(const AttentionShape &shape, const AttentionKernels &kernels, const float *q, const float *k,
               const float *v, const float *mask, float *y, void *scratch, int slots, ThreadPool *pool);

/// "flash_attention <gemm>+<tile>", for reports.
std::string attentionKernelName(const AttentionKernels &kernels);
/// What a call of `shape` runs, for reports: the flash name, or "attention_rows <tile>" on the rows
/// path.
std::string attentionKernelName(const AttentionShape &shape, const AttentionKernels &kernels);

}  // namespace tessel::cpu
