// Prefetch distance for loads nothing waits on (weights, constants). The list scheduler releases such
// a load at time 0, so a kernel's far-future weights all start together and share the DMA engines
// with the loads its first instructions wait for. After a first schedule, each load whose first reader
// starts later than its lead (a few times its own transfer time, plus a floor) is ordered after the
// compute op that completes last before that point (a Prefetch dependence: a semaphore wait), and the
// kernel is scheduled again; the compiler keeps the second schedule when it is at least 1% faster.
// A kernel whose DMA engines are busy nearly throughout gets no gates. The gate has a lower op index
// and ends before every reader of the load starts, so the new edges close no cycle.
#pragma once

#include <cstdint>
#include <vector>

#include "targets/nc/isa/instruction.h"
#include "targets/nc/machine/profile.h"
#include "targets/nc/tile/dependences.h"
#include "targets/nc/tile/schedule.h"

namespace tessel::nc::tile {

/// A Prefetch dependence to add: load `load` waits for op `gate`.
struct PrefetchGate {
  int32_t load = -1;
  int32_t gate = -1;
};

/// The gates `first` (a schedule of `insns` under `deps`) calls for; empty when none.
std::vector<PrefetchGate> prefetchGates(const std::vector<Instruction> &insns, const Schedule &first,
                                        const MachineProfile &profile, const DependenceGraph &deps);

}  // namespace tessel::nc::tile
