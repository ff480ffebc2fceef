// Fused scaled-dot-product attention for the cpu target (the tessel Attention op, docs/cpu.md):
// Y = softmax(scale * Q Kᵀ + Mask + causal) V, computed flash-style so the Sq x Sk score matrix is
// never materialized. Each task takes one (batch, head, block of query rows) and walks the key
// blocks: scores = Q_blk K_blkᵀ through the selected GEMM microkernel (gemm.def), an online softmax
// (running max and sum, per-ISA, attention_softmax.h), then O += P V_blk through the microkernel
// again. Key blocks a causal mask hides entirely are skipped.
//
// Threading: tasks are spread over a ThreadPool; each worker owns one slot of scratch (Q, K and V
// panels, the score tile and the accumulator), so a run allocates nothing.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include "support/thread_pool.h"
#include "targets/cpu/kernels/attention_softmax.h"
#include "targets/cpu/kernels/gemm.h"

namespace tessel::cpu {

/// Sizes and options of one attention call; Q [B,H,Sq,D], K [B,H,Sk,D], V [B,H,Sk,Dv], Y [B,H,Sq,Dv],
/// all dense row-major.
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
};

/// One online-softmax variant.
struct AttentionSoftmaxKernel {
  const char *name;  // e.g. "f32_attention_softmax__avx512".
  Isa isa;           // Bits the host must have.
  AttentionSoftmaxFn run;
};

/// The softmax variants, best first, including those the host cannot run (tests iterate them).
std::span<const AttentionSoftmaxKernel> attentionSoftmaxKernels();

/// True when the host (as capped by TESSEL_CPU_ISA) can run `kernel`.
bool canRun(const AttentionSoftmaxKernel &kernel);

/// The kernels one attention call runs: a GEMM microkernel row and an online-softmax variant.
struct AttentionKernels {
  const GemmKernel *gemm = nullptr;
  const AttentionSoftmaxKernel *softmax = nullptr;
};

/// The best variants the host can run (the selected GEMM row and the first runnable softmax).
AttentionKernels selectedAttentionKernels();

/// How a call is split: query rows per task and keys per inner block, from the shape and kernels.
struct AttentionBlocking {
  int64_t queryBlock = 0;  // Rows per task (a multiple of the GEMM kernel's mr, or all of Sq).
  int64_t keyBlock = 0;    // Keys per inner step (a multiple of nr).
  int64_t queryBlocks = 0; // ceil(Sq / queryBlock).
};

AttentionBlocking chooseAttentionBlocking(const AttentionShape &shape, const AttentionKernels &kernels);

/// Scratch for one worker (64-byte multiple).
size_t attentionSlotBytes(const AttentionShape &shape, const AttentionKernels &kernels);

/// Scratch for a call running on up to `threads` threads.
size_t attentionScratchBytes(const AttentionShape &shape, const AttentionKernels &kernels, int threads);

/// Runs attention. `scratch` holds attentionScratchBytes(shape, kernels, slots) bytes (64-byte
/// aligned); the call uses at most `slots` threads of `pool` (null: the calling thread only).
/// `mask` may be null.
void attention(const AttentionShape &shape, const AttentionKernels &kernels, const float *q, const float *k,
               const float *v, const float *mask, float *y, void *scratch, int slots, ThreadPool *pool);

/// "flash_attention <gemm>+<softmax>", for reports.
std::string attentionKernelName(const AttentionKernels &kernels);

}  // namespace tessel::cpu
