// The graph IR: Values (typed edges with use lists), Nodes (ops with attributes and nested
// subgraphs), Graphs (ordered node lists with inputs, outputs and initializers) and the Model that
// owns the top-level graph and its opset imports. A node in a subgraph may read Values of any
// enclosing graph (ONNX's outer-scope references).
#pragma once

#include <cstdint>
#include <list>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "ir/attribute.h"
#include "ir/tensor.h"
#include "ir/type.h"

namespace tessel {

class Graph;
class Node;

/// One use of a Value: the node that reads it and at which input position.
struct Use {
  Node *user;
  size_t inputIndex;
  bool operator==(const Use &other) const = default;
};

class Value {
 public:
  const std::string &name() const { return name_; }
  void setName(std::string name) { name_ = std::move(name); }
  const Type &type() const { return type_; }
  void setType(Type type) { type_ = std::move(type); }
  /// The node producing this value, or nullptr for graph inputs and initializers.
  Node *producer() const { return producer_; }
  size_t producerOutputIndex() const { return producerOutputIndex_; }
  const std::vector<Use> &uses() const { return uses_; }
  Graph *graph() const { return graph_; }

  /// A constant (ONNX initializer). A value can be both a graph input and an initializer, in
  /// which case the initializer is the default when the input is not fed.
  bool hasInitializer() const { return initializer_.has_value(); }
  const Tensor &initializer() const { return *initializer_; }
  void setInitializer(Tensor tensor) { initializer_ = std::move(tensor); }
  bool isGraphInput() const { return isGraphInput_; }

 private:
  friend class Graph;
  friend class Node;
  std::string name_;
  Type type_;
  Node *producer_ = nullptr;
  size_t producerOutputIndex_ = 0;
  std::vector<Use> uses_;
  Graph *graph_ = nullptr;
  std::optional<Tensor> initializer_;
  bool isGraphInput_ = false;
};

class Node {
 public:
  const std::string &opType() const { return opType_; }
  /// "" for the default ai.onnx domain.
  const std::string &domain() const { return domain_; }
  const std::string &name() const { return name_; }
  void setName(std::string name) { name_ = std::move(name); }
  Graph *graph() const { return graph_; }
  /// Position of the node in the source model (for diagnostics), or -1.
  int sourceIndex() const { return sourceIndex_; }
  void setSourceIndex(int index) { sourceIndex_ = index; }

  /// Inputs; an omitted optional input is nullptr.
  const std::vector<Value *> &inputs() const { return inputs_; }
  Value *input(size_t i) const { return i < inputs_.size() ? inputs_[i] : nullptr; }
  void setInput(size_t i, Value *value);
  void addInput(Value *value);
  /// Outputs; an omitted optional output is nullptr.
  const std::vector<Value *> &outputs() const { return outputs_; }
  Value *output(size_t i) const { return i < outputs_.size() ? outputs_[i] : nullptr; }

  const std::vector<std::pair<std::string, Attribute>> &attributes() const { return attributes_; }
  const Attribute *findAttr(const std::string &name) const;
  bool hasAttr(const std::string &name) const { return findAttr(name) != nullptr; }
  void setAttr(const std::string &name, Attribute value);
  /// Typed getters: the attribute's value, or `fallback` when it is absent or of another kind
  /// (the importer checks kinds against the op schema, so a mismatch here means absent).
  int64_t attrInt(const std::string &name, int64_t fallback) const;
  float attrFloat(const std::string &name, float fallback) const;
  std::string attrString(const std::string &name, const std::string &fallback) const;
  std::vector<int64_t> attrInts(const std::string &name, std::vector<int64_t> fallback = {}) const;
  std::vector<float> attrFloats(const std::string &name, std::vector<float> fallback = {}) const;
  std::vector<std::string> attrStrings(const std::string &name, std::vector<std::string> fallback = {}) const;
  const Tensor *attrTensor(const std::string &name) const;
  const Graph *attrGraph(const std::string &name) const;

  /// Subgraphs held by this node's attributes, in attribute order.
  std::vector<Graph *> subgraphs() const;

 private:
  friend class Graph;
  std::string opType_;
  std::string domain_;
  std::string name_;
  Graph *graph_ = nullptr;
  int sourceIndex_ = -1;
  std::vector<Value *> inputs_;
  std::vector<Value *> outputs_;
  std::vector<std::pair<std::string, Attribute>> attributes_;
};

class Graph {
 public:
  explicit Graph(std::string name = "main") : name_(std::move(name)) {}
  Graph(const Graph &) = delete;
  Graph &operator=(const Graph &) = delete;

