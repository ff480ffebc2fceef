// The tile rules of accelerator-model.md section 7 that both the tile DSL (which reports them on the
// kernel author's op) and the verifier (which reports them on the assembled instruction) check:
// stated once here, so the two cannot disagree. Each caller words its own message.
#pragma once

#include <cstdint>

#include "targets/nc/isa/instruction.h"
#include "targets/nc/isa/verifier.h"

namespace tessel::nc {

/// T1: an SBUF/PSUM tile or access of `count` partitions from `start` lies inside the array.
bool partitionsInRange(const IsaLimits &limits, int64_t start, int64_t count);

/// T2: `bytes` bytes per partition from PSUM offset `offsetBytes` lie inside one bank (a matmul
/// output, or a PSUM tile, which the allocator places at a bank start: offset 0).
bool withinOnePsumBank(const IsaLimits &limits, uint64_t offsetBytes, uint64_t bytes);

/// T6 (section 4.2): an access of `count` partitions starts at a multiple of the quarter, half or
/// whole array (of `partitions`) that it fits in.
int64_t partitionStartAlignment(int64_t count, int64_t partitions);

/// Section 4.2: an SBUF/PSUM access pattern's free dim has an int16 stride and a uint16 count.
bool accessDimEncodable(int64_t strideElements, int64_t count);

/// The stride a free dim is encoded with: a dim of count 1 never steps, so its stride is 0 whatever
/// the view said (a view of one row of a wide tile keeps the row stride).
inline int64_t encodedStride(int64_t strideElements, int64_t count) { return count == 1 ? 0 : strideElements; }

/// Section 3: the dtypes the PE reads.
bool isPeInput(DType dtype);

/// T12: a matmul pairs f32/tf32 operands only with f32/tf32 ones.
bool peInputsPair(DType stationary, DType moving);

/// T3: a matmul's contraction K (partitions), stationary free size M and moving free size N fit the
/// PE array and one PSUM bank of fp32.
bool matmulFits(const IsaLimits &limits, int64_t k, int64_t m, int64_t n);

/// T7: the most elements per partition an operand in `space` may have on `engine`: DVE and ACT
/// stream 64K from SBUF, 4K from PSUM; the other engines have no such limit (UINT64_MAX).
uint64_t maxFreeElements(const IsaLimits &limits, Engine engine, MemSpace space);

/// T8: bn_stats takes at most limits.bnStatsMaxFree elements per partition.
bool bnStatsFits(const IsaLimits &limits, uint64_t freeElements);

/// T9: the largest square a transpose takes: the PE array's, or DVE's 32x32 blocks.
int64_t transposeLimit(const IsaLimits &limits, bool onPe);

/// T11: POOL reaches SBUF, and PSUM only on a profile with pool.psumAccess (neither nc-v2 nor nc-v3).
bool poolAccesses(const IsaLimits &limits, MemSpace space);

/// T11: a two-input elementwise op (tensor_tensor, tensor_tensor_scan) reads at most one input from PSUM.
bool inputsNotBothInPsum(MemSpace in0, MemSpace in1);

/// T15: ACT takes `bias` as an immediate only on profiles with immediate bias (nc-v3); elsewhere a
/// nonzero bias must be a [P,1] operand.
bool actTakesImmediateBias(const IsaLimits &limits, float bias);

/// T15: the profile's ACT accumulates with reduce op `op` (nc-v2: add only).
bool actReduceOpSupported(const IsaLimits &limits, AluOp op);

}  // namespace tessel::nc
