// The contract between the GEMM driver (gemm.cpp) and the per-ISA microkernels (isa/<family>/).
// This header is included by translation units compiled with AVX-512/AVX2 flags, so it holds only
// a plain struct and declarations: an inline function here could be emitted with those flags and
// then picked by the linker for code that runs on any host.
#pragma once

#include <cstdint>

namespace tessel::cpu {

/// One microkernel call: C[mr x nr] (+)= Apanel * Bpanel over `k` steps, then the epilogue.
/// The tile is always full (mr x nr); the driver routes ragged edges through a scratch tile.
struct MicrokernelArgs {
  int64_t k = 0;              // Depth of this K block; may be 0 only when accumulate is set.
  const float *a = nullptr;   // Packed A: k steps of mr consecutive floats (rows of the tile).
  const float *b = nullptr;   // Packed B: k steps of nr consecutive floats (columns of the tile).
  float *c = nullptr;         // Top-left of the C tile, row-major with row stride ldc.
  int64_t ldc = 0;
  const float *bias = nullptr;  // nr floats added to every row, or null (only on the last K block).
  bool accumulate = false;      // Add into C (later K blocks, or a C += A*B epilogue).
  bool relu = false;            // Clamp at zero after the bias (only on the last K block).
};

/// Every microkernel has this signature; it allocates nothing, touches no globals and makes no
/// system calls.
using GemmMicrokernel = void (*)(const MicrokernelArgs &args);

#define KERNEL(name, family, isa, dtype, mr, nr) void name(const MicrokernelArgs &args);
#include "targets/cpu/kernels/gemm.def"
#undef KERNEL

}  // namespace tessel::cpu
