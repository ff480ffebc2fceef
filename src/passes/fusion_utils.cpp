// Helpers shared by the fusion passes; see fusion_utils.h.
#include "passes/fusion_utils.h"

#include <algorithm>

#include "passes/constant_values.h"

namespace tessel::passes {

bool isOnnxOp(const Node *node, std::string_view op) {
  return node && (node->domain().empty() || node->domain() == "ai.onnx") && node->opType() == op;
}

bool isTesselOp(const Node *node, std::string_view op) {
  return node && node->domain() == "tessel" && node->opType() == op;
}

Node *producerIs(const Value *value, std::string_view op) {
  Node *producer = value ? value->producer() : nullptr;
  return isOnnxOp(producer, op) ? producer : nullptr;
}

Node *singleUser(const Graph &graph, const Value *value) {
  if (!value || value->uses().size() != 1 || isGraphOutput(graph, value)) return nullptr;
  Node *user = value->uses()[0].user;
  return user->graph() == &graph ? user : nullptr;  // A read from a subgraph is no fusion candidate.
}

bool usedOnlyBy(const Graph &graph, const Value *value, const std::unordered_set<const Node *> &pattern,
                const std::unordered_set<const Value *> &returned) {
  if (!value || isGraphOutput(graph, value) || returned.count(value)) return false;
  return std::all_of(value->uses().begin(), value->uses().end(),
                     [&](const Use &use) { return pattern.count(use.user) > 0; });
}

std::optional<double> scalarConstant(const Model &model, const Value *value) {
  if (!value) return std::nullopt;
  if (!value->hasInitializer() && !producerIs(value, "Constant")) return std::nullopt;
  std::optional<Tensor> tensor = constantValueOf(model, *value);
  if (!tensor || tensor->numel() != 1 || !isFloatingPoint(tensor->dtype())) return std::nullopt;
  return tensor->scalarAsDouble(0);
}

bool isScalarConstant(const Model &model, const Value *value, double expected, double relTol) {
  std::optional<double> actual = scalarConstant(model, value);
  return actual && std::abs(*actual - expected) <= relTol * std::abs(expected);
}

int scalarConstantOperand(const Model &model, const Node &node) {
  if (node.inputs().size() != 2) return -1;
  if (scalarConstant(model, node.input(1))) return 1;
  if (scalarConstant(model, node.input(0))) return 0;
  return -1;
}

std::optional<std::vector<int64_t>> staticSizes(const Value *value) {
  if (!value || !value->type().isTensor()) return std::nullopt;
  return value->type().shape().sizes();
}

bool sameShape(const Value *a, const Value *b) {
  if (!a || !b || !a->type().isTensor() || !b->type().isTensor()) return false;
  const Shape &sa = a->type().shape(), &sb = b->type().shape();
  if (!sa.rankKnown() || !sb.rankKnown() || sa.rank() != sb.rank()) return false;
  for (size_t i = 0; i < sa.rank(); ++i) {
    if (!(sa[i].isStatic() || sa[i].isSymbolic()) || !(sa[i] == sb[i])) return false;
  }
  return true;
}

std::optional<std::vector<int64_t>> reduceAxes(const Model &model, const Node &node, int64_t rank) {
  std::vector<int64_t> axes;
  if (const Attribute *attr = node.findAttr("axes")) {
    if (!attr->is<std::vector<int64_t>>()) return std::nullopt;
    axes = attr->get<std::vector<int64_t>>();
  } else if (node.input(1)) {
    std::optional<Tensor> constant = constantValueOf(model, *node.input(1));
    if (!constant) return std::nullopt;
    axes = constant->toInt64Vector();
  } else {
    return std::nullopt;  // All axes (or none with noop_with_empty_axes): not a per-row reduction.
  }
  for (int64_t &axis : axes) {
    if (axis < -rank || axis >= rank) return std::nullopt;
    if (axis < 0) axis += rank;
  }
  std::sort(axes.begin(), axes.end());
  return axes;
}

void importTesselOpset(Model &model) { model.opsetImports["tessel"] = kTesselOpsetVersion; }

Expected<bool> recognizeAtAnchors(
    Model &model, std::initializer_list<std::string_view> anchorOps, bool importsTesselOps,
    const std::function<bool(Node *anchor, const std::unordered_set<const Value *> &returned)> &recognizeAt) {
  std::vector<Node *> anchors;
  for (const auto &node : model.graph->nodes()) {
    for (std::string_view op : anchorOps) {
      if (isOnnxOp(node.get(), op)) anchors.push_back(node.get());
    }
  }
  const std::unordered_set<const Value *> returned = valuesReturnedBySubgraphs(*model.graph);
  bool changed = false;
  for (Node *anchor : anchors) changed = recognizeAt(anchor, returned) || changed;
  if (!changed) return false;
  if (importsTesselOps) importTesselOpset(model);
  TESSEL_RETURN_IF_ERROR(model.graph->sortTopologically());
  return true;
}

Node *replacePattern(Graph &graph, Value *result, const std::string &opType, const std::string &domain,
                     const std::vector<Value *> &inputs, std::vector<std::pair<std::string, Attribute>> attributes,
                     const std::vector<Node *> &pattern) {
  // The new output takes the name at once (the name index now points at it); the old value keeps
  // the name only until its producer is erased below, leaving an orphan.
  // The node that computed the result names the new one (diagnostics then point at the source).
  const std::string nodeName = result->producer() ? result->producer()->name() : "";
  Node *node = graph.addNode(opType, inputs, {result->name()}, nodeName, domain);
  for (auto &[name, value] : attributes) node->setAttr(name, std::move(value));
  Value *out = node->output(0);
  out->setType(result->type());
  graph.replaceAllUsesWith(result, out);
  // Erase from the readers back: repeat until no pattern node without readers is left.
  std::vector<Node *> left = pattern;
  for (bool erased = true; erased;) {
    erased = false;
    for (auto it = left.begin(); it != left.end();) {
      Node *candidate = *it;
      bool unread = std::all_of(candidate->outputs().begin(), candidate->outputs().end(),
                                [&](const Value *v) { return !v || (v->uses().empty() && !isGraphOutput(graph, v)); });
      if (!unread) {
        ++it;
        continue;
      }
      graph.eraseNode(candidate);
      it = left.erase(it);
      erased = true;
    }
  }
  return node;
}

Value *addConstant(Graph &graph, const std::string &hint, Tensor tensor) {
  return graph.addInitializer(graph.uniqueName(hint), std::move(tensor));
}

}  // namespace tessel::passes
