// The vector-clock race detector; see race_detector.h.
#include "targets/nc/sim/race_detector.h"

#include <algorithm>

#include <fmt/format.h>

#include "targets/nc/isa/disassembler.h"

namespace tessel::nc {
namespace {

static_assert(static_cast<int>(Engine::DMA) == kNumEngines - 1, "DMA must be the last engine");

// Compact the recorded accesses after this many starts (dropping dead and globally ordered ones).
constexpr size_t kPruneIntervalStarts = 64;

void joinInto(std::vector<uint32_t> &into, const std::vector<uint32_t> &other) {
  for (size_t t = 0; t < into.size(); ++t) into[t] = std::max(into[t], other[t]);
}

// Operand slots an instruction writes: "dst" and "accum" (and a matmul accumulating reads its dst too).
bool slotWrites(const Instruction &insn, size_t slot) {
  const auto &slots = operandSlots(insn.opcode);
  return slot < slots.size() && (slots[slot].name == "dst" || slots[slot].name == "accum");
}

}  // namespace

int RaceDetector::threadOf(const Instruction &insn) {
  if (insn.engine == Engine::DMA) return kNumEngines - 1 + insn.queue;
  return static_cast<int>(insn.engine);
}

RaceDetector::RaceDetector(std::span<const Instruction> program, const MachineProfile &profile) : program_(program) {
  int queues = static_cast<int>(profile.dma.queuesPerEngine);
  for (const Instruction &insn : program)
    if (insn.engine == Engine::DMA) queues = std::max(queues, insn.queue + 1);
  numThreads_ = kNumEngines - 1 + queues;
  threadClocks_.assign(static_cast<size_t>(numThreads_), VectorClock(static_cast<size_t>(numThreads_), 0));
  remaining_.assign(static_cast<size_t>(numThreads_), 0);
  for (const Instruction &insn : program) ++remaining_[static_cast<size_t>(threadOf(insn))];
}

std::string RaceDetector::threadName(int thread) const {
  if (thread < kNumEngines - 1) return std::string(engineName(static_cast<Engine>(thread)));
  return fmt::format("DMA.q{}", thread - (kNumEngines - 1));
}

void RaceDetector::onIncrement(uint16_t id, size_t producer) {
  auto found = producerClocks_.find(producer);
  if (found == producerClocks_.end()) return;  // Not started: cannot happen when driven by the simulator.
  std::vector<VectorClock> &joins = incrementJoins_[id];
  VectorClock joined = std::move(found->second);
  producerClocks_.erase(found);
  if (!joins.empty()) joinInto(joined, joins.back());
  joins.push_back(std::move(joined));
}

void RaceDetector::onStart(size_t index) {
  const Instruction &insn = program_[index];
  const int thread = threadOf(insn);
  VectorClock clock = threadClocks_[static_cast<size_t>(thread)];
  ++clock[static_cast<size_t>(thread)];
  for (const SemaphoreWait &wait : insn.waits) {
    if (wait.value == 0) continue;
    auto joins = incrementJoins_.find(wait.id);
    if (joins == incrementJoins_.end() || joins->second.size() < wait.value) continue;
    joinInto(clock, joins->second[wait.value - 1]);
  }
  threadClocks_[static_cast<size_t>(thread)] = clock;
  --remaining_[static_cast<size_t>(thread)];
  if (insn.increment) producerClocks_[index] = clock;

  struct Pending {
    Footprint footprint;
    bool write;
  };
  std::vector<Pending> pending;
  for (size_t slot = 0; slot < insn.operands.size(); ++slot) {
    if (!insn.operands[slot]) continue;
    Footprint footprint = operandFootprint(insn, slot);
    bool write = slotWrites(insn, slot);
    if (write && insn.opcode == Opcode::NcMatmul && insn.accumulate) pending.push_back({footprint, false});
    pending.push_back({std::move(footprint), write});
  }
  for (const Pending &access : pending) checkAccess(access.footprint, access.write, index, clock);
  const uint32_t epoch = clock[static_cast<size_t>(thread)];
  for (Pending &access : pending)
    accesses_[static_cast<int>(access.footprint.space)].push_back(
        {std::move(access.footprint), index, thread, epoch, access.write, false});
  if (++startsSincePrune_ >= kPruneIntervalStarts) prune();
}

void RaceDetector::checkAccess(const Footprint &footprint, bool write, size_t index, const VectorClock &clock) {
  const int64_t firstPartition = footprint.startPartition, endPartition = firstPartition + footprint.partitionCount;
  for (Access &earlier : accesses_[static_cast<int>(footprint.space)]) {
    if (earlier.dead) continue;
    const Footprint &other = earlier.footprint;
    int64_t otherEnd = other.startPartition + other.partitionCount;
    if (other.startPartition >= endPartition || firstPartition >= otherEnd) continue;
    if (other.lowBytes() >= footprint.highBytes() || footprint.lowBytes() >= other.highBytes()) continue;
    bool ordered = clock[static_cast<size_t>(earlier.thread)] >= earlier.epoch;
    if (!ordered) {
      if (!write && !earlier.write) continue;
      if (std::optional<uint64_t> byte = firstCommonByte(other.ranges, footprint.ranges))
        reportRace(earlier, footprint, write, index, std::max(firstPartition, other.startPartition), *byte);
      continue;
    }
    if (!write && earlier.write) continue;
    if (firstPartition <= other.startPartition && otherEnd <= endPartition && rangesCover(footprint.ranges, other.ranges))
      earlier.dead = true;
  }
}

void RaceDetector::reportRace(const Access &earlier, const Footprint &footprint, bool write, size_t index,
                              int64_t partition, uint64_t offsetBytes) {
  if (races_.size() >= kMaxReportedRaces) return;
  if (!reportedPairs_.insert({earlier.instruction, index}).second) return;
  Race race;
  race.first = earlier.instruction;
  race.second = index;
  race.space = footprint.space;
  race.partition = partition;
  race.offsetBytes = offsetBytes;
  std::string where = footprint.space == MemSpace::HBM
                          ? fmt::format("hbm byte {}", offsetBytes)
                          : fmt::format("{} partition {} byte {}", memSpaceName(footprint.space), partition, offsetBytes);
  race.message = fmt::format(
      "data race on {}: instruction {} ({}) {} it and instruction {} ({}) {} it, and no semaphore orders them\n"
      "  #{}: {}\n  #{}: {}",
      where, earlier.instruction, threadName(earlier.thread), earlier.write ? "writes" : "reads", index,
      threadName(threadOf(program_[index])), write ? "writes" : "reads", earlier.instruction,
      formatInstruction(program_[earlier.instruction]), index, formatInstruction(program_[index]));
  races_.push_back(std::move(race));
}

void RaceDetector::prune() {
  startsSincePrune_ = 0;
  // frontier[t]: the epoch of thread t that every thread with instructions left is ordered after.
  VectorClock frontier(static_cast<size_t>(numThreads_), UINT32_MAX);
  for (int thread = 0; thread < numThreads_; ++thread) {
    if (remaining_[static_cast<size_t>(thread)] == 0) continue;
    const VectorClock &clock = threadClocks_[static_cast<size_t>(thread)];
    for (size_t t = 0; t < frontier.size(); ++t) frontier[t] = std::min(frontier[t], clock[t]);
  }
  for (std::vector<Access> &list : accesses_) {
    std::erase_if(list, [&](const Access &access) {
      return access.dead || access.epoch <= frontier[static_cast<size_t>(access.thread)];
    });
  }
}

size_t RaceDetector::liveAccessCount() const {
  size_t live = 0;
  for (const std::vector<Access> &list : accesses_)
    for (const Access &access : list) live += access.dead ? 0 : 1;
  return live;
}

}  // namespace tessel::nc
