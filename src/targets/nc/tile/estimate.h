// Time estimates of single instructions for the list scheduler: how long the instruction keeps its
// engine busy and how long after that its results become visible. A compute instruction's numbers
// are the timing simulator's own (isa/instruction_cost.h: one function, so the two cannot disagree;
// tests/targets/nc/tile/estimate_test.cpp checks it); a matmul's busy time is its stream pair (the
// LoadStationary hidden behind the previous MultiplyMoving). DMA copies report their trigger latency
// and data-phase time separately (machine/cost.h), because transfers overlap triggers with earlier
// data phases.
#pragma once

#include "targets/nc/isa/instruction.h"
#include "targets/nc/machine/profile.h"

namespace tessel::nc::tile {

/// The scheduler's view of one instruction on one engine, in ns.
struct InstructionEstimate {
  double busyNs = 0;          // Engine occupancy (initiation interval); DMA: data phase of the busiest engine.
  double latencyNs = 0;       // After busy until results are visible (pipeline latency); DMA: 0.
  double triggerNs = 0;       // DMA: trigger to first byte.
  double dmaEngineShare = 0;  // DMA: fraction of the core's DMA engines the copy occupies.
  bool dvePerfMode = false;   // DVE: runs in the nc-v3 performance mode (shares POOL's SBUF bus).
};

/// Estimates `insn` as if run on `engine` (its operands placed). Precondition: the engine may run it.
InstructionEstimate estimateInstruction(const Instruction &insn, Engine engine, const MachineProfile &profile);

/// How many DMA engines a dma_copy's rows are dealt to (engines 0..n-1, dmaPartitionsPerEngine()
/// rows each; rows are the SBUF side's partitions, or an HBM->HBM copy's outermost dst dim).
int64_t dmaEnginesUsed(const Instruction &insn, const MachineProfile &profile);

/// The semaphore latency seen by a consumer on `engine` (DMA: the SP clock, which triggers DMAs), ns.
double semaphoreLatencyNs(const MachineProfile &profile, Engine engine);

}  // namespace tessel::nc::tile
