// Lowering one device stage, the pipeline's memory plan and lowering steps: each node's emitter
// records its tile ops in one kernel (the layout plan is made as it goes: each emitter takes its
// operands in the form it needs, relaid out where they are not, see lowering.h); after each node,
// while the live activations take more than their share of SBUF, the one read again the latest is
// spilled to HBM; the stage outputs are stored; then the kernel compile (allocation, dependences,
// schedule, semaphores: tile/compile.h) makes the program.
//
// Needs: a stage from partitionGraph, whose nodes the partition checked (so no emitter refuses one).
// Decides: every activation's layout, which activations spill, the program and its HBM layout.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "targets/nc/compiler/executable.h"

namespace tessel::nc::compiler {

/// Lowers and compiles device stage `stageIndex`. `nodeIds`/`nodeNames` collect the node labels the
/// program's instructions point at (shared by all the executable's programs). An error names the
/// node whose emit, spill or output store failed, or the kernel compile's reason.
Expected<DeviceProgram> lowerStage(const Stage &stage, size_t stageIndex, const MachineProfile &profile,
                                   const LoweringOptions &options, std::map<std::string, int32_t> &nodeIds,
                                   std::vector<std::string> &nodeNames);

}  // namespace tessel::nc::compiler
