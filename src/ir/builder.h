// A small builder for constructing graphs in code (tests, passes, frontends): it names values
// uniquely and keeps the opset-neutral node creation in one place.
//
//   GraphBuilder b(graph);
//   Value *x = b.input("x", Type::tensor(DType::Float32, Shape::fromSizes({2, 3})));
//   Value *y = b.op("Relu", {x});
//   b.output(y);
#pragma once

#include <string>
#include <vector>

#include "ir/graph.h"

namespace tessel {

class GraphBuilder {
 public:
  explicit GraphBuilder(Graph &graph) : graph_(graph) {}

  Graph &graph() { return graph_; }
  Value *input(const std::string &name, Type type) { return graph_.addInput(name, std::move(type)); }
  Value *constant(const std::string &name, Tensor tensor) {
    return graph_.addInitializer(graph_.uniqueName(name), std::move(tensor));
  }
  /// Adds a node with `numOutputs` fresh outputs named after the op; returns the node.
  Node *node(const std::string &opType, std::vector<Value *> inputs, size_t numOutputs = 1,
             std::vector<std::pair<std::string, Attribute>> attributes = {}) {
    std::vector<std::string> names;
    // Outputs of one node get distinct hints, since uniqueName only sees values that already exist.
    const std::string hint = lowerName(opType);
    for (size_t i = 0; i < numOutputs; ++i) {
      names.push_back(graph_.uniqueName(numOutputs == 1 ? hint : hint + "_" + std::to_string(i)));
    }
    Node *n = graph_.addNode(opType, std::move(inputs), names, graph_.uniqueName(opType + "_node"));
    for (auto &[key, value] : attributes) n->setAttr(key, std::move(value));
    return n;
  }
  /// Adds a single-output node and returns its output.
  Value *op(const std::string &opType, std::vector<Value *> inputs,
            std::vector<std::pair<std::string, Attribute>> attributes = {}) {
    return node(opType, std::move(inputs), 1, std::move(attributes))->output(0);
  }
  void output(Value *value) { graph_.addOutput(value); }

 private:
  static std::string lowerName(const std::string &opType) {
    std::string out;
    for (char c : opType) out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return out;
  }
  Graph &graph_;
};

}  // namespace tessel
