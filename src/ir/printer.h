// The text form of the graph IR: MLIR-flavoured, deterministic, and complete enough that the
// parser (parser.h) rebuilds the same IR from it, so print -> parse -> print is byte-identical when
// large tensors are printed in full. Every stage of the compiler can be dumped with it, and pass
// tests (tests/passes/*.tsl.txt) are written in it.
//
//   model opset(ai.onnx=13, com.microsoft=1) ir_version=8 producer="pytorch" {
//   func @main(%x: f32[batch,3], %w: f32[4,3] = dense<f32[4,3] ... hash=0x9c0e4f12ab34cd56>) -> (%y: f32[batch,4]) {
//     const %b = dense<f32[4]: 0.5, -1, 0, 2.5e-08>
//     %t = Transpose(%w) {perm = [1, 0]} : f32[3,4]
//     %"onnx::Gemm_3" = Gemm(%x, %t, %b) {alpha = 1.0} name="fc" : f32[batch,4]
//     _, %h, _ = com.microsoft.Fused(%"onnx::Gemm_3", _, %b) : _, f32[batch,4], _
//     %y = If(%c) {
//       then_branch = func @then() -> (%a: f32[batch,4]) {
//         %a = Relu(%h)
//         return %a
//       },
//       else_branch = ...
//     }
//     return %y
//   }
//   }
//
// Values print as %name (quoted when not [A-Za-z0-9_.]+); `_` marks an omitted optional input or
// output; ops outside ai.onnx print qualified by their domain (`"dom":"Op"` when the names are not
// identifiers); `: types` after a node gives its outputs' types. Initializers that are also graph
// inputs print as defaults in the signature, the others as `const` lines. Floats print in the
// shortest form that reads back exactly; NaNs other than the canonical one print as `nan(0xBITS)`.
// Attributes print in the node's order; a node with subgraphs puts one attribute per line and its
// subgraphs inline, indented. Empty lists carry their kind: `ints[]`, `floats[]`, ...
#pragma once

#include <cstdint>
#include <string>

#include "ir/graph.h"

namespace tessel {

struct PrintOptions {
  /// Print tensors of more than maxInlineElements elements as `dense<f32[64,3,7,7] ... hash=H>`
  /// (H: a hash of the contents). The parser rejects elided tensors: turn this off to round-trip.
  bool elideLargeTensors = true;
  int64_t maxInlineElements = 16;
  /// Print `: type, ...` after each node. Graph input and output types always print.
  bool printValueTypes = true;
};

/// The whole model: a header with opsets and metadata, then the top-level graph.
std::string printModel(const Model &model, const PrintOptions &options = {});
/// One graph as a `func`, with subgraphs inline. `indent` spaces precede every line but the first.
std::string printGraph(const Graph &graph, const PrintOptions &options = {}, int indent = 0);
/// A type as it appears in signatures: "f32[1,3,?,batch]", "seq<i64[*]>", "opt<f32[2]>", "?".
/// Dim symbols that are not identifiers print quoted.
std::string printType(const Type &type);
/// A tensor literal: `dense<i64[2]: 1, 2>`, or its elided form when options say so.
std::string printTensor(const Tensor &tensor, const PrintOptions &options = {});

}  // namespace tessel
