// Partitioning between host and accelerator; see partition.h.
#include "targets/nc/compiler/partition.h"

#include <algorithm>
#include <map>
#include <set>

#include <fmt/format.h>

namespace tessel::nc::compiler {
namespace {

void collectCaptures(const Node &node, const Graph &graph, std::vector<const Value *> &out) {
  for (const Graph *sub : node.subgraphs()) {
    for (const auto &inner : sub->nodes()) {
      for (const Value *in : inner->inputs())
        if (in && in->graph() == &graph && std::find(out.begin(), out.end(), in) == out.end()) out.push_back(in);
      collectCaptures(*inner, graph, out);
    }
  }
}

/// The most elements a node may read and write in all to be pulled back to the host between host
/// nodes: a few vector instructions' work, far below one transfer's latency over the link.
constexpr int64_t kHostIslandElements = 16384;

/// A value's elements; past kHostIslandElements where not a tensor of static shape.
int64_t elementsOf(const Value *value) {
  if (!value->type().isTensor() || !value->type().shape().isStatic()) return kHostIslandElements + 1;
  int64_t n = 1;
  for (const Dim &d : value->type().shape().dims()) n *= d.size;
  return n;
}

}  // namespace

std::vector<const Value *> valuesRead(const Node &node, const Graph &graph) {
  std::vector<const Value *> read;
  for (const Value *in : node.inputs())
    if (in && std::find(read.begin(), read.end(), in) == read.end()) read.push_back(in);
  collectCaptures(node, graph, read);
  return read;
}

void inlineConstantNodes(Graph &graph) {
  std::vector<Node *> constants;
  for (const auto &node : graph.nodes())
    if (node->opType() == "Constant" && node->domain().empty() && node->attrTensor("value")) constants.push_back(node.get());
  for (Node *node : constants) {
    Value *out = node->output(0);
    Value *init = graph.addInitializer(graph.uniqueName(out->name()), *node->attrTensor("value"));
    init->setType(out->type());
    const bool isGraphOutput = std::find(graph.outputs().begin(), graph.outputs().end(), out) != graph.outputs().end();
    if (isGraphOutput) continue;  // Keep the node: a graph output stays a node output.
    graph.replaceAllUsesWith(out, init);
    graph.eraseNode(node);
  }
}

Partition partitionGraph(const Graph &graph, const LoweringOptions &options) {
  Partition result;
  std::vector<const Node *> nodes;
  std::map<const Node *, size_t> index;
  std::vector<std::string> reasons;
  for (const auto &node : graph.nodes()) {
    index[node.get()] = nodes.size();
    nodes.push_back(node.get());
    reasons.push_back(deviceUnsupportedReason(*node, options));
  }
  std::vector<std::vector<const Value *>> reads(nodes.size());
  for (size_t i = 0; i < nodes.size(); ++i) reads[i] = valuesRead(*nodes[i], graph);

  // A small device node between host nodes (the rotary angles' position * frequency between the
  // host's Cast and Cos, say) would split the device's work into two stages, each value between
  // them crossing the link twice: it runs on the host with its neighbours instead. Every input is a
  // constant, a graph input or a host node's result (one at least), and every reader is a host node.
  // One pass: such a node's neighbours are all on the host already, so moving it frees no other.
  std::map<const Value *, std::vector<size_t>> readers;
  for (size_t i = 0; i < nodes.size(); ++i)
    for (const Value *in : reads[i]) readers[in].push_back(i);
  const std::set<const Value *> graphOutputs(graph.outputs().begin(), graph.outputs().end());
  auto onHost = [&](size_t i) { return !reasons[i].empty(); };
  auto isHostIsland = [&](size_t i) {
    int64_t elements = 0;
    bool fromHost = false;
    for (const Value *in : reads[i]) {
      elements += elementsOf(in);
      if (in->hasInitializer() || !in->producer()) continue;
      if (!onHost(index.at(in->producer()))) return false;
      fromHost = true;
    }
    bool read = false;
    for (const Value *out : nodes[i]->outputs()) {
      if (!out) continue;
      if (graphOutputs.count(out)) return false;
      elements += elementsOf(out);
      for (size_t reader : readers[out]) {
        if (!onHost(reader)) return false;
        read = true;
      }
    }
    return fromHost && read && elements <= kHostIslandElements;
  };
  for (size_t i = 0; i < nodes.size(); ++i)
    if (!onHost(i) && isHostIsland(i))
      reasons[i] = "small, between host nodes: it runs on the host with them, saving two transfers over the link";
  std::vector<bool> device;
  for (size_t i = 0; i < nodes.size(); ++i) {
    device.push_back(!onHost(i));
    if (device.back()) {
      ++result.deviceNodes;
    } else {
      ++result.hostNodes;
      result.fallbacks.push_back(Fallback{nodes[i]->name(), nodes[i]->opType(), reasons[i]});
    }
  }

  // List scheduling that stays on one target while it has ready nodes. A subgraph's captures are
  // dependences like inputs: the node that owns the subgraph runs after their producers.
  std::vector<int> pending(nodes.size(), 0);
  std::vector<std::vector<size_t>> users(nodes.size());
  for (size_t i = 0; i < nodes.size(); ++i) {
    std::set<size_t> producers;
    for (const Value *in : reads[i])
      if (in->producer() && index.count(in->producer())) producers.insert(index[in->producer()]);
    // A node that overwrites an input's buffer in place comes after the input's other readers.
    if (const OpLowering *lowering = device[i] ? findOpLowering(*nodes[i]) : nullptr;
        lowering && lowering->inPlaceInput >= 0) {
      for (size_t j = 0; j < nodes.size(); ++j)
        if (j != i && std::find(reads[j].begin(), reads[j].end(), nodes[i]->input(lowering->inPlaceInput)) !=
                          reads[j].end())
          producers.insert(j);
    }
    pending[i] = static_cast<int>(producers.size());
    for (size_t p : producers) users[p].push_back(i);
  }
  std::set<size_t> ready[2];
  for (size_t i = 0; i < nodes.size(); ++i)
    if (pending[i] == 0) ready[device[i]].insert(i);
  bool current = !ready[1].empty();
  if (!ready[0].empty() && !ready[1].empty()) current = *ready[1].begin() < *ready[0].begin();
  size_t done = 0;
  while (done < nodes.size()) {
    if (ready[current].empty()) current = !current;
    if (result.stages.empty() || result.stages.back().onDevice != current) result.stages.push_back(Stage{current, {}, {}, {}});
    const size_t i = *ready[current].begin();
    ready[current].erase(ready[current].begin());
    result.stages.back().nodes.push_back(nodes[i]);
    ++done;
    for (size_t u : users[i])
      if (--pending[u] == 0) ready[device[u]].insert(u);
  }

  // Transfers: values crossing stage boundaries (captures included).
  std::map<const Value *, size_t> producedIn;
  for (size_t s = 0; s < result.stages.size(); ++s)
    for (const Node *n : result.stages[s].nodes)
      for (const Value *out : n->outputs())
        if (out) producedIn[out] = s;
  std::set<const Value *> crossing(graph.outputs().begin(), graph.outputs().end());
  for (size_t s = 0; s < result.stages.size(); ++s) {
    Stage &stage = result.stages[s];
    std::set<const Value *> seen;
    for (const Node *n : stage.nodes) {
      for (const Value *in : reads[index[n]]) {
        if (in->hasInitializer() || seen.count(in)) continue;
        auto it = producedIn.find(in);
        if (it != producedIn.end() && it->second == s) continue;
        seen.insert(in);
        stage.inputs.push_back(in);
        crossing.insert(in);
      }
    }
  }
  for (Stage &stage : result.stages)
    for (const Node *n : stage.nodes)
      for (const Value *out : n->outputs())
        if (out && crossing.count(out)) stage.outputs.push_back(out);
  return result;
}

}  // namespace tessel::nc::compiler
