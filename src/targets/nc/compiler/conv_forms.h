// Which form the accelerator gives a convolution and which operands it rounds, stated once for the
// lowering (emit_conv.cpp) and the same-cast reference (cast_reference.cpp), which must round what
// it rounds.
#pragma once

#include "ir/graph.h"
#include "targets/nc/compiler/lowering.h"

namespace tessel::nc::compiler {

/// Whether depthwise convolution `node` (group == C == M) runs on the PE, each tap a matmul whose
/// stationary is diag(W[:, tap]), its operands in the matmul dtype, rather than on ACT and DVE/POOL
/// in f32: whenever the casts put convolutions in a PE dtype. Per 128 channels and tap the PE takes
/// max(64, N) cycles at 2.8 GHz for N output positions, the stencil an ACT product and a POOL add of
/// N each (N and 150 + N cycles at 1.4 GHz), and the diagonal costs 128 cycles once per tap, shared
/// by ACT, DVE and POOL; so the PE wins at every image size MobileNetV2 has (7x7 to 112x112).
bool depthwiseOnPe(const Node &node, const LoweringOptions &options);

/// Whether convolution `node` runs its matmuls in the matmul dtype (dense, or depthwise on the PE)
/// under the casts: then X, W and the residual Z of a FusedConv are rounded to it, so that a
/// convolution whose readers are all such convolutions stores its output in that dtype once.
bool convRoundsOperands(const Node &node, const LoweringOptions &options);

}  // namespace tessel::nc::compiler
