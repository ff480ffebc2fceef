// The Chrome/Perfetto trace of one simulated run (accelerator-model.md section 8): a JSON object
// with "traceEvents" that ui.perfetto.dev and chrome://tracing load directly. Process 0 is the core;
// each track (PE.LoadStationary, PE.Matmul, ACT, DVE, POOL, SP, DMA.q0, ...) is one thread, named by
// a thread_name metadata event and ordered by thread_sort_index. Every timeline event is a complete
// ("X") event with ts/dur in microseconds to the picosecond, and args naming the instruction, its
// disassembly and operands, the semaphore it waited on and its stall. Counter ("C") tracks show PE
// utilization, pending DMA transfers and DMA throughput over time.
#pragma once

#include <span>
#include <string>

#include "targets/nc/isa/instruction.h"
#include "targets/nc/sim/timeline.h"

namespace tessel::nc {

/// Counter resolution: the run is cut into this many bins for the utilization and throughput
/// counters (pending DMAs change exactly at event boundaries instead).
inline constexpr int kTraceCounterBins = 1000;

/// The trace of `timeline` as JSON text. `program` supplies the disassembly in the args; it may be
/// empty. Events that overlap on one track (several outstanding DMA transfers on a queue) go to
/// extra threads named "<track> [2]", "<track> [3]", ... so that every thread's slices are disjoint.
std::string formatTrace(const Timeline &timeline, std::span<const Instruction> program);

}  // namespace tessel::nc
