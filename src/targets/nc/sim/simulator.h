// The simulator of one core, or of several cores of a chip running together: runs a program's
// instructions through the timing model (section 9: in-order engine queues, semaphores, ports, DMA
// queues and engines, throttling) and, unless timing-only, executes each one on a MachineState in
// simulated start order (functional/). The race detector checks every SBUF/PSUM access against the happens-before order the semaphores and queue
// order establish. The result is the Timeline the profiler reads. With several cores, each runs as
// above and the k-th collective of every core is one exchange between their states (timing in
// timing/timing_simulator.h).
#pragma once

#include <span>
#include <string>
#include <vector>

#include "support/diagnostic.h"
#include "targets/nc/isa/instruction.h"
#include "targets/nc/machine/profile.h"
#include "targets/nc/sim/machine_state.h"
#include "targets/nc/sim/timeline.h"

namespace tessel::nc {

struct SimulateOptions {
  bool timingOnly = false;    // Skip the numerics (no MachineState needed) for fast sweeps.
  bool detectRaces = true;    // Report unordered cross-engine accesses to the same SBUF/PSUM bytes.
};

/// A data race: two instructions on different engines/queues touched the same bytes, at least one
/// writing, with no semaphore ordering them.
struct Race {
  size_t first = 0, second = 0;   // Instruction indices (first was simulated earlier).
  MemSpace space = MemSpace::SBUF;
  int64_t partition = 0;
  uint64_t offsetBytes = 0;       // First overlapping byte within the partition.
  std::string message;            // Both instructions, disassembled, and the bytes.
};

struct SimulationResult {
  Timeline timeline;
  std::vector<Race> races;
};

/// Simulates `program` on `profile`. `state` may be null only with timingOnly. Errors: a deadlock
/// (a wait no increment can satisfy, naming the instruction and semaphore), an out-of-bounds access,
/// undefined PSUM accumulation, or an instruction the verifier rejects.
Expected<SimulationResult> simulate(std::span<const Instruction> program, const MachineProfile &profile,
                                    MachineState *state, const SimulateOptions &options = {});

/// Simulates `programs[c]` on core c of one chip, all together on one clock; states[c] is core c's
/// memory (null only with timingOnly). One result per core; instruction indices in each are into
/// that core's program. The k-th collective (all_gather, all_reduce) of every core starts when all
/// cores have reached it, exchanges the dst data of the states then, and takes the profile's ring
/// time. Errors as simulate(), prefixed with the core where one is at fault, and: collectives that
/// differ between cores at the same position (kind, size, dtype, op), a core with more of them than
/// another, or a `cores` field other than programs.size(). One program gives what simulate() gives.
Expected<std::vector<SimulationResult>> simulateCores(std::span<const std::vector<Instruction>> programs,
                                                      const MachineProfile &profile,
                                                      std::span<MachineState *const> states,
                                                      const SimulateOptions &options = {});

}  // namespace tessel::nc
