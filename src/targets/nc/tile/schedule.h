// The list scheduler: picks an engine for every op the kernel left open (among the engines that may
// run it and reach its operands, the one where it would finish first), assigns DMA copies to queues
// (round-robin among the least loaded) and orders each engine's and queue's instructions. Priority
// is the longest cost-weighted path to the end of the kernel (estimate.h; pipeline and semaphore
// latency on cross-stream edges). The scheduler simulates each stream's availability, the shared
// SBUF/PSUM ports of the profile and the DMA engines shared by all queues, one event at a time
// (O(n log n)); its start times order the program.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "targets/nc/isa/instruction.h"
#include "targets/nc/machine/profile.h"
#include "targets/nc/tile/dependences.h"

namespace tessel::nc::tile {

/// Streams: the compute engines and SP by Engine value, then one per DMA queue.
inline constexpr int kFirstDmaStream = 5;

/// "PE", "DVE", "ACT", "POOL", "SP" or "DMA.q<N>" (the Timeline's track names).
std::string streamName(int stream);

/// Where and when one op runs.
struct ScheduledOp {
  Engine engine = Engine::DVE;
  uint8_t queue = 0;        // DMA only.
  int32_t stream = -1;
  double startNs = 0;       // Issue (DMA: trigger).
  double endNs = 0;         // Engine free again (DMA: data moved).
  double completeNs = 0;    // Results visible to other streams (before the semaphore latency).
};

struct Schedule {
  std::vector<ScheduledOp> ops;   // Per op.
  std::vector<int32_t> order;     // Ops by start time: the program order.
  int numStreams = 0;
  double makespanNs = 0;          // Last completion.
};

/// Schedules `insns` (one per op; operands placed). `candidates[i]` holds the engineBit()s op i may
/// run on (one bit when fixed; kDMA for copies); `dmaQueues` queues carry the DMA copies.
/// Fails only on a profile whose port rules do not parse.
Expected<Schedule> scheduleOps(const std::vector<Instruction> &insns, const std::vector<uint8_t> &candidates,
                               const DependenceGraph &deps, const MachineProfile &profile, int dmaQueues);

}  // namespace tessel::nc::tile
