// Helpers shared by the folding passes: what counts as a constant, evaluating a node with its
// reference kernel, and turning a node's outputs into initializers under the same Values.
#pragma once

#include <optional>
#include <string_view>
#include <unordered_set>
#include <vector>

#include "ir/graph.h"
#include "ir/runtime_value.h"
#include "support/diagnostic.h"

namespace tessel::passes {

/// The value of `value` when it cannot change between runs: an initializer that is not also a
/// graph input (a feed would override it), or the output of an ai.onnx Constant node.
std::optional<Tensor> constantValueOf(const Model &model, const Value &value);

/// The elements of `value` when it is an int64 constant (as constantValueOf sees it), else nullopt;
/// null reads as no constant.
std::optional<std::vector<int64_t>> constantInt64s(const Model &model, const Value *value);

/// True for ops whose result depends on more than their inputs and attributes (random number
/// generators, Dropout): they are never folded or merged.
bool isNondeterministicOp(const Node &node);

/// Runs `node` once with its reference kernel on `inputs` (one per input slot; nullptr for an
/// omitted one). Fails when the op has no reference kernel at the model's opset, or the kernel
/// fails. Precondition: the node has no subgraphs.
Expected<std::vector<RuntimeValue>> evaluateNode(const Model &model, const Node &node,
                                                 const std::vector<const RuntimeValue *> &inputs);

/// Values that subgraphs (at any depth) of `graph`'s nodes return directly from `graph`: those have
/// no Use entry, so passes that replace values must leave them alone or keep the Value object.
std::unordered_set<const Value *> valuesReturnedBySubgraphs(const Graph &graph);

/// Whether `value` is one of `graph`'s outputs.
bool isGraphOutput(const Graph &graph, const Value *value);

/// Erases `node` and makes each output i with a value in `constants[i]` an initializer, keeping
/// the same Value object (so its name, its uses, graph outputs and subgraph returns that name it
/// stay as they were). Outputs without a constant must have no uses. Returns false, changing
/// nothing, when an output cannot keep its name (another value of the graph now holds it).
bool replaceWithInitializers(Graph &graph, Node *node, std::vector<std::optional<Tensor>> constants);

}  // namespace tessel::passes
