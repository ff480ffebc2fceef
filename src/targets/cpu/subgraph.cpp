// Copying, inlining and extracting subgraphs for the cpu target (see subgraph.h).
#include "targets/cpu/subgraph.h"

#include <algorithm>
#include <unordered_map>
#include <unordered_set>

namespace tessel::cpu {
namespace {

using ValueMap = std::unordered_map<const Value *, Value *>;

Value *mapped(const ValueMap &map, Value *value) {
  auto it = map.find(value);
  return it == map.end() ? value : it->second;
}

void copyNodes(const Graph &source, Graph &target, ValueMap &map);
void copyAttributes(const Node &node, Node *copy, ValueMap &map);

/// A copy of `source` for a node of the target graph; reads of values outside it go through `map`.
std::shared_ptr<Graph> copyGraph(const Graph &source, Node *parent, ValueMap &map) {
  auto copy = std::make_shared<Graph>(source.name());
  copy->setParentNode(parent);
  for (Value *input : source.inputs()) map[input] = copy->addInput(input->name(), input->type());
  for (Value *init : source.initializers()) map[init] = copy->addInitializer(init->name(), init->initializer());
  copyNodes(source, *copy, map);
  for (Value *output : source.outputs()) copy->addOutput(mapped(map, output));
  return copy;
}

/// Appends a copy of `node` to `target`, reading its inputs through `map` and adding its outputs to it.
void copyNode(const Node &node, Graph &target, ValueMap &map) {
  std::vector<Value *> inputs;
  for (Value *input : node.inputs()) inputs.push_back(input ? mapped(map, input) : nullptr);
  std::vector<std::string> names;
  for (Value *output : node.outputs()) names.push_back(output ? target.uniqueName(output->name()) : "");
  Node *copy = target.addNode(node.opType(), inputs, names, node.name(), node.domain());
  copy->setSourceIndex(node.sourceIndex());
  for (size_t o = 0; o < node.outputs().size(); ++o) {
    if (Value *output = node.output(o)) {
      copy->output(o)->setType(output->type());
      map[output] = copy->output(o);
    }
  }
  copyAttributes(node, copy, map);
}

void copyNodes(const Graph &source, Graph &target, ValueMap &map) {
  for (const auto &node : source.nodes()) copyNode(*node, target, map);
}

void copyAttributes(const Node &node, Node *copy, ValueMap &map) {
  for (const auto &[key, attr] : node.attributes()) {
    if (attr.is<Attribute::GraphPtr>()) {
      copy->setAttr(key, copyGraph(*attr.get<Attribute::GraphPtr>(), copy, map));
    } else if (attr.is<std::vector<Attribute::GraphPtr>>()) {
      std::vector<Attribute::GraphPtr> graphs;
      for (const auto &graph : attr.get<std::vector<Attribute::GraphPtr>>()) graphs.push_back(copyGraph(*graph, copy, map));
      copy->setAttr(key, std::move(graphs));
    } else {
      copy->setAttr(key, attr);
    }
  }
}

/// Drops the uses that `node`'s subgraphs hold on enclosing values, before the node is erased.
void detachSubgraphReads(const Node &node) {
  for (Graph *sub : node.subgraphs()) {
    for (const auto &inner : sub->nodes()) {
      for (size_t i = 0; i < inner->inputs().size(); ++i) inner->setInput(i, nullptr);
      detachSubgraphReads(*inner);
    }
  }
}

void collectOwned(const Graph &graph, std::unordered_set<const Graph *> &owned) {
  owned.insert(&graph);
  for (const auto &node : graph.nodes()) {
    for (const Graph *sub : node->subgraphs()) collectOwned(*sub, owned);
  }
}

void collectReads(const Graph &graph, const std::unordered_set<const Graph *> &owned, std::vector<const Value *> &out) {
  auto add = [&](const Value *value) {
    if (value && !owned.count(value->graph()) && std::find(out.begin(), out.end(), value) == out.end()) {
      out.push_back(value);
    }
  };
  for (const auto &node : graph.nodes()) {
    for (const Value *input : node->inputs()) add(input);
    for (const Graph *sub : node->subgraphs()) collectReads(*sub, owned, out);
  }
  for (const Value *output : graph.outputs()) add(output);
}

std::optional<bool> constantCondition(const Node &node) {
  const Value *cond = node.input(0);
  if (!cond || !cond->hasInitializer() || cond->isGraphInput()) return std::nullopt;
  const Tensor &tensor = cond->initializer();
  if (tensor.dtype() != DType::Bool || tensor.numel() != 1) return std::nullopt;
  return *static_cast<const uint8_t *>(tensor.rawData()) != 0;
}

}  // namespace

std::vector<const Value *> outerReads(const Graph &graph) {
  std::unordered_set<const Graph *> owned;
  collectOwned(graph, owned);
  std::vector<const Value *> out;
  collectReads(graph, owned, out);
  return out;
}

Expected<bool> inlineConstantIfs(Model &model) {
  Graph &graph = *model.graph;
  std::vector<Node *> ifs;
  for (const auto &node : graph.nodes()) {
    if (node->opType() == "If" && node->domain().empty() && constantCondition(*node)) ifs.push_back(node.get());
  }
  bool changed = false;
  for (Node *node : ifs) {
    const Graph *branch = node->attrGraph(*constantCondition(*node) ? "then_branch" : "else_branch");
    if (!branch || branch->outputs().size() != node->outputs().size() || !branch->inputs().empty()) continue;
    ValueMap map;
    for (Value *init : branch->initializers()) {
      map[init] = graph.addInitializer(graph.uniqueName(init->name()), init->initializer());
    }
    copyNodes(*branch, graph, map);
    for (size_t o = 0; o < node->outputs().size(); ++o) {
      Value *old = node->output(o);
      if (!old) continue;
      Value *value = mapped(map, branch->outputs()[o]);
      if (std::find(graph.outputs().begin(), graph.outputs().end(), old) != graph.outputs().end()) {
        // The model's outputs are found by name: the value replacing one takes it over.
        const std::string name = old->name();
        old->setName(graph.uniqueName(name + "_inlined"));
        Node *identity = graph.addNode("Identity", {value}, {name}, graph.uniqueName(name + "_identity"));
        identity->output(0)->setType(old->type());
        value = identity->output(0);
      }
      graph.replaceAllUsesWith(old, value);
    }
    detachSubgraphReads(*node);
    graph.eraseNode(node);
    changed = true;
  }
  if (changed) TESSEL_RETURN_IF_ERROR(graph.sortTopologically());
  return changed;
}

Model subgraphModel(const Model &outer, const Graph &source, const std::vector<Type> &ownInputTypes,
                    std::vector<const Value *> &inputsFrom) {
  TESSEL_CHECK(ownInputTypes.size() == source.inputs().size(), "subgraph '{}' has {} inputs; {} types given",
               source.name(), source.inputs().size(), ownInputTypes.size());
  Model model;
  model.opsetImports = outer.opsetImports;
  model.irVersion = outer.irVersion;
  model.sourcePath = outer.sourcePath;
  model.graph = std::make_shared<Graph>(source.name());
  Graph &graph = *model.graph;
  ValueMap map;
  for (size_t i = 0; i < source.inputs().size(); ++i) {
    map[source.inputs()[i]] = graph.addInput(source.inputs()[i]->name(), ownInputTypes[i]);
  }
  inputsFrom.clear();
  for (const Value *read : outerReads(source)) {
    const std::string name = graph.uniqueName(read->name());
    if (read->hasInitializer() && !read->isGraphInput()) {
      map[read] = graph.addInitializer(name, read->initializer());
    } else {
      map[read] = graph.addInput(name, read->type());
      inputsFrom.push_back(read);
    }
  }
  for (Value *init : source.initializers()) {
    if (!init->isGraphInput()) map[init] = graph.addInitializer(graph.uniqueName(init->name()), init->initializer());
  }
  copyNodes(source, graph, map);
  for (Value *output : source.outputs()) graph.addOutput(mapped(map, output));
  return model;
}

Model nodesModel(const Model &outer, const std::vector<const Node *> &nodes, const std::vector<const Value *> &outputs,
                 std::vector<const Value *> &inputsFrom) {
  Model model;
  model.opsetImports = outer.opsetImports;
  model.irVersion = outer.irVersion;
  model.sourcePath = outer.sourcePath;
  model.graph = std::make_shared<Graph>(outer.graph->name());
  Graph &graph = *model.graph;
  std::unordered_set<const Value *> produced;
  for (const Node *node : nodes)
    for (const Value *out : node->outputs())
      if (out) produced.insert(out);
  ValueMap map;
  inputsFrom.clear();
  auto bind = [&](Value *read) {
    if (!read || produced.count(read) || map.count(read)) return;
    if (read->hasInitializer() && !read->isGraphInput()) {
      map[read] = graph.addInitializer(read->name(), read->initializer());
    } else {
      map[read] = graph.addInput(read->name(), read->type());
      inputsFrom.push_back(read);
    }
  };
  for (const Node *node : nodes) {
    for (Value *in : node->inputs()) bind(in);
    for (Graph *sub : node->subgraphs())
      for (const Value *read : outerReads(*sub)) bind(const_cast<Value *>(read));
  }
  for (const Node *node : nodes) copyNode(*node, graph, map);
  for (const Value *output : outputs) graph.addOutput(mapped(map, const_cast<Value *>(output)));
  return model;
}

}  // namespace tessel::cpu
