// The contract between the attention driver (attention.cpp) and its per-ISA task body
// (isa/<family>/attention_tile.cpp): one task attends one block of queries of one head to all the
// keys it may see. Like gemm_microkernel.h, this header is included by translation units compiled
// with AVX-512/AVX2 flags, so it holds only plain structs and declarations.
#pragma once

#include <cstdint>

#include "targets/cpu/kernels/gemm_microkernel.h"

namespace tessel::cpu {

/// One task. With mr x nr the GEMM register tile, per key block of `keyBlock` keys:
///   S^T = K_blk (scale Q)^T         keys down, queries across (microkernel, k = depth)
///   online softmax down each column: mask, causal, running max m and sum l, O *= exp(m - m')
///   O += P V_blk                     (microkernel, k = keys of the block)
/// then Y = O / l. A query that sees no key gets NaN (softmax over nothing), as the reference does.
/// Every tile the microkernel sees is full: scratch buffers are padded to whole tiles.
struct AttentionTileArgs {
  GemmMicrokernel microkernel = nullptr;
  int64_t mr = 0;
  int64_t nr = 0;

  const float *q = nullptr;  // rows x depth: the task's queries.
  const float *k = nullptr;  // keys x depth of the head.
  const float *v = nullptr;  // keys x valueDepth of the head.
  float *y = nullptr;        // rows x valueDepth.
  int64_t rows = 0;          // Queries in the task.
  int64_t depth = 0;
  int64_t valueDepth = 0;
  int64_t keyEnd = 0;        // Keys [0, keyEnd) are read; later ones are hidden from every query.
  int64_t keyBlock = 0;      // Keys per step (a multiple of mr).
  float scale = 1.0f;

  const float *mask = nullptr;  // Additive mask at (query 0, key 0) of the task, or null.
  int64_t maskQueryStride = 0;  // Elements between queries (0 when broadcast).
  int64_t maskKeyStride = 0;    // Elements between keys (0 when broadcast).
  bool causal = false;
  int64_t causalShift = 0;  // Key j is visible to query i when j <= i + causalShift.

  // Scratch, 64-byte aligned, sized by the driver for the task's blocking.
  float *qPacked = nullptr;  // roundUp(rows, nr) x depth.
  float *kPacked = nullptr;  // roundUp(keyBlock, mr) x depth.
  float *vPacked = nullptr;  // roundUp(valueDepth, nr) x keyBlock.
  float *scores = nullptr;   // roundUp(keyBlock, mr) x ldScores.
  int64_t ldScores = 0;      // >= roundUp(rows, nr).
  float *pPacked = nullptr;  // roundUp(rows, mr) x keyBlock.
  float *out = nullptr;      // roundUp(rows, mr) x ldOut.
  int64_t ldOut = 0;         // >= roundUp(valueDepth, nr).
  float *rowMax = nullptr;   // rows.
  float *rowSum = nullptr;   // rows.
  float *work = nullptr;     // 2 * rows.
  float *zeros = nullptr;    // depth (written by the task).
};

using AttentionTileFn = void (*)(const AttentionTileArgs &args);

void f32_attention_tile__avx512(const AttentionTileArgs &args);
void f32_attention_tile__avx2(const AttentionTileArgs &args);
void f32_attention_tile__generic(const AttentionTileArgs &args);

/// The body for tasks of a few queries: dot products with K's rows and sums of V's rows, one query
/// at a time, reading q, k, v, y, rows, depth, valueDepth, keyEnd, scale, the mask and causal
/// fields, and `scores` (keyEnd floats) as scratch.
void f32_attention_rows__avx512(const AttentionTileArgs &args);
void f32_attention_rows__avx2(const AttentionTileArgs &args);
void f32_attention_rows__generic(const AttentionTileArgs &args);

}  // namespace tessel::cpu
