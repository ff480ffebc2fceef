// Copying a model's graphs node by node, subgraphs included, with outer-scope reads remapped.
#include "ir/clone.h"

#include <unordered_map>

namespace tessel {
namespace {

using ValueMap = std::unordered_map<const Value *, Value *>;

std::shared_ptr<Graph> cloneGraph(const Graph &source, ValueMap &map, Node *parent);

Attribute cloneAttribute(const Attribute &attribute, ValueMap &map, Node *owner) {
  if (attribute.is<Attribute::GraphPtr>()) return cloneGraph(*attribute.get<Attribute::GraphPtr>(), map, owner);
  if (attribute.is<std::vector<Attribute::GraphPtr>>()) {
    std::vector<Attribute::GraphPtr> graphs;
    for (const auto &graph : attribute.get<std::vector<Attribute::GraphPtr>>()) graphs.push_back(cloneGraph(*graph, map, owner));
    return graphs;
  }
  return attribute;
}

std::shared_ptr<Graph> cloneGraph(const Graph &source, ValueMap &map, Node *parent) {
  auto graph = std::make_shared<Graph>(source.name());
  graph->setParentNode(parent);
  for (const Value *input : source.inputs()) map[input] = graph->addInput(input->name(), input->type());
  for (const Value *init : source.initializers()) {
    // An input with a default is found by name and keeps its declared type.
    Value *copy = graph->addInitializer(init->name(), init->initializer());
    copy->setType(init->type());
    map[init] = copy;
  }
  // A node may read a value of an enclosing graph: the map holds those already.
  auto mapped = [&](const Value *value) -> Value * {
    if (!value) return nullptr;
    auto it = map.find(value);
    return it != map.end() ? it->second : nullptr;
  };
  for (const auto &node : source.nodes()) {
    std::vector<Value *> inputs;
    for (const Value *input : node->inputs()) inputs.push_back(mapped(input));
    std::vector<std::string> outputNames;
    for (const Value *output : node->outputs()) outputNames.push_back(output ? output->name() : "");
    Node *copy = graph->addNode(node->opType(), inputs, outputNames, node->name(), node->domain());
    copy->setSourceIndex(node->sourceIndex());
    for (size_t o = 0; o < node->outputs().size(); ++o) {
      if (!node->output(o)) continue;
      copy->output(o)->setType(node->output(o)->type());
      map[node->output(o)] = copy->output(o);
    }
    for (const auto &[name, attribute] : node->attributes()) copy->setAttr(name, cloneAttribute(attribute, map, copy));
  }
  for (const Value *output : source.outputs()) {
    Value *copy = mapped(output);
    // An output nothing defines (a model that fails verification) keeps its name and type.
    if (!copy) map[output] = copy = graph->createValue(output->name(), output->type());
    graph->addOutput(copy);
  }
  return graph;
}

}  // namespace

Model cloneModel(const Model &model) {
  Model copy;
  ValueMap map;
  copy.graph = cloneGraph(*model.graph, map, nullptr);
  copy.opsetImports = model.opsetImports;
  copy.irVersion = model.irVersion;
  copy.producerName = model.producerName;
  copy.producerVersion = model.producerVersion;
  copy.domain = model.domain;
  copy.modelVersion = model.modelVersion;
  copy.docString = model.docString;
  copy.metadata = model.metadata;
  copy.sourcePath = model.sourcePath;
  return copy;
}

}  // namespace tessel
