// Structural checks of the graph IR, run after import, after parsing, and by the pass manager after
// every pass: a failure here after a pass means the pass broke an invariant the rest of the compiler
// relies on. Checked, in every graph and subgraph:
//   - every node input is defined before the node: by an earlier node, a graph input or an
//     initializer of the same graph, or (outer-scope reads) of an enclosing graph before the node
//     that holds the subgraph;
//   - no value is defined twice (two producers, or a producer and an input/initializer), and no
//     two values of one graph share a name;
//   - use lists match the inputs exactly: each input has its Use, each Use points at a live node
//     that reads the value at that position;
//   - producers, output indices and owning graphs of values agree with the nodes;
//   - graph outputs are defined; subgraphs' parentNode is the node holding them.
#pragma once

#include "ir/graph.h"
#include "support/diagnostic.h"

namespace tessel {

/// Verifies the model's top-level graph and every subgraph. Errors are InvalidModel diagnostics
/// naming the node and op (and the model's sourcePath as file) where one is involved.
Status verifyModel(const Model &model);
/// Verifies a top-level graph; `file` names it in diagnostics.
Status verifyGraph(const Graph &graph, const std::string &file = "");

}  // namespace tessel
