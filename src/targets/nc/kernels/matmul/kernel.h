// The library kernel "matmul": C[M, N] = A[M, K] @ B[K, N], with an optional bias over N and an activation epilogue, on
// the tensor engine. The left operand comes already transposed, as a_t [K, M], because the stationary operand of
// nc_matmul needs the contraction dim K on partitions (as in NKI's matmul tutorial); b [K, N] is the moving operand as
// stored.
#pragma once

#include <vector>

#include "targets/nc/kernels/kernel_def.h"

namespace tessel::nc::kernels {

/// "matmul": dims M, N, K; dtypes bf16 (default), f8e4m3, f32. Inputs a_t [K, M], b [K, N] and, with option bias=1,
/// bias [N] (f32 for f32 kernels, bf16 otherwise); output c [M, N] in f32 for f32 inputs and bf16 otherwise. Option
/// act=none|relu|gelu|silu applies after the bias. PSUM accumulates in fp32 over the whole K; the epilogue (bias add,
/// activation) runs on the PSUM -> SBUF eviction. Option stripe=0 streams a_t chunks instead of keeping an m-block's
/// stripe resident (for tests). Variants: "blocked" (default: the family's plan and emit, plan.h and emit.h, the code
/// the model compiler's matmuls run, here with every operand in HBM) and the NKI tutorial's four kernels (tutorial.h:
/// tiled, hoisted, mn-blocked, mnk-blocked), which take no bias or activation.
std::vector<KernelDef> matmulKernels();

}  // namespace tessel::nc::kernels
