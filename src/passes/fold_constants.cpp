// Constant folding: one forward walk evaluates every node whose inputs are known constants and
// records the results; a backward walk over the folded nodes then erases them, materializing as
// initializers only the results that an unfolded reader, a graph output or a subgraph still needs.
#include "passes/fold_constants.h"

#include <algorithm>
#include <unordered_map>
#include <unordered_set>

#include "passes/constant_values.h"

namespace tessel {

namespace {

using passes::constantValueOf;

bool isFoldable(const Node &node) {
  if (node.opType() == "Constant") return false;  // Already a constant; its readers fold instead.
  if (passes::isNondeterministicOp(node)) return false;
  return node.subgraphs().empty();
}

/// Whether an output's inferred shape is static and over the limit.
bool knownTooLarge(const Node &node, int64_t limit) {
  for (const Value *out : node.outputs()) {
    if (!out || !out->type().isTensor()) continue;
    std::optional<std::vector<int64_t>> sizes = out->type().shape().sizes();
    if (sizes && numElements(*sizes) > limit) return true;
  }
  return false;
}

/// Evaluates `node` on the known constants; the outputs' tensors, or nothing when it cannot fold.
std::optional<std::vector<Tensor>> tryFold(const Model &model, const Node &node,
                                           std::unordered_map<const Value *, RuntimeValue> &known,
                                           const FoldConstantsOptions &options) {
  std::vector<const RuntimeValue *> inputs;
  for (const Value *input : node.inputs()) {
    if (!input) {
      inputs.push_back(nullptr);
      continue;
    }
    auto it = known.find(input);
    if (it == known.end()) {
      std::optional<Tensor> constant = constantValueOf(model, *input);
      if (!constant) return std::nullopt;
      it = known.emplace(input, RuntimeValue(std::move(*constant))).first;
    }
    inputs.push_back(&it->second);
  }
  // The cap keeps folding from growing the model; an output no larger than an input it reads
  // (a Slice, Transpose or Reshape of a weight) cannot, so the cap rises to that input's size.
  int64_t limit = options.maxOutputElements;
  for (const RuntimeValue *input : inputs) {
    if (input && input->isTensor()) limit = std::max(limit, input->tensor().numel());
  }
  if (knownTooLarge(node, limit)) return std::nullopt;
  auto evaluated = passes::evaluateNode(model, node, inputs);
  if (!evaluated.ok()) return std::nullopt;  // Bad constants: the error is reported when the model runs.
  std::vector<Tensor> results(node.outputs().size());
  for (size_t i = 0; i < node.outputs().size(); ++i) {
    const Value *out = node.outputs()[i];
    if (!out) continue;
    if (i >= evaluated->size() || !(*evaluated)[i].isTensor()) return std::nullopt;
    Tensor &tensor = (*evaluated)[i].tensor();
    if (tensor.numel() > limit) return std::nullopt;
    const Type &declared = out->type();
    if (declared.kind() != Type::Kind::Unknown && !declared.isTensor()) return std::nullopt;
    if (declared.isTensor() && declared.dtype() != DType::Undefined && declared.dtype() != tensor.dtype()) {
      return std::nullopt;
    }
    results[i] = std::move(tensor);
  }
  return results;
}

}  // namespace

Expected<bool> foldConstants(Model &model) { return foldConstants(model, FoldConstantsOptions{}); }

Expected<bool> foldConstants(Model &model, const FoldConstantsOptions &options) {
  Graph &graph = *model.graph;
  std::unordered_map<const Value *, RuntimeValue> known;
  std::vector<Node *> folded;
  for (const auto &node : graph.nodes()) {
    if (!isFoldable(*node)) continue;
    std::optional<std::vector<Tensor>> results = tryFold(model, *node, known, options);
    if (!results) continue;
    for (size_t i = 0; i < results->size(); ++i) {
      if (const Value *out = node->output(i)) known[out] = RuntimeValue(std::move((*results)[i]));
    }
    folded.push_back(node.get());
  }
  if (folded.empty()) return false;
  const std::unordered_set<const Value *> returned = passes::valuesReturnedBySubgraphs(graph);
  // From the back: a folded node's folded readers come after it and are gone by the time it is
  // reached, so the uses left are those that need the value materialized.
  bool changed = false;
  for (auto it = folded.rbegin(); it != folded.rend(); ++it) {
    Node *node = *it;
    std::vector<std::optional<Tensor>> constants(node->outputs().size());
    for (size_t i = 0; i < node->outputs().size(); ++i) {
      const Value *out = node->output(i);
      if (!out) continue;
      if (out->uses().empty() && !passes::isGraphOutput(graph, out) && !returned.count(out)) continue;
      constants[i] = known.at(out).tensor();
    }
    if (!passes::replaceWithInitializers(graph, node, std::move(constants))) {
      // Cannot happen with unique names; the node stays, and so must the folded nodes it reads,
      // which is safe because they are earlier and only erased after it in this walk.
      continue;
    }
    changed = true;
  }
  return changed;
}

}  // namespace tessel
