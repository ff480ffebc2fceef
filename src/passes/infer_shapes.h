// Type and shape inference over a whole model, node by node.
#pragma once

#include "ir/graph.h"
#include "support/diagnostic.h"

namespace tessel {

/// Infers the types and shapes of the top-level graph's node outputs in order, each from its
/// inputs (and constant inputs) through the op's ONNX schema (`inferOnnx`, at the opset the model
/// imports for the node's domain); subgraphs are inferred through their owner's schema. Dims that
/// are already known are kept; a conflict with them is an error naming the node. Nodes ONNX has no
/// schema for, and nodes with an input of unknown type, are left as they are.
/// Requires: a verified model (topological order). Preserves: the graph structure; only types change.
/// Returns whether any type changed.
Expected<bool> inferShapes(Model &model);

}  // namespace tessel
