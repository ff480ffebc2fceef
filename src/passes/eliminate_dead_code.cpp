// Dead-code elimination: mark the producers of graph outputs live, then the producers of what live
// nodes read (including reads from their subgraphs), and erase the rest from the back, so each
// erased node's outputs have no users left. Then drop the initializers that nothing reads any more:
// no use (uses by nodes inside subgraphs are in the use lists too), not returned by a subgraph, not
// a graph output, not a graph input.
#include "passes/eliminate_dead_code.h"

#include <algorithm>
#include <unordered_set>
#include <vector>

namespace tessel {

namespace {

/// Values of `owner` that `sub` (at any depth) reads or returns.
void collectOuterReads(const Graph &sub, const Graph &owner, std::vector<Value *> &reads) {
  for (const auto &node : sub.nodes()) {
    for (Value *input : node->inputs()) {
      if (input && input->graph() == &owner) reads.push_back(input);
    }
    for (const Graph *nested : node->subgraphs()) collectOuterReads(*nested, owner, reads);
  }
  for (Value *output : sub.outputs()) {
    if (output && output->graph() == &owner) reads.push_back(output);
  }
}

/// Detaches every node of `graph` (at any depth) from the values it reads, so that destroying the
/// graph leaves no Use behind in the enclosing graphs' use lists.
void detachSubgraphReads(const Graph &graph) {
  for (const auto &node : graph.nodes()) {
    for (Graph *nested : node->subgraphs()) detachSubgraphReads(*nested);
    for (size_t i = 0; i < node->inputs().size(); ++i) node->setInput(i, nullptr);
  }
}

std::unordered_set<const Node *> findLiveNodes(const Graph &graph) {
  std::unordered_set<const Node *> live;
  std::vector<Value *> worklist(graph.outputs().begin(), graph.outputs().end());
  while (!worklist.empty()) {
    Value *value = worklist.back();
    worklist.pop_back();
    Node *producer = value ? value->producer() : nullptr;
    if (!producer || producer->graph() != &graph || !live.insert(producer).second) continue;
    for (Value *input : producer->inputs()) {
      if (input) worklist.push_back(input);
    }
    for (const Graph *sub : producer->subgraphs()) collectOuterReads(*sub, graph, worklist);
  }
  return live;
}

}  // namespace

Expected<bool> eliminateDeadCode(Model &model) {
  Graph &graph = *model.graph;
  std::unordered_set<const Node *> live = findLiveNodes(graph);
  std::vector<Node *> dead;
  for (const auto &node : graph.nodes()) {
    if (!live.count(node.get())) dead.push_back(node.get());
  }
  // From the back: a dead node's users are dead too and come after it in topological order.
  for (auto it = dead.rbegin(); it != dead.rend(); ++it) {
    for (Graph *sub : (*it)->subgraphs()) detachSubgraphReads(*sub);
    graph.eraseNode(*it);
  }
  // Initializers: after the nodes, so that those only dead nodes read are unread now. A subgraph
  // output naming an outer value is no entry in its use list, so those are collected here.
  std::vector<Value *> returned;
  for (const auto &node : graph.nodes()) {
    for (const Graph *sub : node->subgraphs()) collectOuterReads(*sub, graph, returned);
  }
  const std::unordered_set<const Value *> keep(returned.begin(), returned.end());
  std::vector<Value *> unread;
  for (Value *init : graph.initializers()) {
    if (!init->uses().empty() || init->isGraphInput() || keep.count(init)) continue;
    if (std::find(graph.outputs().begin(), graph.outputs().end(), init) != graph.outputs().end()) continue;
    unread.push_back(init);
  }
  for (Value *init : unread) graph.removeInitializer(init);
  return !dead.empty() || !unread.empty();
}

}  // namespace tessel
