// Elementwise fusion: from the back of the graph, each unclaimed elementwise op roots a group that
// grows backward over producers whose every reader is already in the group; the group's ops are
// then copied into a body graph and replaced by one FusedElementwise.
#include "passes/fuse_elementwise.h"

#include <algorithm>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include "ops/reference/helpers.h"
#include "passes/constant_values.h"
#include "passes/fusion_utils.h"

namespace tessel {

namespace {

bool isFloatType(const Value *value) {
  return value && value->type().isTensor() && isFloatingPoint(value->type().dtype());
}

bool isElementwise(const Node &node) {
  static const std::set<std::string, std::less<>> kOnnx = {
      "Abs",  "Neg",     "Exp",      "Log",      "Sqrt",    "Reciprocal",  "Relu",      "Sigmoid",
      "Tanh", "Erf",     "Floor",    "Ceil",     "Round",   "Sin",         "Cos",       "Sign",
      "Softplus", "Softsign", "Elu", "Selu",    "LeakyRelu", "HardSigmoid", "HardSwish", "Celu",
      "ThresholdedRelu", "Add", "Sub", "Mul",   "Div",     "Pow",         "Max",       "Min",
      "PRelu", "Where",  "Clip",     "Cast"};
  if (node.outputs().size() != 1 || !node.subgraphs().empty() || !isFloatType(node.output(0))) return false;
  if (node.domain() == "tessel") return node.opType() == "Gelu";
  if (!node.domain().empty() && node.domain() != "ai.onnx") return false;
  if (!kOnnx.count(node.opType())) return false;
  if ((node.opType() == "Max" || node.opType() == "Min") && node.inputs().size() != 2) return false;
  if (node.opType() == "Cast") return isFloatType(node.input(0));
  return true;
}

/// Grows the group rooted at `root`: producers join when elementwise, unclaimed, of the root's
/// shape, and read only by the group.
std::vector<Node *> growGroup(const Graph &graph, Node *root, const std::unordered_set<const Node *> &claimed,
                              const std::unordered_set<const Value *> &returned) {
  std::unordered_set<const Node *> members = {root};
  for (bool grew = true; grew;) {
    grew = false;
    std::vector<const Node *> current(members.begin(), members.end());
    for (const Node *member : current) {
      for (Value *input : member->inputs()) {
        Node *producer = input ? input->producer() : nullptr;
        if (!producer || members.count(producer) || claimed.count(producer) || producer->graph() != &graph) continue;
        if (!isElementwise(*producer) || !passes::sameShape(producer->output(0), root->output(0))) continue;
        if (!passes::usedOnlyBy(graph, producer->output(0), members, returned)) continue;
        members.insert(producer);
        grew = true;
      }
    }
  }
  std::vector<Node *> ordered;  // In graph order, which is topological.
  for (const auto &node : graph.nodes()) {
    if (members.count(node.get())) ordered.push_back(node.get());
  }
  return ordered;
}

/// Whether the group's one-element constants may live in the body: FusedElementwise's output has
/// the broadcast shape of its inputs, so the inputs that stay outside must reach the root's shape
/// without them (a [1] constant against a [] input raises the rank).
bool scalarsMayBeInlined(const Model &model, const std::vector<Node *> &group) {
  const std::unordered_set<const Node *> members(group.begin(), group.end());
  std::vector<std::vector<int64_t>> shapes;
  for (const Node *node : group) {
    for (const Value *input : node->inputs()) {
      if (!input || (input->producer() && members.count(input->producer()))) continue;
      std::optional<Tensor> constant = passes::constantValueOf(model, *input);
      if (constant && constant->numel() == 1) continue;
      std::optional<std::vector<int64_t>> sizes = input->type().shape().sizes();
      if (!sizes) return false;
      shapes.push_back(*sizes);
    }
  }
  auto joint = ref::broadcastShapes(shapes);
  return joint.ok() && std::optional<std::vector<int64_t>>(*joint) == group.back()->output(0)->type().shape().sizes();
}

/// Builds the body and replaces the group by one FusedElementwise.
void fuseGroup(Model &model, const std::vector<Node *> &group) {
  Graph &graph = *model.graph;
  const bool inlineScalars = scalarsMayBeInlined(model, group);
  auto body = std::make_shared<Graph>("body");
  std::unordered_map<const Value *, Value *> inBody;
  std::vector<Value *> inputs;
  for (Node *node : group) {
    std::vector<Value *> bodyInputs;
    for (Value *input : node->inputs()) {
      if (!input) {
        bodyInputs.push_back(nullptr);
        continue;
      }
      auto found = inBody.find(input);
      if (found == inBody.end()) {
        std::optional<Tensor> constant = passes::constantValueOf(model, *input);
        const bool inlined = inlineScalars && constant && constant->numel() == 1;
        Value *mapped = inlined ? body->addInitializer(input->name(), std::move(*constant))
                                : body->addInput(input->name(), input->type());
        if (!inlined) inputs.push_back(input);
        found = inBody.emplace(input, mapped).first;
      }
      bodyInputs.push_back(found->second);
    }
    Node *copy = body->addNode(node->opType(), bodyInputs, {node->output(0)->name()}, node->name(), node->domain());
    for (const auto &[name, attr] : node->attributes()) copy->setAttr(name, attr);
    copy->output(0)->setType(node->output(0)->type());
    inBody[node->output(0)] = copy->output(0);
  }
  Node *root = group.back();
  body->addOutput(inBody.at(root->output(0)));
  Node *fused = passes::replacePattern(graph, root->output(0), "FusedElementwise", "tessel", inputs,
                                       {{"body", Attribute(Attribute::GraphPtr(body))}}, group);
  body->setParentNode(fused);
}

}  // namespace

Expected<bool> fuseElementwise(Model &model) {
  Graph &graph = *model.graph;
  const std::unordered_set<const Value *> returned = passes::valuesReturnedBySubgraphs(graph);
  std::vector<Node *> order;
  for (const auto &node : graph.nodes()) order.push_back(node.get());
  std::unordered_set<const Node *> claimed;
  std::vector<std::vector<Node *>> groups;
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    Node *root = *it;
    if (claimed.count(root) || !isElementwise(*root)) continue;
    const Value *out = root->output(0);
    if (!out->type().shape().rankKnown() || returned.count(out)) continue;
    std::vector<Node *> group = growGroup(graph, root, claimed, returned);
    claimed.insert(group.begin(), group.end());
    if (group.size() >= 2) groups.push_back(std::move(group));
  }
  if (groups.empty()) return false;
  for (const std::vector<Node *> &group : groups) fuseGroup(model, group);
  passes::importTesselOpset(model);
  TESSEL_RETURN_IF_ERROR(graph.sortTopologically());
  return true;
}

}  // namespace tessel
