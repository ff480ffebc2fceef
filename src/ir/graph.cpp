// Graph construction and mutation: use lists are kept exact by every mutator here.
#include "ir/graph.h"

#include <algorithm>
#include <unordered_set>

namespace tessel {

const char *attributeKindName(Attribute::Kind kind) {
  static const char *const kNames[] = {"float", "int", "string", "tensor", "graph", "type",
                                       "floats", "ints", "strings", "tensors", "graphs", "types"};
  return kNames[static_cast<int>(kind)];
}

// ---- Node ----

void Node::setInput(size_t i, Value *value) {
  if (i >= inputs_.size()) inputs_.resize(i + 1, nullptr);
  if (Value *old = inputs_[i]) {
    auto &uses = old->uses_;
    uses.erase(std::find(uses.begin(), uses.end(), Use{this, i}));
  }
  inputs_[i] = value;
  if (value) value->uses_.push_back(Use{this, i});
}

void Node::addInput(Value *value) { setInput(inputs_.size(), value); }

const Attribute *Node::findAttr(const std::string &name) const {
  for (const auto &[key, value] : attributes_) {
    if (key == name) return &value;
  }
  return nullptr;
}

void Node::setAttr(const std::string &name, Attribute value) {
  for (auto &[key, existing] : attributes_) {
    if (key == name) {
      existing = std::move(value);
      return;
    }
  }
  attributes_.emplace_back(name, std::move(value));
}

int64_t Node::attrInt(const std::string &name, int64_t fallback) const {
  const Attribute *a = findAttr(name);
  return a && a->is<int64_t>() ? a->get<int64_t>() : fallback;
}

float Node::attrFloat(const std::string &name, float fallback) const {
  const Attribute *a = findAttr(name);
  return a && a->is<float>() ? a->get<float>() : fallback;
}

std::string Node::attrString(const std::string &name, const std::string &fallback) const {
  const Attribute *a = findAttr(name);
  return a && a->is<std::string>() ? a->get<std::string>() : fallback;
}

std::vector<int64_t> Node::attrInts(const std::string &name, std::vector<int64_t> fallback) const {
  const Attribute *a = findAttr(name);
  return a && a->is<std::vector<int64_t>>() ? a->get<std::vector<int64_t>>() : fallback;
}

std::vector<float> Node::attrFloats(const std::string &name, std::vector<float> fallback) const {
  const Attribute *a = findAttr(name);
  return a && a->is<std::vector<float>>() ? a->get<std::vector<float>>() : fallback;
}

std::vector<std::string> Node::attrStrings(const std::string &name, std::vector<std::string> fallback) const {
  const Attribute *a = findAttr(name);
  return a && a->is<std::vector<std::string>>() ? a->get<std::vector<std::string>>() : fallback;
}

const Tensor *Node::attrTensor(const std::string &name) const {
  const Attribute *a = findAttr(name);
  return a && a->is<Tensor>() ? &a->get<Tensor>() : nullptr;
}

const Graph *Node::attrGraph(const std::string &name) const {
  const Attribute *a = findAttr(name);
  return a && a->is<Attribute::GraphPtr>() ? a->get<Attribute::GraphPtr>().get() : nullptr;
}

std::vector<Graph *> Node::subgraphs() const {
  std::vector<Graph *> out;
  for (const auto &[key, attr] : attributes_) {
    if (attr.is<Attribute::GraphPtr>()) out.push_back(attr.get<Attribute::GraphPtr>().get());
    if (attr.is<std::vector<Attribute::GraphPtr>>()) {
      for (const auto &g : attr.get<std::vector<Attribute::GraphPtr>>()) out.push_back(g.get());
    }
  }
  return out;
}

// ---- Graph ----

Value *Graph::createValue(std::string name, Type type) {
  auto value = std::make_unique<Value>();
  value->name_ = std::move(name);
  value->type_ = std::move(type);
  value->graph_ = this;
  Value *raw = value.get();
  if (!raw->name_.empty()) valuesByName_[raw->name_] = raw;
  values_.push_back(std::move(value));
  return raw;
}

Value *Graph::addInput(std::string name, Type type) {
  Value *value = createValue(std::move(name), std::move(type));
  value->isGraphInput_ = true;
  inputs_.push_back(value);
  return value;
}

Value *Graph::addInitializer(std::string name, Tensor tensor) {
  Value *value = findValue(name);
  if (!value) value = createValue(name);
  value->setType(Type::tensor(tensor.dtype(), Shape::fromSizes(tensor.sizes())));
  value->setInitializer(std::move(tensor));
  initializers_.push_back(value);
  return value;
}

void Graph::removeInitializer(Value *value) {
  TESSEL_CHECK(value && value->graph_ == this && value->hasInitializer(),
               "removing '{}', which is not an initializer of graph '@{}'", value ? value->name_ : "null", name_);
  TESSEL_CHECK(std::find(initializers_.begin(), initializers_.end(), value) != initializers_.end(),
               "removing '{}', which is not in the initializers of graph '@{}'", value->name_, name_);
  TESSEL_CHECK(value->uses_.empty(), "removing initializer '{}', which is still used", value->name_);
  TESSEL_CHECK(!value->isGraphInput_, "removing initializer '{}', which is a graph input", value->name_);
  TESSEL_CHECK(std::find(outputs_.begin(), outputs_.end(), value) == outputs_.end(),
               "removing initializer '{}', which is a graph output", value->name_);
  std::erase(initializers_, value);  // Every entry: addInitializer on an existing one appends it again.
  value->initializer_.reset();
}

Node *Graph::addNode(std::string opType, std::vector<Value *> inputs, const std::vector<std::string> &outputNames,
                     std::string name, std::string domain) {
  auto node = std::make_unique<Node>();
  node->opType_ = std::move(opType);
  node->domain_ = std::move(domain);
  node->name_ = std::move(name);
  node->graph_ = this;
  Node *raw = node.get();
  for (Value *input : inputs) raw->addInput(input);
  for (size_t i = 0; i < outputNames.size(); ++i) {
    if (outputNames[i].empty()) {
      raw->outputs_.push_back(nullptr);
      continue;
    }
    Value *out = createValue(outputNames[i]);
    out->producer_ = raw;
    out->producerOutputIndex_ = i;
    raw->outputs_.push_back(out);
  }
  nodes_.push_back(std::move(node));
  return raw;
}

void Graph::eraseNode(Node *node) {
  for (Value *out : node->outputs_) {
    TESSEL_CHECK(!out || out->uses_.empty(), "erasing node '{}' whose output '{}' is still used", node->name_,
                 out->name_);
    if (out) out->producer_ = nullptr;
  }
  for (size_t i = 0; i < node->inputs_.size(); ++i) node->setInput(i, nullptr);
  nodes_.remove_if([node](const std::unique_ptr<Node> &n) { return n.get() == node; });
}

void Graph::replaceAllUsesWith(Value *from, Value *to) {
  std::vector<Use> uses = from->uses_;
  for (const Use &use : uses) use.user->setInput(use.inputIndex, to);
  for (Value *&out : outputs_) {
    if (out == from) out = to;
  }
}

Value *Graph::findValue(const std::string &name) const {
  auto it = valuesByName_.find(name);
  return it == valuesByName_.end() ? nullptr : it->second;
}

void Graph::renameValue(Value *value, std::string name) {
  TESSEL_CHECK(value->graph() == this, "value '{}' is not owned by graph '{}'", value->name(), name_);
  TESSEL_CHECK(!valuesByName_.count(name), "value name '{}' is taken in graph '{}'", name, name_);
  auto it = valuesByName_.find(value->name());
  if (it != valuesByName_.end() && it->second == value) valuesByName_.erase(it);
  value->setName(std::move(name));
  valuesByName_[value->name()] = value;
}

std::string Graph::uniqueName(const std::string &hint) {
  std::string candidate = hint;
  while (candidate.empty() || valuesByName_.count(candidate)) {
    candidate = hint + "_" + std::to_string(nameCounter_++);
  }
  return candidate;
}

namespace {
/// Values a node reads, including those its subgraphs read from enclosing scopes.
void collectReads(const Node &node, std::vector<Value *> &reads) {
  for (Value *v : node.inputs()) {
    if (v) reads.push_back(v);
  }
  for (Graph *sub : node.subgraphs()) {
    for (const auto &inner : sub->nodes()) collectReads(*inner, reads);
  }
}
}  // namespace

void Graph::nameNodesUniquely() {
  std::unordered_set<std::string> names;
  for (const auto &node : nodes_) {
    if (!node->name().empty() && names.insert(node->name()).second) continue;
    const std::string base = node->name().empty() ? node->opType() : node->name();
    std::string candidate;
    for (int i = 0; !names.insert(candidate = fmt::format("{}_{}", base, i)).second; ++i) {
    }
    node->setName(candidate);
  }
}

Status Graph::sortTopologically() {
  // Kahn's algorithm over the nodes of this graph; values from other graphs are always ready.
  std::unordered_map<const Node *, size_t> pending;
  std::unordered_map<const Node *, std::vector<Node *>> usersOf;
  std::vector<Node *> ready;
  for (const auto &node : nodes_) {
    std::vector<Value *> reads;
    collectReads(*node, reads);
    std::unordered_set<const Node *> producers;
    for (Value *v : reads) {
      if (v->producer_ && v->producer_->graph_ == this && v->producer_ != node.get()) producers.insert(v->producer_);
      if (v->producer_ == node.get()) {
        return makeError(ErrorCode::InvalidModel, "node '{}' ({}) reads its own output '{}': the graph has a cycle",
                         node->name_, node->opType_, v->name_);
      }
    }
    pending[node.get()] = producers.size();
    for (const Node *p : producers) usersOf[p].push_back(node.get());
    if (producers.empty()) ready.push_back(node.get());
  }
  std::vector<Node *> order;
  order.reserve(nodes_.size());
  for (size_t i = 0; i < ready.size(); ++i) {
    Node *n = ready[i];
    order.push_back(n);
    for (Node *user : usersOf[n]) {
      if (--pending[user] == 0) ready.push_back(user);
    }
  }
  if (order.size() != nodes_.size()) {
    for (const auto &node : nodes_) {
      if (pending[node.get()] > 0) {
        return makeError(ErrorCode::InvalidModel, "the graph has a cycle through node '{}' ({})", node->name_,
                         node->opType_);
      }
    }
  }
  std::unordered_map<const Node *, size_t> position;
  for (size_t i = 0; i < order.size(); ++i) position[order[i]] = i;
  std::vector<std::unique_ptr<Node>> sorted(order.size());
  for (auto &node : nodes_) sorted[position[node.get()]] = std::move(node);
  nodes_.clear();
  for (auto &node : sorted) nodes_.push_back(std::move(node));
  return Status::success();
}

// ---- Model ----

int64_t Model::opsetFor(const std::string &domain) const {
  const std::string key = domain == "ai.onnx" ? "" : domain;
  auto it = opsetImports.find(key);
  return it == opsetImports.end() ? -1 : it->second;
}

SourceLoc locationOf(const Node &node, const std::string &file) {
  return SourceLoc{file, node.name(), node.opType(), node.sourceIndex()};
}

}  // namespace tessel
