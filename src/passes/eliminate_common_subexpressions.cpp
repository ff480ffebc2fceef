// Common-subexpression elimination: one forward walk; each node is looked up by a hash of its op
// and canonical inputs, confirmed by comparing attributes, and merged into the first match.
#include "passes/eliminate_common_subexpressions.h"

#include <unordered_map>
#include <unordered_set>

#include "ir/equality.h"
#include "passes/constant_values.h"

namespace tessel {

namespace {

constexpr int64_t kMaxComparedConstantElements = 64;

/// Maps each input to a representative: small initializers equal by value share the first one.
class InputCanonicalizer {
 public:
  const Value *operator()(const Value *value) {
    if (!value || !value->hasInitializer() || value->isGraphInput()) return value;
    const Tensor &tensor = value->initializer();
    if (tensor.numel() > kMaxComparedConstantElements || tensor.dtype() == DType::String) return value;
    auto known = canonical_.find(value);
    if (known != canonical_.end()) return known->second;
    for (const Value *candidate : representatives_) {
      if (tensorsEqual(candidate->initializer(), tensor)) return canonical_[value] = candidate;
    }
    representatives_.push_back(value);
    return canonical_[value] = value;
  }

 private:
  std::unordered_map<const Value *, const Value *> canonical_;
  std::vector<const Value *> representatives_;
};

bool isCandidate(const Node &node) {
  return !passes::isNondeterministicOp(node) && node.subgraphs().empty() && !node.outputs().empty();
}

bool sameAttributes(const Node &a, const Node &b) {
  if (a.attributes().size() != b.attributes().size()) return false;
  for (const auto &[name, attr] : a.attributes()) {
    const Attribute *other = b.findAttr(name);
    std::string why;
    if (!other || !attributesEqual(attr, *other, why)) return false;
  }
  return true;
}

struct Key {
  std::string op;
  std::vector<const Value *> inputs;
  bool operator==(const Key &other) const = default;
};

struct KeyHash {
  size_t operator()(const Key &key) const {
    size_t h = std::hash<std::string>()(key.op);
    for (const Value *v : key.inputs) h = h * 1000003u ^ std::hash<const Value *>()(v);
    return h;
  }
};

/// Whether `later`'s readers can all be served by `earlier`'s outputs, keeping every name that must stay.
bool canMerge(const Graph &graph, const Node &earlier, const Node &later,
              const std::unordered_set<const Value *> &returned) {
  if (earlier.outputs().size() != later.outputs().size()) return false;
  for (size_t i = 0; i < later.outputs().size(); ++i) {
    const Value *out = later.output(i);
    if (!out) continue;
    if (passes::isGraphOutput(graph, out) || returned.count(out)) return false;
    if (!earlier.output(i) && !out->uses().empty()) return false;
  }
  return true;
}

}  // namespace

Expected<bool> eliminateCommonSubexpressions(Model &model) {
  Graph &graph = *model.graph;
  const std::unordered_set<const Value *> returned = passes::valuesReturnedBySubgraphs(graph);
  InputCanonicalizer canonical;
  std::unordered_map<Key, std::vector<Node *>, KeyHash> seen;
  std::vector<Node *> merged;
  for (const auto &owned : graph.nodes()) {
    Node *node = owned.get();
    if (!isCandidate(*node)) continue;
    Key key{node->domain() + "::" + node->opType(), {}};
    for (const Value *input : node->inputs()) key.inputs.push_back(canonical(input));
    std::vector<Node *> &matches = seen[key];
    Node *earlier = nullptr;
    for (Node *candidate : matches) {
      if (sameAttributes(*candidate, *node)) {
        earlier = candidate;
        break;
      }
    }
    if (!earlier || !canMerge(graph, *earlier, *node, returned)) {
      if (!earlier) matches.push_back(node);
      continue;
    }
    // Readers come after `node`, which comes after `earlier`: order stays topological.
    for (size_t i = 0; i < node->outputs().size(); ++i) {
      if (Value *out = node->output(i)) graph.replaceAllUsesWith(out, earlier->output(i));
    }
    merged.push_back(node);
  }
  for (Node *node : merged) graph.eraseNode(node);
  return !merged.empty();
}

}  // namespace tessel
