// The contract between the GEMM driver (gemm.cpp) and the per-ISA microkernels (isa/<family>/).
// This header is included by translation units compiled with AVX-512/AVX2 flags, so it holds only
// a plain struct and declarations: an inline function here could be emitted with those flags and
// then picked by the linker for code that runs on any host.
#pragma once

#include <cstdint>

namespace tessel::cpu {

/// The type the products are taken in (gemm.def's dtype column); U8S8 (u8 times s8 summed in
/// int32) is the int8 family's, gemm_s8.def, which no gemm.def row has.
enum class GemmOperands { F32, Bf16, U8S8 };

/// One microkernel call: C[mr x nr] = clamp(Apanel * Bpanel [+ C] + bias + rowBias + residual).
/// Packed A and B always hold the full mr x nr tile (zero-padded); only the top-left rows x cols
/// of C are read and written, so ragged edges need no scratch copy. The epilogue fields are set
/// only on the last K block; earlier blocks only accumulate.
struct MicrokernelArgs {
  int64_t k = 0;              // Depth of this K block; may be 0 only when accumulate is set.
  const float *a = nullptr;   // Packed A: k steps of mr consecutive floats (rows of the tile).
  // Or, when set (indirect A, a is unused): row i of the tile is the k consecutive floats at
  // aRows[i]. All mr entries point at readable rows (ragged edges repeat a valid one).
  const float *const *aRows = nullptr;
  // bf16 variants (a and aRows unused): row i of the tile is ceil(k/2) words at aPairs[i], each
  // two bf16 of consecutive K (the lower half first).
  const uint32_t *const *aPairs = nullptr;
  // Packed B: k steps of nr consecutive floats (columns of the tile); for bf16 variants ceil(k/2)
  // steps of nr words, each word the (k, k+1) pair of one column.
  const float *b = nullptr;
  float *c = nullptr;         // Top-left of the C tile, row-major with row stride ldc.
  int64_t ldc = 0;
  int rows = 0;               // Valid rows of C in the tile, 1..mr.
  int cols = 0;               // Valid columns of C in the tile, 1..nr.
  const float *bias = nullptr;      // cols floats added to every row, or null.
  const float *rowBias = nullptr;   // rows floats, one added to each row, or null.
  const float *residual = nullptr;  // rows x cols floats (row stride ldr) added, or null.
  int64_t ldr = 0;
  bool accumulate = false;  // Add into C (later K blocks, or a C += A*B epilogue).
  bool clamp = false;       // min(max(x, lo), hi) last (ReLU: lo = 0, hi = +inf; Clip).
  float lo = 0.0f;
  float hi = 0.0f;
  const float *nextB = nullptr;  // The B panel of the next call, prefetched during this one, or null.
};

/// Every microkernel has this signature; it allocates nothing, touches no globals and makes no
/// system calls.
using GemmMicrokernel = void (*)(const MicrokernelArgs &args);

/// Converts the A rows of one block for a bf16 variant: rows[i] (i < count) holds k floats;
/// dst + i * dstStride receives ceil(k/2) words, each two bf16 of consecutive K rounded to
/// nearest-even (an odd k's last word has a zero upper half).
using GemmPackPairs = void (*)(const float *const *rows, int64_t count, int64_t k, uint32_t *dst,
                               int64_t dstStride);

#define KERNEL(name, family, isa, dtype, mr, nr) void name(const MicrokernelArgs &args);
#include "targets/cpu/kernels/gemm.def"
#undef KERNEL

void bf16_pack_pairs__avx512_bf16(const float *const *rows, int64_t count, int64_t k, uint32_t *dst,
                                  int64_t dstStride);
void bf16_pack_pairs__avx2_bf16(const float *const *rows, int64_t count, int64_t k, uint32_t *dst,
                                int64_t dstStride);

}  // namespace tessel::cpu
