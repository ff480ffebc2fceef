// Layout assignment: runs 2-D convolutions, and the pools between them, channels-last (NHWC), where
// the cpu target's kernels are fastest, with Transposes only at the edges of each NHWC region.
#pragma once

#include "ir/graph.h"
#include "support/diagnostic.h"

namespace tessel {

/// Rewrites, in the top-level graph and in topological order:
///  - each Conv and tessel FusedConv of f32 whose X has a known rank-4 type and whose W is a rank-4
///    constant (an initializer or a Constant node's output), when it is a plain (group 1) or a depthwise (group = Cin = Cout, W [C,1,KH,KW])
///    convolution, into tessel FusedConv with channels_last = 1 (a Conv keeps its inputs and
///    attributes and gets no activation);
///  - each ONNX QLinearConv of a rank-4 u8/s8 X with rank-4 constant weights, group 1 or depthwise,
///    into tessel QLinearConv with channels_last = 1, and each per-tensor QuantizeLinear or
///    DequantizeLinear, and each tessel QLinearAdd, reading an output converted here into the same
///    op on channels-last operands (so a quantized network stays channels-last from one QLinearConv
///    to the next, residual additions included);
///  - each MaxPool (only Y read, storage_order 0), AveragePool and GlobalAveragePool of rank-4 f32
///    whose X is the channels-first side of an output converted here, into the tessel op of the same
///    name with channels_last = 1; pools elsewhere stay, as converting them alone adds two Transposes;
///  - each layout-free elementwise op (unary activations, Add/Sub/Mul/Div/Pow/Max/Min/PRelu, Clip,
///    tessel FusedElementwise and Gelu) with a rank-4 f32 output that reads at least one output
///    converted here, whose other operands are one-element values, constants of rank <= 4, or
///    rank-4 values (no more of those than of converted ones): the same op on the channels-last
///    operands (constants permuted, one-element ones kept, the rest transposed), the body of a
///    FusedElementwise retyped;
///  - each Resize of such an output by constant scales or sizes that keep N and C (no region of
///    interest), with the scales or sizes permuted, and each Concat along C of rank-4 f32 values,
///    at least as many of them converted as not, along axis 3.
/// X (and FusedConv's residual Z) is read through a Transpose perm [0,2,3,1]; the new NHWC output is
/// followed by a Transpose perm [0,3,1,2] that produces the original value under its name and type,
/// so consumers and graph outputs do not change. A value transposed the same way twice is
/// transposed once. Then every Transpose of a Transpose whose perms compose to the identity has its
/// readers moved to the first one's input (unless its output is a graph output), and the Transposes
/// left unread are removed. Every new value gets its type here (shape inference may not know the
/// tessel ops). Requires: shapes inferred. Returns whether the graph changed.
Expected<bool> assignLayout(Model &model);

}  // namespace tessel
