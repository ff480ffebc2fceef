// Constant folding on the top-level graph.
#pragma once

#include <cstdint>

#include "ir/graph.h"
#include "support/diagnostic.h"

namespace tessel {

struct FoldConstantsOptions {
  /// Outputs with more elements than this are not folded, so a small constant expression that
  /// builds a huge tensor (ConstantOfShape, Expand, Tile) is not materialized in the model.
  int64_t maxOutputElements = int64_t{1} << 20;
};

/// Evaluates, with its reference kernel, every top-level node whose inputs are all constants
/// (initializers that are not graph inputs, Constant node outputs, or outputs folded before it)
/// and replaces it with initializers. Whole constant chains fold in one run and only the values
/// that something else still reads (a node that is not folded, a graph output, a subgraph) are
/// materialized, each under its own name: graph outputs keep their names. Not folded: random ops
/// and Dropout, nodes with subgraphs, ops without a reference kernel, Constant nodes themselves
/// (left to eliminate-dead-code once unused), nodes whose kernel fails on the constants (the
/// error is left for run time), outputs that are not tensors, and outputs over
/// `maxOutputElements` (checked against the inferred output shape before evaluating when known)
/// and larger than every constant the node reads: a fold that does not grow the model, such as a
/// Slice of a weight, is never capped.
/// Initializers that become unused stay; eliminate-dead-code removes them.
/// Requires: a verified model. Preserves: the order of the remaining nodes and every value's name.
/// Returns whether any node was folded.
Expected<bool> foldConstants(Model &model, const FoldConstantsOptions &options);
Expected<bool> foldConstants(Model &model);

}  // namespace tessel
