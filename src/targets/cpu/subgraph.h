// Subgraphs on the cpu target, before planning: copying a graph's nodes into another graph (nested
// subgraphs included), inlining an If whose condition folded to a constant, and making a standalone
// model of an If branch (or of any run of nodes), whose reads of enclosing scopes become its inputs (constants become its
// initializers), so that the branch is optimized and planned like any model.
#pragma once

#include <vector>

#include "ir/graph.h"
#include "support/diagnostic.h"

namespace tessel::cpu {

/// Replaces every If of the main graph whose condition is a constant with the nodes of the branch
/// it takes (a graph output keeps its name through an Identity). Returns whether any was inlined.
Expected<bool> inlineConstantIfs(Model &model);

/// Values that `graph`'s nodes read, at any depth, from scopes enclosing `graph`.
std::vector<const Value *> outerReads(const Graph &graph);

/// A model whose main graph is a copy of `graph` (a subgraph of `outer`'s main graph: an If
/// branch, a Loop body). Its own inputs come first, typed `ownInputTypes` (one per input). Then
/// every value of `outerReads(graph)` becomes an initializer of the copy when it is a constant
/// (and not a graph input), else an input with its type; `inputsFrom` receives the outer value
/// behind each of those inputs, in order. Opsets and source path are `outer`'s.
Model subgraphModel(const Model &outer, const Graph &graph, const std::vector<Type> &ownInputTypes,
                    std::vector<const Value *> &inputsFrom);

/// A model of `nodes` (some nodes of `outer`'s main graph, in order), with `outputs` (values they
/// produce) as its outputs. The values they read from elsewhere become its inputs, or its
/// initializers when constant; `inputsFrom` receives the outer value behind each input, in order.
/// What the accelerator's host stages are planned from.
Model nodesModel(const Model &outer, const std::vector<const Node *> &nodes, const std::vector<const Value *> &outputs,
                 std::vector<const Value *> &inputsFrom);

}  // namespace tessel::cpu
