// Helpers shared by the folding passes; see constant_values.h.
#include "passes/constant_values.h"

#include <algorithm>

#include "ops/kernel_context.h"
#include "ops/registry.h"

namespace tessel::passes {

namespace {

bool isDefaultDomain(const std::string &domain) { return domain.empty() || domain == "ai.onnx"; }

void collectSubgraphReturns(const Graph &sub, const Graph &owner, std::unordered_set<const Value *> &returned) {
  for (const Value *output : sub.outputs()) {
    if (output && output->graph() == &owner) returned.insert(output);
  }
  for (const auto &node : sub.nodes()) {
    for (const Graph *nested : node->subgraphs()) collectSubgraphReturns(*nested, owner, returned);
  }
}

}  // namespace

std::optional<Tensor> constantValueOf(const Model &model, const Value &value) {
  if (value.hasInitializer()) {
    if (value.isGraphInput()) return std::nullopt;
    return value.initializer();
  }
  const Node *producer = value.producer();
  if (!producer || producer->opType() != "Constant" || !isDefaultDomain(producer->domain())) return std::nullopt;
  if (!producer->subgraphs().empty()) return std::nullopt;
  auto outputs = evaluateNode(model, *producer, {});
  if (!outputs.ok() || outputs->empty() || !(*outputs)[0].isTensor()) return std::nullopt;
  return (*outputs)[0].tensor();
}

std::optional<std::vector<int64_t>> constantInt64s(const Model &model, const Value *value) {
  if (!value) return std::nullopt;
  std::optional<Tensor> t = constantValueOf(model, *value);
  if (!t || t->dtype() != DType::Int64) return std::nullopt;
  return t->toInt64Vector();
}

bool isNondeterministicOp(const Node &node) {
  static const char *const kOps[] = {"RandomNormal",  "RandomNormalLike", "RandomUniform",
                                     "RandomUniformLike", "Bernoulli",    "Multinomial", "Dropout"};
  if (!isDefaultDomain(node.domain())) return false;
  return std::any_of(std::begin(kOps), std::end(kOps), [&](const char *op) { return node.opType() == op; });
}

Expected<std::vector<RuntimeValue>> evaluateNode(const Model &model, const Node &node,
                                                 const std::vector<const RuntimeValue *> &inputs) {
  const int64_t opset = model.opsetFor(node.domain());
  const OpInfo *info = opset < 0 ? nullptr : findOp(node.domain(), node.opType(), opset);
  if (!info || !info->reference) {
    return makeError(ErrorCode::UnsupportedOp, "op {} (opset {}) has no reference kernel", node.opType(), opset);
  }
  auto noSubgraphs = [](const Graph &, std::vector<RuntimeValue>) -> Expected<std::vector<RuntimeValue>> {
    return makeError(ErrorCode::Internal, "constant folding does not run subgraphs");
  };
  KernelContext ctx(node, opset, inputs, noSubgraphs);
  TESSEL_RETURN_IF_ERROR(info->reference(ctx));
  return std::move(ctx.outputs());
}

std::unordered_set<const Value *> valuesReturnedBySubgraphs(const Graph &graph) {
  std::unordered_set<const Value *> returned;
  for (const auto &node : graph.nodes()) {
    for (const Graph *sub : node->subgraphs()) collectSubgraphReturns(*sub, graph, returned);
  }
  return returned;
}

bool isGraphOutput(const Graph &graph, const Value *value) {
  return std::find(graph.outputs().begin(), graph.outputs().end(), value) != graph.outputs().end();
}

bool replaceWithInitializers(Graph &graph, Node *node, std::vector<std::optional<Tensor>> constants) {
  const std::vector<Value *> outputs = node->outputs();
  constants.resize(outputs.size());
  for (size_t i = 0; i < outputs.size(); ++i) {
    Value *out = outputs[i];
    if (!out) continue;
    if (!constants[i]) {
      TESSEL_CHECK(out->uses().empty(), "output '{}' of folded node is still used", out->name());
      continue;
    }
    if (graph.findValue(out->name()) != out) return false;  // addInitializer would make a second value.
  }
  // Detach the readers, erase the node, make the same Values initializers, reattach the readers.
  std::vector<std::vector<Use>> uses(outputs.size());
  for (size_t i = 0; i < outputs.size(); ++i) {
    if (!outputs[i]) continue;
    uses[i] = outputs[i]->uses();
    for (const Use &use : uses[i]) use.user->setInput(use.inputIndex, nullptr);
  }
  graph.eraseNode(node);
  for (size_t i = 0; i < outputs.size(); ++i) {
    if (!outputs[i] || !constants[i]) continue;
    Value *init = graph.addInitializer(outputs[i]->name(), std::move(*constants[i]));
    TESSEL_CHECK(init == outputs[i], "initializer for '{}' is a new value", outputs[i]->name());
    for (const Use &use : uses[i]) use.user->setInput(use.inputIndex, init);
  }
  return true;
}

}  // namespace tessel::passes
