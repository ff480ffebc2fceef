// What a reference kernel sees: its node (attributes, opset), its input values and a place for
// its outputs, plus a way to run subgraphs for control flow. Kernels validate what they read and
// return a Diagnostic for bad attributes or inputs; the interpreter adds the node's location.
#pragma once

#include <functional>
#include <vector>

#include "ir/graph.h"
#include "ir/runtime_value.h"
#include "support/diagnostic.h"

namespace tessel {

class KernelContext {
 public:
  using SubgraphRunner =
      std::function<Expected<std::vector<RuntimeValue>>(const Graph &graph, std::vector<RuntimeValue> inputs)>;

  KernelContext(const Node &node, int64_t opset, std::vector<const RuntimeValue *> inputs, SubgraphRunner runner)
      : node_(node), opset_(opset), inputs_(std::move(inputs)), outputs_(node.outputs().size()),
        runSubgraph_(std::move(runner)) {}

  const Node &node() const { return node_; }
  /// The opset version of the node's domain that the model imports.
  int64_t opset() const { return opset_; }

  /// Number of input slots, counting omitted optional ones.
  size_t numInputs() const { return inputs_.size(); }
  /// True when input i exists, is not omitted, and is not an empty optional.
  bool hasInput(size_t i) const { return i < inputs_.size() && inputs_[i] && !inputs_[i]->isNone(); }
  /// Precondition: i < numInputs() and the slot is not omitted.
  const RuntimeValue &input(size_t i) const { return *inputs_[i]; }
  /// Precondition: hasInput(i) and the value is a tensor.
  const Tensor &tensor(size_t i) const {
    TESSEL_CHECK(hasInput(i) && inputs_[i]->isTensor(), "input {} of {} is not a tensor", i, node_.opType());
    return inputs_[i]->tensor();
  }

  size_t numOutputs() const { return outputs_.size(); }
  /// True when output i is consumed (ONNX lets optional outputs be omitted).
  bool wantsOutput(size_t i) const { return i < node_.outputs().size() && node_.outputs()[i] != nullptr; }
  void setOutput(size_t i, RuntimeValue value) {
    if (i < outputs_.size()) outputs_[i] = std::move(value);
  }
  std::vector<RuntimeValue> &outputs() { return outputs_; }

  /// Runs `graph` (a subgraph attribute of this node) with the given inputs; outer-scope values
  /// resolve to the enclosing execution's values.
  Expected<std::vector<RuntimeValue>> runSubgraph(const Graph &graph, std::vector<RuntimeValue> inputs) const {
    return runSubgraph_(graph, std::move(inputs));
  }

 private:
  const Node &node_;
  int64_t opset_;
  std::vector<const RuntimeValue *> inputs_;
  std::vector<RuntimeValue> outputs_;
  SubgraphRunner runSubgraph_;
};

}  // namespace tessel