  const std::string &name() const { return name_; }
  void setName(std::string name) { name_ = std::move(name); }
  /// For a subgraph, the node whose attribute holds it; nullptr at top level.
  Node *parentNode() const { return parentNode_; }
  void setParentNode(Node *node) { parentNode_ = node; }

  /// Creates a value owned by this graph. Names must be unique within a graph for printing.
  Value *createValue(std::string name, Type type = {});
  /// Creates a graph input.
  Value *addInput(std::string name, Type type);
  /// Creates an initializer (a named constant).
  Value *addInitializer(std::string name, Tensor tensor);
  /// Drops `value` from the initializers and frees its tensor; the Value itself stays owned by the
  /// graph as an orphan (no producer, not an input, no initializer). Precondition checked: it is an
  /// initializer of this graph with no uses, not a graph output and not a graph input (an input's
  /// initializer is the default a user may override, so it is not for a pass to drop). A subgraph
  /// returning it directly is not a use: callers must check that themselves.
  void removeInitializer(Value *value);
  void addOutput(Value *value) { outputs_.push_back(value); }
  void setOutput(size_t i, Value *value) { outputs_[i] = value; }

  /// Appends a node; creates its outputs from `outputNames` ("" = omitted optional output).
  Node *addNode(std::string opType, std::vector<Value *> inputs, const std::vector<std::string> &outputNames,
                std::string name = "", std::string domain = "");
  /// Removes a node whose outputs have no uses. Precondition checked.
  void eraseNode(Node *node);
  /// Points every use of `from` (and graph outputs) at `to`.
  void replaceAllUsesWith(Value *from, Value *to);

  const std::list<std::unique_ptr<Node>> &nodes() const { return nodes_; }
  size_t numNodes() const { return nodes_.size(); }
  const std::vector<Value *> &inputs() const { return inputs_; }
  const std::vector<Value *> &outputs() const { return outputs_; }
  /// Initializers in creation order.
  const std::vector<Value *> &initializers() const { return initializers_; }
  /// Every value owned by this graph, in creation order.
  const std::vector<std::unique_ptr<Value>> &values() const { return values_; }
  /// The value with this name owned by this graph, or nullptr (outer scopes not searched).
  Value *findValue(const std::string &name) const;

  /// Reorders nodes so every producer precedes its users; fails on a cycle, naming a node on it.
  Status sortTopologically();
  /// Gives every node a distinct, non-empty name ("OpType_N" or "name_N" where there is none or it
  /// repeats): what targets key per-node state by (packed weights, device constants).
  void nameNodesUniquely();
  /// Gives `value` (owned by this graph) a new name, unused in this graph.
  void renameValue(Value *value, std::string name);
  /// A name not yet used in this graph, derived from `hint`.
  std::string uniqueName(const std::string &hint);

 private:
  std::string name_;
  Node *parentNode_ = nullptr;
  std::vector<std::unique_ptr<Value>> values_;
  std::unordered_map<std::string, Value *> valuesByName_;
  std::list<std::unique_ptr<Node>> nodes_;
  std::vector<Value *> inputs_;
  std::vector<Value *> outputs_;
  std::vector<Value *> initializers_;
  int64_t nameCounter_ = 0;
};

/// A whole model: the top-level graph plus the metadata ONNX keeps.
struct Model {
  std::shared_ptr<Graph> graph = std::make_shared<Graph>();
  std::map<std::string, int64_t> opsetImports;  // domain ("" = ai.onnx) -> version.
  int64_t irVersion = 8;
  std::string producerName;
  std::string producerVersion;
  std::string domain;
  int64_t modelVersion = 0;
  std::string docString;
  std::vector<std::pair<std::string, std::string>> metadata;
  std::string sourcePath;  // The file it was loaded from, for diagnostics.

  /// The opset version imported for `domain` ("ai.onnx" and "" are the same), or -1.
  int64_t opsetFor(const std::string &domain) const;
};

/// The location of a node for diagnostics: file (from `model`, may be null), name, op, index.
SourceLoc locationOf(const Node &node, const std::string &file);

}  // namespace tessel
