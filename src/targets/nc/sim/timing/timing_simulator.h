// The event-driven timing simulation of one core (accelerator-model.md section 9). Streams: the
// in-order instruction streams of PE, DVE, ACT, POOL and SP (program order per engine) and the DMA
// queues (dma_copy instructions in program order per queue). The head of a stream starts at the
// earliest time when its engine allows it (initiation interval; for PE the LoadStationary /
// MultiplyMoving pipeline), every semaphore it waits for is visible (semLatencyCycles of the
// consumer's clock after the producer completed; DMA queues use the SP clock, the sequencer that
// triggers DMAs) and, for compute engines, the shared ports it needs are free. A compute instruction
// completes at start + II + pipeline latency; a DMA trigger hands the copy to the DMA model, which
// completes it when its data has moved. Time advances from event to event (a completion, an engine
// or port freeing, a DMA share starting or ending); ties start in program order, so a run is
// deterministic. If nothing can happen while instructions remain, the run is deadlocked and the error
// names every blocked stream head and the semaphore values it waits for.
//
// Several cores run together on one clock (simulateTimingCores): each core as above, except that a
// collective (all_gather, all_reduce on SP) starts only when every core has reached the same
// collective, counted in program order, and its waits are met; it then takes the profile's ring time
// (costCollectiveNs) on every core at once.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "support/diagnostic.h"
#include "targets/nc/isa/instruction.h"
#include "targets/nc/machine/profile.h"
#include "targets/nc/sim/timeline.h"

namespace tessel::nc {

/// What the driver does as instructions start and increments complete.
class TimingObserver {
 public:
  virtual ~TimingObserver() = default;
  /// Instruction `index` starts (a DMA: is triggered; a matmul: starts its first phase). Calls come
  /// in simulated start order, ties in program order. An error stops the simulation.
  virtual Status onStart(size_t index) = 0;
  /// Semaphore `id` receives its next increment, from instruction `producer`; calls come in
  /// completion order.
  virtual void onIncrement(uint16_t id, size_t producer) = 0;
};

/// Called when the k-th collective starts on every core: `indices[c]` is its instruction in core c's
/// program. An error stops the simulation.
using CollectiveHandler = std::function<Status(std::span<const size_t> indices)>;

/// Runs the timing model over one program per core (each already verified), all on one clock; one
/// timeline per core. `observers` is empty or holds one observer (or null) per core. Errors: the
/// k-th collectives of the cores differ (kind, core count, dst size, dtype, op) or some core has
/// more of them, a collective's `cores` is not programs.size(), or a deadlock (every core's blocked
/// heads, and which collectives wait for other cores).
Expected<std::vector<Timeline>> simulateTimingCores(std::span<const std::span<const Instruction>> programs,
                                                    const MachineProfile &profile,
                                                    std::span<TimingObserver *const> observers,
                                                    const CollectiveHandler &onCollective);

/// Runs the timing model over `program` (already verified) as the only core. `observer` may be null.
Expected<Timeline> simulateTiming(std::span<const Instruction> program, const MachineProfile &profile,
                                  TimingObserver *observer);

}  // namespace tessel::nc
