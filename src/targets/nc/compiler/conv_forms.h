// Which form the accelerator gives a depthwise convolution, stated once for the lowering
// (emit_conv.cpp) and the same-cast reference (cast_reference.cpp), which must round what it rounds.
#pragma once

#include "ir/graph.h"
#include "targets/nc/compiler/lowering.h"

namespace tessel::nc::compiler {

/// Whether depthwise convolution `node` (group == C == M) runs on the PE, each tap a matmul whose
/// stationary is diag(W[:, tap]), its operands in the matmul dtype, rather than on ACT and DVE/POOL
/// in f32: when the casts put convolutions in a PE dtype, and the image fills at least one PSUM
/// bank (smaller ones are done on the vector engines before the PE's fixed costs pay).
bool depthwiseOnPe(const Node &node, const LoweringOptions &options);

}  // namespace tessel::nc::compiler
