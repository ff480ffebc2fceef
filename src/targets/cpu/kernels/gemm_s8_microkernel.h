// The contract between the int8 GEMM driver (gemm_s8.cpp) and its per-ISA microkernels
// (isa/<family>/gemm_s8_microkernel.cpp). Included by translation units compiled with AVX-512
// flags, so it holds only a plain struct and declarations (see gemm_microkernel.h).
#pragma once

#include <cstddef>
#include <cstdint>

namespace tessel::cpu {

/// K values per 32-bit word of packed A and B: vpdpbusd's group of four consecutive K.
constexpr int64_t kS8GemmKPack = 4;

/// How the last K block turns C into bytes instead of storing it (QLinearConv, QLinearMatMul): per
/// column j, y = saturate(round_half_even(float(C + bias[j]) * multiplier[j]) + zeroPoint), bit for
/// bit quantize_impl.h's requantized(), while the sums are still in registers.
struct S8Requantization {
  const int32_t *bias = nullptr;      // One per column of C.
  const float *multiplier = nullptr;  // One per column of C.
  float zeroPoint = 0.0f;
  bool ySigned = false;               // s8 bytes, else u8.
  // When not 0, y holds float32 instead of the bytes: DequantizeLinear of them, (q - zeroPoint)
  // times this scale (the integer difference is exact, then one rounded product).
  float dequantizeScale = 0.0f;
  int64_t elementBytes() const { return dequantizeScale != 0.0f ? 4 : 1; }
};

/// One microkernel call on one mr x nr tile of int32 C:
///   C[i][j] (+)= sum over the block's quads of A'[i] . B'[j]
/// and, on the last K block only, then C[i][j] -= rowTerm[i] * bZero[j] + aZero[i] * colSum[j]
/// (the zero-point expansion; gemm_s8.h). All arithmetic wraps modulo 2^32 (vpdpbusd, not the
/// saturating vpdpbusds), so the result is exact whenever the true value fits in int32. Packed B
/// holds the full tile (zero-padded); only the top-left rows x cols of C are read and written.
struct S8MicrokernelArgs {
  int64_t quads = 0;             // K steps of this block, four K values each; at least 1.
  const uint32_t *a = nullptr;   // Row 0 of the tile: `quads` words, each four u8 of consecutive K.
  int64_t aStride = 0;           // Words from one row of A to the next.
  const int8_t *b = nullptr;     // Packed B: `quads` steps of nr words, each four s8 of one column.
  int32_t *c = nullptr;          // Top-left of the C tile, row-major with row stride ldc.
  int64_t ldc = 0;
  int rows = 0;                  // Valid rows of C in the tile, 1..mr.
  int cols = 0;                  // Valid columns of C in the tile, 1..nr.
  bool accumulate = false;       // Add into C (every K block but the first).
  // The last K block's corrections, or all null: rows values each (rowTerm, aZero), nr each,
  // padded with zeros (bZero, colSum).
  const int32_t *rowTerm = nullptr;
  const int32_t *aZero = nullptr;
  const int32_t *bZero = nullptr;
  const int32_t *colSum = nullptr;
  // Where those corrections are the same for every row (B without zero points, one a' for all
  // rows), the last K block adds these nr values instead (the requantization's bias folded in).
  const int32_t *colOffset = nullptr;
  // Set (y not null) when the last K block requantizes instead of storing C: its bias and
  // multiplier from the tile's first column (a null bias: none, or folded into colOffset), the
  // tile's bytes (or dequantized floats) at y with row stride ldy bytes.
  S8Requantization requantize;
  std::byte *y = nullptr;
  int64_t ldy = 0;
};

/// Every int8 microkernel has this signature; it allocates nothing, touches no globals and makes
/// no system calls.
using S8GemmMicrokernel = void (*)(const S8MicrokernelArgs &args);

/// Packs one row of A: the k bytes at src (u8, or s8 when `isSigned`, which then gets 128 added)
/// to dst as u8, zero from k to the next multiple of 64 (dst holds that many); returns their sum.
using S8GemmPackRow = int32_t (*)(const uint8_t *src, int64_t k, bool isSigned, uint8_t *dst);

#define S8GEMM(name, family, isa, mr, nr) void name(const S8MicrokernelArgs &args);
#include "targets/cpu/kernels/gemm_s8.def"
#undef S8GEMM

int32_t u8s8_pack_row__avx512_vnni(const uint8_t *src, int64_t k, bool isSigned, uint8_t *dst);

}  // namespace tessel::cpu
