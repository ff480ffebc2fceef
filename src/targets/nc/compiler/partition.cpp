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

Partition partitionGraph(const Graph &graph, const LoweringOptions &options,
                         const std::map<const Node *, std::string> &forceHost) {
  Partition result;
  std::vector<const Node *> nodes;
  std::map<const Node *, size_t> index;
  std::vector<bool> device;
  for (const auto &node : graph.nodes()) {
    std::string reason = deviceUnsupportedReason(*node, options);
    if (auto forced = forceHost.find(node.get()); reason.empty() && forced != forceHost.end()) reason = forced->second;
    index[node.get()] = nodes.size();
    nodes.push_back(node.get());
    device.push_back(reason.empty());
    if (reason.empty()) {
      ++result.deviceNodes;
    } else {
      ++result.hostNodes;
      result.fallbacks.push_back(Fallback{node->name(), node->opType(), reason});
    }
  }

  // List scheduling that stays on one target while it has ready nodes. A subgraph's captures are
  // dependences like inputs: the node that owns the subgraph runs after their producers.
  std::vector<std::vector<const Value *>> reads(nodes.size());
  for (size_t i = 0; i < nodes.size(); ++i) reads[i] = valuesRead(*nodes[i], graph);
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

Stage stagePrefix(const Stage &stage, size_t count) {
  Stage prefix{stage.onDevice, {stage.nodes.begin(), stage.nodes.begin() + static_cast<std::ptrdiff_t>(count)}, {}, {}};
  std::set<const Value *> made, readLater(stage.outputs.begin(), stage.outputs.end());
  for (size_t i = count; i < stage.nodes.size(); ++i)
    for (const Value *in : stage.nodes[i]->inputs())
      if (in) readLater.insert(in);
  for (const Node *n : prefix.nodes) {
    for (const Value *in : n->inputs())
      if (in && !in->hasInitializer() && !made.count(in) &&
          std::find(prefix.inputs.begin(), prefix.inputs.end(), in) == prefix.inputs.end())
        prefix.inputs.push_back(in);
    for (const Value *out : n->outputs()) {
      if (!out) continue;
      made.insert(out);
      if (readLater.count(out)) prefix.outputs.push_back(out);
    }
  }
  return prefix;
}

std::string printPartition(const Partition &partition) {
  std::string text;
  for (size_t s = 0; s < partition.stages.size(); ++s) {
    const Stage &stage = partition.stages[s];
    std::vector<std::string> in, out;
    for (const Value *v : stage.inputs) in.push_back(v->name());
    for (const Value *v : stage.outputs) out.push_back(v->name());
    text += fmt::format("stage {} on {}: {} nodes\n", s, stage.onDevice ? "device" : "host", stage.nodes.size());
    if (!in.empty()) text += fmt::format("  {} {}\n", stage.onDevice ? "host -> device:" : "in:", fmt::join(in, ", "));
    if (!out.empty()) text += fmt::format("  {} {}\n", stage.onDevice ? "device -> host:" : "out:", fmt::join(out, ", "));
  }
  if (!partition.fallbacks.empty()) {
    text += fmt::format("host fallbacks: {}\n", partition.fallbacks.size());
    for (const Fallback &f : partition.fallbacks) text += fmt::format("  {} ({}): {}\n", f.node, f.opType, f.reason);
  }
  return text;
}

}  // namespace tessel::nc::compiler
