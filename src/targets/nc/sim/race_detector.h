// The race detector: finds SBUF, PSUM and HBM bytes that two instructions on different threads touch,
// at least one of them writing, with nothing ordering the two. Threads are the five engine streams
// (PE, DVE, ACT, POOL, SP) and the DMA queues. Order (happens-before) is tracked with vector clocks:
// instructions on one thread are ordered by program (queue) order, and a wait "S >= v" orders an
// instruction after the producers of the first v increments of S, in the order the timing simulation
// completed them. The timing simulator drives it: onIncrement() in completion order, onStart() in
// start order. Each access is compared with the recorded accesses it overlaps; a recorded access is
// dropped once a later access that is ordered after it covers its bytes (a write, or a read covering
// a read: any later conflict with the dropped one also conflicts with the covering one), or once
// every thread with instructions left is ordered after it, so memory stays bounded by the accesses
// in flight.
#pragma once

#include <cstddef>
#include <cstdint>
#include <set>
#include <span>
#include <unordered_map>
#include <utility>
#include <vector>

#include "targets/nc/isa/instruction.h"
#include "targets/nc/machine/profile.h"
#include "targets/nc/isa/footprint.h"
#include "targets/nc/sim/simulator.h"

namespace tessel::nc {

class RaceDetector {
 public:
  /// At most this many races are reported (distinct instruction pairs, first found first).
  static constexpr size_t kMaxReportedRaces = 256;

  RaceDetector(std::span<const Instruction> program, const MachineProfile &profile);

  /// The next increment of semaphore `id` (in completion order) came from instruction `producer`,
  /// which has started.
  void onIncrement(uint16_t id, size_t producer);

  /// Instruction `index` starts (its waits are satisfied): orders it and checks its accesses.
  void onStart(size_t index);

  /// The races found so far.
  const std::vector<Race> &races() const { return races_; }
  std::vector<Race> takeRaces() { return std::move(races_); }

  /// Recorded accesses still kept (for tests of the memory bound).
  size_t liveAccessCount() const;

  /// The thread of an instruction: its engine, or DMA queue q as thread kNumEngines - 1 + q.
  static int threadOf(const Instruction &insn);

 private:
  using VectorClock = std::vector<uint32_t>;
  struct Access {
    Footprint footprint;
    size_t instruction = 0;
    int thread = 0;
    uint32_t epoch = 0;
    bool write = false;
    bool dead = false;
  };

  void checkAccess(const Footprint &footprint, bool write, size_t index, const VectorClock &clock);
  void reportRace(const Access &earlier, const Footprint &footprint, bool write, size_t index, int64_t partition,
                  uint64_t offsetBytes);
  void prune();
  std::string threadName(int thread) const;

  std::span<const Instruction> program_;
  int numThreads_ = 0;
  std::vector<VectorClock> threadClocks_;  // The clock of each thread's last started instruction.
  std::vector<size_t> remaining_;          // Instructions not yet started, per thread.
  std::unordered_map<size_t, VectorClock> producerClocks_;  // Started, increment not yet completed.
  std::unordered_map<uint16_t, std::vector<VectorClock>> incrementJoins_;  // [k]: join of the first k+1 producers.
  std::vector<Access> accesses_[kNumMemSpaces];
  std::set<std::pair<size_t, size_t>> reportedPairs_;
  std::vector<Race> races_;
  size_t startsSincePrune_ = 0;
};

}  // namespace tessel::nc
