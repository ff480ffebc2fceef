// The per-family implementations behind executeInstruction (execute.h), one function per opcode.
// Each resolves and checks all of its operands before it writes anything, so an instruction that
// fails leaves the machine state unchanged.
#pragma once

#include "support/diagnostic.h"
#include "targets/nc/sim/functional/access.h"

namespace tessel::nc::functional {

/// nc_matmul (matmul.cpp): dst[m][n] (=, or += with acc=1) sum_k stationary[k][m] * moving[k][n].
Status execMatmul(const ExecContext &ctx);
/// nc_transpose (matmul.cpp): dst [F, P] = src [P, F], bit-exact.
Status execTranspose(const ExecContext &ctx);

/// activation (vector_ops.cpp): dst = func(src * scale + bias), optional accum reduction.
Status execActivation(const ExecContext &ctx);
/// tensor_tensor (vector_ops.cpp): dst = in0 op0 in1.
Status execTensorTensor(const ExecContext &ctx);
/// tensor_tensor_scan (vector_ops.cpp): r[i] = (in0[i] op0 r[i-1]) op1 in1[i] along the free elements.
Status execTensorTensorScan(const ExecContext &ctx);
/// tensor_scalar (vector_ops.cpp): dst = (src op0 s0) op1 s1.
Status execTensorScalar(const ExecContext &ctx);
/// tensor_scalar_reduce (vector_ops.cpp): dst = src op0 s0, accum = op1-reduction of the results.
Status execTensorScalarReduce(const ExecContext &ctx);
/// tensor_reduce (vector_ops.cpp): op0 over the innermost free dim.
Status execTensorReduce(const ExecContext &ctx);
/// tensor_copy (vector_ops.cpp): dst = src, converted (bit-exact for equal dtypes).
Status execTensorCopy(const ExecContext &ctx);
/// memset (vector_ops.cpp): dst = imm[0].
Status execMemset(const ExecContext &ctx);
/// bn_stats (vector_ops.cpp): {count, mean, M2} of the even and of the odd elements.
Status execBnStats(const ExecContext &ctx);
/// bn_aggr (vector_ops.cpp): {mean, variance} from bn_stats records.
Status execBnAggr(const ExecContext &ctx);

/// iota (pool_ops.cpp): dst[p][k] = imm[0] + p*imm[1] + k*imm[2].
Status execIota(const ExecContext &ctx);
/// affine_select (pool_ops.cpp): dst = (imm[1]*p + imm[2]*k + imm[3] >= 0) ? src : imm[0].
Status execAffineSelect(const ExecContext &ctx);

/// dma_copy (dma.cpp): element i of dst = element i of src, converted via fp32 if dtypes differ.
Status execDmaCopy(const ExecContext &ctx);

}  // namespace tessel::nc::functional
