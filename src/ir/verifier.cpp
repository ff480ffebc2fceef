// Structural verification of graphs (see verifier.h for the list of checks). Nodes are collected
// first so a Use that points at an erased node is reported instead of dereferenced.
#include "ir/verifier.h"

#include <fmt/format.h>

#include <algorithm>
#include <unordered_map>
#include <unordered_set>

namespace tessel {

namespace {

/// Values visible while walking one graph: its own so far, then those of enclosing graphs that
/// were defined before the node holding it.
struct Scope {
  const Graph *graph;
  const Scope *parent;
  std::unordered_set<const Value *> visible;

  bool sees(const Value *value) const {
    for (const Scope *s = this; s; s = s->parent) {
      if (s->visible.count(value)) return true;
    }
    return false;
  }
};

std::string valueLabel(const Value *value) { return "'%" + value->name() + "'"; }

void collectNodes(const Graph &graph, std::unordered_set<const Node *> &nodes) {
  for (const auto &node : graph.nodes()) {
    nodes.insert(node.get());
    for (const Graph *sub : node->subgraphs()) {
      if (sub) collectNodes(*sub, nodes);
    }
  }
}

class Verifier {
 public:
  Verifier(const Graph &top, std::string file) : file_(std::move(file)) { collectNodes(top, liveNodes_); }

  Status verifyGraph(const Graph &graph, const Scope *parent) {
    Scope scope{&graph, parent, {}};
    TESSEL_RETURN_IF_ERROR(checkNames(graph));
    for (const Value *input : graph.inputs()) {
      if (!input) return graphError(graph, "has a null input");
      if (input->graph() != &graph || !input->isGraphInput() || input->producer()) {
        return graphError(graph, fmt::format("input {} is not a graph input owned by the graph", valueLabel(input)));
      }
      TESSEL_RETURN_IF_ERROR(defineValue(graph, scope, input, nullptr));
    }
    for (const Value *init : graph.initializers()) {
      if (!init || init->graph() != &graph || !init->hasInitializer() || init->producer()) {
        return graphError(graph, fmt::format("initializer {} is not a constant owned by the graph",
                                             init ? valueLabel(init) : "null"));
      }
      if (init->isGraphInput()) continue;  // Defined as an input; the initializer is its default.
      TESSEL_RETURN_IF_ERROR(defineValue(graph, scope, init, nullptr));
    }
    for (const auto &node : graph.nodes()) TESSEL_RETURN_IF_ERROR(verifyNode(graph, *node, scope));
    for (size_t i = 0; i < graph.outputs().size(); ++i) {
      const Value *output = graph.outputs()[i];
      if (!output) return graphError(graph, fmt::format("output {} is null", i));
      if (!scope.sees(output)) {
        return graphError(graph, fmt::format("output {} ({}) is not defined in the graph or an enclosing graph", i,
                                             valueLabel(output)));
      }
    }
    return checkUseLists(graph);
  }

 private:
  Diagnostic graphError(const Graph &graph, const std::string &message) const {
    Diagnostic diag = makeError(ErrorCode::InvalidModel, "graph '@{}' {}", graph.name(), message);
    diag.loc.file = file_;
    return diag;
  }

  Diagnostic nodeError(const Node &node, const std::string &message) const {
    Diagnostic diag =
        makeError(ErrorCode::InvalidModel, "{} (in graph '@{}')", message, node.graph() ? node.graph()->name() : "?");
    diag.loc = locationOf(node, file_);
    return diag;
  }

  /// Two values of one graph with the same name cannot be told apart in text or in ONNX.
  Status checkNames(const Graph &graph) {
    std::unordered_map<std::string, const Value *> byName;
    for (const auto &value : graph.values()) {
      if (value->name().empty()) continue;
      bool used = value->isGraphInput() || value->hasInitializer() || value->producer();
      if (!used) continue;  // Orphans left behind by passes are not part of the graph.
      auto [it, inserted] = byName.emplace(value->name(), value.get());
      if (!inserted) return graphError(graph, fmt::format("has two values named {}", valueLabel(value.get())));
    }
    return Status::success();
  }

