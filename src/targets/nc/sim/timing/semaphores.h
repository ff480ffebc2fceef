// The semaphores of one core as the timing simulator sees them (accelerator-model.md sections 2 and
// 9.1): every semaphore starts at 0 and only grows; an instruction's increment happens when it
// completes and becomes visible to a waiting engine semLatencyCycles of that engine later. The table
// holds the completion times of the increments processed so far; since the simulator processes
// completions in time order, a wait's satisfaction time is final once enough increments are in.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "targets/nc/isa/instruction.h"

namespace tessel::nc {

class SemaphoreTable {
 public:
  /// Records one increment of semaphore `id` completing at `completeNs` (not earlier than any
  /// increment recorded before, up to rounding; kept sorted either way).
  void addIncrement(uint16_t id, double completeNs);

  /// The number of increments recorded for `id`.
  uint32_t count(uint16_t id) const;

  /// When `wait` is satisfied for a consumer that sees increments `visibleLatencyNs` after they
  /// complete: 0 for a wait on value 0, else the value-th completion plus the latency; nullopt when
  /// fewer than `value` increments have been recorded.
  std::optional<double> satisfiedAtNs(const SemaphoreWait &wait, double visibleLatencyNs) const;

 private:
  std::vector<std::vector<double>> completionsNs_;  // Indexed by semaphore id, grown on demand.
};

}  // namespace tessel::nc
