// The reference target: runs any imported graph node by node with the registry's reference
// kernels. It defines the numerics every other target is checked against, so it stays simple.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "ir/runtime_value.h"
#include "support/diagnostic.h"

namespace tessel {


class ReferenceInterpreter {
 public:
  explicit ReferenceInterpreter(const Model &model) : model_(model) {}

  /// Runs the model's main graph. Every graph input without an initializer must be fed; fed
  /// tensors are checked against the declared dtype and static dims. Returns the graph outputs in
  /// order.
  Expected<NamedValues> run(const NamedValues &feeds) const;

  /// Runs one node of the model. `values` holds every value the node reads: its inputs and, for a
  /// node with subgraphs, the outer-scope values those read. Returns the node's outputs in order
  /// (none for an omitted optional output). What the cpu target uses for ops it has no kernel for.
  Expected<std::vector<RuntimeValue>> runSingleNode(const Node &node,
                                                    std::vector<std::pair<const Value *, RuntimeValue>> values) const;

 private:
  struct Frame;
  Expected<std::vector<RuntimeValue>> runGraph(const Graph &graph, std::vector<RuntimeValue> inputs,
                                               const Frame *parent) const;
  Status runNode(const Node &node, Frame &frame) const;

  const Model &model_;
};

/// Checks a fed value against the declared type of graph input `input`.
Status checkInputMatches(const Value &input, const RuntimeValue &fed);

}  // namespace tessel