  /// Records that `value` is defined here (by `producer`, or as an input or initializer).
  Status defineValue(const Graph &graph, Scope &scope, const Value *value, const Node *producer) {
    if (!definedAnywhere_.insert(value).second) {
      std::string message = fmt::format("value {} is defined twice", valueLabel(value));
      return producer ? nodeError(*producer, message) : graphError(graph, message);
    }
    scope.visible.insert(value);
    return Status::success();
  }

  Status verifyNode(const Graph &graph, const Node &node, Scope &scope) {
    if (node.graph() != &graph) return nodeError(node, "is listed in a graph that does not own it");
    for (size_t i = 0; i < node.inputs().size(); ++i) {
      const Value *input = node.input(i);
      if (!input) continue;
      if (!scope.sees(input)) {
        bool later = definedAnywhere_.count(input) == 0 && input->producer() && liveNodes_.count(input->producer());
        return nodeError(node, fmt::format("input {} ({}) is {}", i, valueLabel(input),
                                           later ? "used before the node that defines it (nodes are not in "
                                                   "topological order)"
                                                 : "not defined in this graph or an enclosing graph"));
      }
      size_t matches = std::count(input->uses().begin(), input->uses().end(), Use{const_cast<Node *>(&node), i});
      if (matches != 1) {
        return nodeError(node, fmt::format("input {} ({}) has {} entries for this node in its use list; expected 1", i,
                                           valueLabel(input), matches));
      }
    }
    for (const Graph *sub : node.subgraphs()) {
      if (!sub) return nodeError(node, "has a graph attribute that holds no graph");
      if (sub->parentNode() != &node) {
        return nodeError(node, fmt::format("subgraph '@{}' does not name this node as its parent", sub->name()));
      }
      TESSEL_RETURN_IF_ERROR(verifyGraph(*sub, &scope));
    }
    for (size_t i = 0; i < node.outputs().size(); ++i) {
      const Value *output = node.output(i);
      if (!output) continue;
      if (output->producer() != &node || output->producerOutputIndex() != i) {
        return nodeError(node, fmt::format("output {} ({}) does not name this node and position as its producer", i,
                                           valueLabel(output)));
      }
      if (output->graph() != &graph) {
        return nodeError(node, fmt::format("output {} ({}) is owned by another graph", i, valueLabel(output)));
      }
      if (output->isGraphInput() || output->hasInitializer()) {
        return nodeError(node,
                         fmt::format("output {} ({}) is also a graph input or initializer", i, valueLabel(output)));
      }
      TESSEL_RETURN_IF_ERROR(defineValue(graph, scope, output, &node));
    }
    return Status::success();
  }

  /// Every Use of a value owned by this graph points at a live node that reads the value there.
  Status checkUseLists(const Graph &graph) {
    for (const auto &value : graph.values()) {
      for (const Use &use : value->uses()) {
        if (!liveNodes_.count(use.user)) {
          return graphError(
              graph, fmt::format("value {} has a use by a node that is not in the model", valueLabel(value.get())));
        }
        if (use.user->input(use.inputIndex) != value.get()) {
          return nodeError(*use.user, fmt::format("the use list of {} says this node reads it at input {}, but it "
                                                  "does not",
                                                  valueLabel(value.get()), use.inputIndex));
        }
      }
    }
    return Status::success();
  }

  std::string file_;
  std::unordered_set<const Node *> liveNodes_;
  std::unordered_set<const Value *> definedAnywhere_;
};

}  // namespace

Status verifyGraph(const Graph &graph, const std::string &file) {
  Verifier verifier(graph, file);
  return verifier.verifyGraph(graph, nullptr);
}

Status verifyModel(const Model &model) {
  if (!model.graph)
    return makeFileError(ErrorCode::InvalidModel, model.sourcePath, "the model has no graph");
  return verifyGraph(*model.graph, model.sourcePath);
}

}  // namespace tessel
