// Common-subexpression elimination on the top-level graph.
#pragma once

#include "ir/graph.h"
#include "support/diagnostic.h"

namespace tessel {

/// Merges top-level nodes that compute the same thing: same op, domain, attributes (equal by
/// value) and inputs, where two inputs are the same when they are the same value or initializers
/// (not graph inputs) of at most 64 elements with equal dtype, sizes and bits. The later node's
/// readers are pointed at the earlier node's outputs and the later node is erased; Constant nodes
/// with equal values merge like any other node, so their readers can merge next, in the same run.
/// Not merged: random ops and Dropout, nodes with subgraphs, nodes with no outputs, and a node
/// whose outputs are graph outputs or returned by a subgraph (their names must stay) or that uses
/// an output the earlier node omits. Commutative operands are not reordered.
/// Requires: a verified model. Preserves: the order of the remaining nodes and every remaining
/// value's name. Returns whether any node was merged.
Expected<bool> eliminateCommonSubexpressions(Model &model);

}  // namespace tessel
