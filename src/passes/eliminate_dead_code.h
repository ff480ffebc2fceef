// Dead-code elimination on the top-level graph.
#pragma once

#include "ir/graph.h"
#include "support/diagnostic.h"

namespace tessel {

/// Removes the nodes of the top-level graph whose outputs reach no graph output, directly or
/// through other nodes; a value read from inside a live node's subgraph (an outer-scope read, at
/// any depth) counts as used. Chains of dead nodes go in one run. Nodes inside subgraphs are kept
/// as they are, even when unused there. Then removes the top-level graph's initializers that no
/// node reads (at any depth, counting outer-scope reads and subgraph outputs) and that are not
/// graph outputs; initializers that are also graph inputs stay (a user may feed them), as do graph
/// inputs and the initializers of subgraphs.
/// Requires: a verified model. Preserves: the order of the remaining nodes and initializers and
/// every value's name. Returns whether any node or initializer was removed.
Expected<bool> eliminateDeadCode(Model &model);

}  // namespace tessel
