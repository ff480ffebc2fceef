// Folding of shape computations whose answer the inferred types already hold.
#pragma once

#include "ir/graph.h"
#include "support/diagnostic.h"

namespace tessel {

/// Replaces, in the top-level graph, with an i64 initializer of the same name:
///  - Shape(x) when the dims it returns (all, or those in [start, end) from opset 15) are static
///    in x's type, even if x has other, symbolic dims;
///  - Size(x) when x's shape is fully static;
///  - Gather(Shape(x), indices) on axis 0 with constant indices that pick only static dims of x
///    (PyTorch export's `x.size(i)`), even when the Shape itself cannot fold.
/// Together with fold-constants this folds the Shape -> Gather -> Unsqueeze -> Concat -> Reshape
/// chains that PyTorch export emits on static shapes. Nothing fires on an unknown rank or a
/// symbolic dim that is asked for. Shapes and initializers left unused are for
/// eliminate-dead-code to remove.
/// Requires: shapes inferred (infer-shapes). Preserves: the order of the remaining nodes and every
/// value's name. Returns whether any node was folded.
Expected<bool> foldShapes(Model &model);

}  // namespace tessel
