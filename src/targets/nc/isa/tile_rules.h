// The tile rules of accelerator-model.md section 7 that both the tile DSL (which reports them on the
// kernel author's op) and the verifier (which reports them on the assembled instruction) check:
// stated once here, so the two cannot disagree. Each caller words its own message.
#pragma once

#include <cstdint>

#include "targets/nc/isa/instruction.h"
#include "targets/nc/isa/verifier.h"

namespace tessel::nc {

/// T6 (section 4.2): an access of `count` partitions starts at a multiple of the quarter, half or
/// whole array (of `partitions`) that it fits in.
int64_t partitionStartAlignment(int64_t count, int64_t partitions);

/// Section 4.2: an SBUF/PSUM access pattern's free dim has an int16 stride and a uint16 count.
bool accessDimEncodable(int64_t strideElements, int64_t count);

/// Section 3: the dtypes the PE reads.
bool isPeInput(DType dtype);

/// T12: a matmul pairs f32/tf32 operands only with f32/tf32 ones.
bool peInputsPair(DType stationary, DType moving);

/// T3: a matmul's contraction K (partitions), stationary free size M and moving free size N fit the
/// PE array and one PSUM bank of fp32.
bool matmulFits(const IsaLimits &limits, int64_t k, int64_t m, int64_t n);

/// T9: the largest square a transpose takes: the PE array's, or DVE's 32x32 blocks.
int64_t transposeLimit(const IsaLimits &limits, bool onPe);

}  // namespace tessel::nc
