// Semaphore insertion for a scheduled program. Every stream (compute engine or DMA queue) owns one
// semaphore (its stream index) that counts its completions of instructions some other stream needs;
// streams complete in order, so "s >= n" means that stream's n-th such instruction is done. A
// consumer waits for each producer stream at the highest ordinal it needs, minus what its stream
// already knows: from its own earlier waits and, transitively, from what the producers it waited for
// knew. Same-engine dependences need no semaphore (engines run in order); two DMAs on one queue
// do (a queue overlaps transfers). A DMA queue completes in order only while each counted copy uses
// at least the DMA engines of the one before it (engines serve a queue FIFO); a counted copy on
// fewer engines waits for the previous counted one. Waits beyond kMaxWaits on one instruction move to an
// instruction it already waits for (or an earlier one of its stream) that comes after their producer.
#pragma once

#include <cstdint>
#include <vector>

#include "support/diagnostic.h"
#include "targets/nc/isa/instruction.h"
#include "targets/nc/machine/profile.h"
#include "targets/nc/tile/dependences.h"
#include "targets/nc/tile/schedule.h"

namespace tessel::nc::tile {

/// Fills `waits` and `increment` of `program`, whose instruction k is op schedule.order[k].
Status insertSemaphores(std::vector<Instruction> &program, const Schedule &schedule, const DependenceGraph &deps,
                        const MachineProfile &profile);

}  // namespace tessel::nc::tile
