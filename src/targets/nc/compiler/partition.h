// Partitioning: every node goes to the accelerator when an emitter can run it (lowering.h), else to
// the host, with the reason. Nodes are then ordered, respecting dependences, so that each target's
// nodes run in as few contiguous stages as possible; every value that crosses from one stage to the
// next is an explicit host <-> device transfer (a device stage's HBM input or output).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "targets/nc/compiler/lowering.h"

namespace tessel::nc::compiler {

struct Stage {
  bool onDevice = false;
  std::vector<const Node *> nodes;     // In execution order.
  std::vector<const Value *> inputs;   // Produced by earlier stages or graph inputs (device: to HBM).
  std::vector<const Value *> outputs;  // Used by later stages or graph outputs (device: from HBM).
};

struct Fallback {
  std::string node, opType, reason;
};

struct Partition {
  std::vector<Stage> stages;
  std::vector<Fallback> fallbacks;     // Host nodes and why, in graph order.
  int deviceNodes = 0, hostNodes = 0;
};

/// Every value of `graph` that `node` reads: its inputs and, for a node with subgraphs (If, Loop, Scan),
/// the values of `graph` its subgraphs read (implicit captures), each once, inputs first.
std::vector<const Value *> valuesRead(const Node &node, const Graph &graph);

/// Turns Constant nodes into initializers, so that emitters see their values (Reshape's shape, ...).
void inlineConstantNodes(Graph &graph);

/// Partitions `graph` (topologically sorted, static shapes): a node goes to the device when
/// deviceUnsupportedReason (options.profile set) finds no reason, which is exact: lowering never
/// refuses a node it accepts.
Partition partitionGraph(const Graph &graph, const LoweringOptions &options);

}  // namespace tessel::nc::compiler
