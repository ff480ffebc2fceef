// The timing simulation's event loop; see timing_simulator.h. Each pass of the loop takes one point
// in time: it retires every core's compute increments and DMA completions due by then, then starts
// every stream head that can start at that time (per core, lowest program index first, re-evaluating
// after each start because a start can take a port), then the collective every core has reached, if
// any, then moves to the next time anything can change on any core.
#include "targets/nc/sim/timing/timing_simulator.h"

#include <algorithm>
#include <functional>
#include <limits>
#include <optional>
#include <queue>
#include <unordered_map>
#include <vector>

#include <fmt/format.h>

#include "targets/nc/machine/cost.h"
#include "targets/nc/sim/timing/dma_model.h"
#include "targets/nc/sim/timing/dma_transfer.h"
#include "targets/nc/isa/instruction_cost.h"
#include "targets/nc/sim/timing/pe_pipeline.h"
#include "targets/nc/isa/ports.h"
#include "targets/nc/sim/timing/semaphores.h"

namespace tessel::nc {
namespace {

constexpr double kInfinity = std::numeric_limits<double>::infinity();
static_assert(static_cast<int>(Engine::DMA) == kNumEngines - 1, "DMA must be the last engine");

// Streams 0..kComputeStreams-1 are the compute engines (Engine values PE..SP); DMA queue q is stream
// kComputeStreams + q.
constexpr int kComputeStreams = kNumEngines - 1;
constexpr int kPeStream = static_cast<int>(Engine::PE);

struct Increment {
  double timeNs = 0;
  uint64_t sequence = 0;
  uint16_t id = 0;
  size_t producer = 0;
};

struct LaterIncrement {
  bool operator()(const Increment &a, const Increment &b) const {
    return a.timeNs != b.timeNs ? a.timeNs > b.timeNs : a.sequence > b.sequence;
  }
};

// When a stream head could start and what holds it.
struct Candidate {
  double startNs = kInfinity;
  double readyNs = 0;      // What the engine (or queue order) allows.
  double semaphoreNs = 0;  // All waits visible.
  double portNs = 0;       // Shared ports free.
  std::optional<SemaphoreWait> waitedOn;
};

struct LastStarted {
  bool valid = false;
  double endNs = 0;
  PortUse use;
};

constexpr int kSpStream = static_cast<int>(Engine::SP);

// The timing state of one core. The multi-core loop (simulateTimingCores) drives it: retireDue and
// startReady at each point in time, startCollective when every core has reached its next collective.
class TimingRun {
 public:
  TimingRun(std::span<const Instruction> program, const MachineProfile &profile, TimingObserver *observer)
      : program_(program), profile_(profile), observer_(observer), pe_(profile),
        dma_(profile, usedQueues(program)) {}

  Status prepare();
  void retireDue(double nowNs);
  /// Starts every stream head that can start at `nowNs` except a collective, which only arrives
  /// (collectiveArrived()); returns when the next head could start.
  Expected<double> startReady(double nowNs);
  /// The collective at the head of SP, if its waits and engine allow it to start by now.
  bool collectiveArrived() const { return arrived_.has_value(); }
  /// The index of the next collective this core has not started, if any.
  std::optional<size_t> nextCollective() const {
    if (streamDone(kSpStream)) return std::nullopt;
    return headOf(kSpStream);
  }
  /// Starts the arrived collective at `nowNs` (when the last core arrived).
  Status startCollective(double nowNs);
  double nextEventNs() const;
  bool allStarted() const {
    return std::all_of(activeStreams_.begin(), activeStreams_.end(), [&](int stream) { return streamDone(stream); });
  }
  /// The blocked stream heads of this core, one line each ("" when none is blocked on a semaphore).
  std::string blockedHeads() const;
  size_t neverStarted() const;
  Timeline finish();

 private:
  static std::vector<int> usedQueues(std::span<const Instruction> program);
  bool streamDone(int stream) const { return heads_[stream] == streams_[stream].size(); }
  size_t headOf(int stream) const { return streams_[stream][heads_[stream]]; }
  Candidate candidate(int stream) const;
  Status start(int stream, const Candidate &candidate, double nowNs);
  void startDma(int stream, size_t index, const Candidate &candidate, double nowNs, DmaTransferPlan plan);
  void startPe(size_t index, const Candidate &candidate, double nowNs);
  void startCompute(int stream, size_t index, const Candidate &candidate, double nowNs);
  void addIncrement(const Instruction &insn, size_t index, double completeNs);
  void retireIncrement(uint16_t id, size_t producer, double completeNs);
  TimelineEvent makeEvent(size_t index, std::string track, std::string name, const Candidate &candidate,
                          double startNs) const;
  std::string streamName(int stream) const;

  std::span<const Instruction> program_;
  const MachineProfile &profile_;
  TimingObserver *observer_;
  std::vector<PortRule> portRules_;
  std::vector<std::vector<size_t>> streams_;
  std::vector<size_t> heads_;
  std::vector<int> activeStreams_;
  std::vector<double> semLatencyNs_;  // Per stream.
  std::vector<InstructionCost> costs_;
  std::vector<PortUse> portUses_;
  double engineFreeNs_[kComputeStreams] = {};
  LastStarted lastStarted_[kComputeStreams];
  std::vector<double> queueReadyNs_;  // Per DMA queue: the previous trigger.
  PePipeline pe_;
  SemaphoreTable semaphores_;
  DmaModel dma_;
  std::priority_queue<Increment, std::vector<Increment>, LaterIncrement> increments_;
  uint64_t sequence_ = 0;
  std::unordered_map<size_t, size_t> dmaEvents_;  // Instruction -> its event, until it completes.
  std::vector<DmaCompletion> completions_;
  std::optional<Candidate> arrived_;  // The collective at the head of SP, once it could start.
  Timeline timeline_;
};

std::vector<int> TimingRun::usedQueues(std::span<const Instruction> program) {
  std::vector<int> queues;
  for (const Instruction &insn : program)
    if (insn.engine == Engine::DMA) queues.push_back(insn.queue);
  std::sort(queues.begin(), queues.end());
  queues.erase(std::unique(queues.begin(), queues.end()), queues.end());
  return queues;
}

std::string TimingRun::streamName(int stream) const {
  if (stream < kComputeStreams) return std::string(engineName(static_cast<Engine>(stream)));
  return fmt::format("DMA.q{}", stream - kComputeStreams);
}

Status TimingRun::prepare() {
  TESSEL_ASSIGN_OR_RETURN(portRules_, parsePortRules(profile_));
  int queues = static_cast<int>(profile_.dma.queuesPerEngine);
  for (const Instruction &insn : program_)
    if (insn.engine == Engine::DMA) queues = std::max(queues, insn.queue + 1);
  const int numStreams = kComputeStreams + queues;
  streams_.assign(static_cast<size_t>(numStreams), {});
  heads_.assign(static_cast<size_t>(numStreams), 0);
  queueReadyNs_.assign(static_cast<size_t>(queues), 0);
  semLatencyNs_.resize(static_cast<size_t>(numStreams));
  for (int stream = 0; stream < numStreams; ++stream) {
    // DMA queues are triggered by a sequencer: they see semaphores at the SP clock.
    Engine clock = stream < kComputeStreams ? static_cast<Engine>(stream) : Engine::SP;
    semLatencyNs_[static_cast<size_t>(stream)] =
        cyclesToNs(profile_, clock, static_cast<double>(profile_.semLatencyCycles));
  }
  costs_.resize(program_.size());
  portUses_.resize(program_.size());
  for (size_t i = 0; i < program_.size(); ++i) {
    const Instruction &insn = program_[i];
    if (insn.engine == Engine::DMA) {
      streams_[static_cast<size_t>(kComputeStreams + insn.queue)].push_back(i);
      continue;
    }
    streams_[static_cast<size_t>(insn.engine)].push_back(i);
    TESSEL_ASSIGN_OR_RETURN(costs_[i], costInstruction(insn, i, profile_));
    // Collectives move data through the collective engines, not the compute engines' ports.
    if (!portRules_.empty() && !isCollective(insn.opcode)) portUses_[i] = portUseOf(insn, insn.engine, costs_[i].dvePerfMode, profile_);
  }
  for (int stream = 0; stream < numStreams; ++stream)
    if (!streams_[static_cast<size_t>(stream)].empty()) activeStreams_.push_back(stream);
  timeline_.profileName = profile_.name;
  timeline_.pePeakFlopsPerSec = pePeakFlopsPerSec(profile_, PeDtype::Bf16);
  timeline_.hbmPeakBytesPerNs = profile_.hbm.bytesPerNsPerCore;
  timeline_.events.reserve(program_.size() + program_.size() / 2);
  return Status::success();
}

Candidate TimingRun::candidate(int stream) const {
  Candidate result;
  const size_t index = headOf(stream);
  const Instruction &insn = program_[index];
  if (stream == kPeStream) result.readyNs = pe_.readyNs(insn);
  else if (stream < kComputeStreams) result.readyNs = engineFreeNs_[stream];
  else result.readyNs = queueReadyNs_[static_cast<size_t>(stream - kComputeStreams)];
  for (const SemaphoreWait &wait : insn.waits) {
    std::optional<double> visible = semaphores_.satisfiedAtNs(wait, semLatencyNs_[static_cast<size_t>(stream)]);
    if (!visible) {
      result.waitedOn = wait;
      return result;  // Blocked until more increments complete.
    }
    if (*visible > result.semaphoreNs || (!result.waitedOn && *visible > 0)) {
      result.semaphoreNs = *visible;
      result.waitedOn = wait;
    }
  }
  if (stream < kComputeStreams && !portRules_.empty() && !isCollective(insn.opcode)) {
    for (int other = 0; other < kComputeStreams; ++other) {
      const LastStarted &last = lastStarted_[other];
      if (other == stream || !last.valid || last.endNs <= result.portNs) continue;
      if (portsConflict(portRules_, portUses_[index], last.use)) result.portNs = last.endNs;
    }
  }
  result.startNs = std::max({result.readyNs, result.semaphoreNs, result.portNs});
  return result;
}

TimelineEvent TimingRun::makeEvent(size_t index, std::string track, std::string name, const Candidate &candidate,
                                   double startNs) const {
  TimelineEvent event;
  event.instruction = index;
  event.track = std::move(track);
  event.name = std::move(name);
  event.readyNs = candidate.readyNs;
  event.startNs = startNs;
  if (startNs > candidate.readyNs) {
    bool bySemaphore = candidate.semaphoreNs > candidate.readyNs && candidate.semaphoreNs >= candidate.portNs;
    event.stall = bySemaphore ? StallReason::Semaphore : StallReason::Port;
    if (bySemaphore) event.waitedOn = candidate.waitedOn;
  }
  return event;
}

void TimingRun::addIncrement(const Instruction &insn, size_t index, double completeNs) {
  if (insn.increment) increments_.push({completeNs, sequence_++, *insn.increment, index});
}

void TimingRun::retireIncrement(uint16_t id, size_t producer, double completeNs) {
  semaphores_.addIncrement(id, completeNs);
  if (observer_) observer_->onIncrement(id, producer);
}

void TimingRun::startDma(int stream, size_t index, const Candidate &candidate, double nowNs, DmaTransferPlan plan) {
  const int queue = stream - kComputeStreams;
  TimelineEvent event = makeEvent(index, streamName(stream), std::string(mnemonic(program_[index].opcode)),
                                  candidate, nowNs);
  event.hbmReadBytes = plan.hbmReadBytes;
  event.hbmWriteBytes = plan.hbmWriteBytes;
  event.dmaBytes = plan.bytes;
  event.dmaChunks = plan.chunks;
  event.endNs = event.completeNs = kInfinity;  // Set when the data has moved.
  dmaEvents_[index] = timeline_.events.size();
  timeline_.events.push_back(std::move(event));
  queueReadyNs_[static_cast<size_t>(queue)] = nowNs;
  dma_.enqueue(index, queue, nowNs + profile_.dma.triggerNs, plan);
}

void TimingRun::startPe(size_t index, const Candidate &candidate, double nowNs) {
  const Instruction &insn = program_[index];
  const InstructionCost &cost = costs_[index];
  PeSchedule schedule = pe_.start(insn, cost, nowNs);
  const bool isMatmul = insn.opcode == Opcode::NcMatmul;
  Candidate mmCandidate = candidate;
  if (schedule.loadsStationary) {
    TimelineEvent ls = makeEvent(index, "PE.LoadStationary", "LoadStationary", candidate, nowNs);
    ls.endNs = ls.completeNs = schedule.lsEndNs;
    timeline_.events.push_back(std::move(ls));
    mmCandidate = Candidate{};  // The MM follows its LS; what held the instruction is on the LS event.
    mmCandidate.readyNs = schedule.mmReadyNs;
  }
  TimelineEvent mm = makeEvent(index, "PE.Matmul", isMatmul ? "Matmul" : std::string(mnemonic(insn.opcode)),
                               mmCandidate, schedule.mmStartNs);
  mm.endNs = schedule.mmEndNs;
  mm.completeNs = schedule.completeNs;
  mm.matmulFlops = cost.matmulFlops;
  mm.peFlops = cost.peFlops;
  if (schedule.cap < 1 && mm.stall == StallReason::None) mm.stall = StallReason::Throttle;
  timeline_.events.push_back(std::move(mm));
  lastStarted_[kPeStream] = {true, schedule.mmEndNs, portUses_[index]};
  timeline_.totalNs = std::max(timeline_.totalNs, schedule.completeNs);
  addIncrement(insn, index, schedule.completeNs);
}

void TimingRun::startCompute(int stream, size_t index, const Candidate &candidate, double nowNs) {
  const Instruction &insn = program_[index];
  const InstructionCost &cost = costs_[index];
  TimelineEvent event = makeEvent(index, streamName(stream), std::string(mnemonic(insn.opcode)), candidate, nowNs);
  event.endNs = nowNs + cost.busyNs;
  event.completeNs = event.endNs + cost.pipeLatencyNs;
  event.peFlops = cost.peFlops;
  engineFreeNs_[stream] = event.endNs;
  lastStarted_[stream] = {true, event.endNs, portUses_[index]};
  timeline_.totalNs = std::max(timeline_.totalNs, event.completeNs);
  addIncrement(insn, index, event.completeNs);
  timeline_.events.push_back(std::move(event));
}

Status TimingRun::startCollective(double nowNs) {
  const size_t index = headOf(kSpStream);
  const Instruction &insn = program_[index];
  const AccessPattern &dst = *insn.operands[0];
  // The event's stall is what held this core; waiting for the other cores shows as start > ready.
  TimelineEvent event = makeEvent(index, "CC", std::string(mnemonic(insn.opcode)), *arrived_, arrived_->startNs);
  event.startNs = nowNs;
  event.endNs = event.completeNs = nowNs + costs_[index].busyNs;
  event.collectiveBytes = dst.partitionCount * freeSizeElements(dst) * static_cast<uint64_t>(dtypeSizeBytes(dst.dtype));
  engineFreeNs_[kSpStream] = event.endNs;
  timeline_.totalNs = std::max(timeline_.totalNs, event.completeNs);
  addIncrement(insn, index, event.completeNs);
  timeline_.events.push_back(std::move(event));
  ++heads_[kSpStream];
  arrived_.reset();
  if (observer_) return observer_->onStart(index);
  return Status::success();
}

Status TimingRun::start(int stream, const Candidate &candidate, double nowNs) {
  const size_t index = headOf(stream);
  if (stream >= kComputeStreams) {
    // Plan before anything changes, so that an error leaves no half-started instruction behind.
    TESSEL_ASSIGN_OR_RETURN(DmaTransferPlan plan, planDmaTransfer(program_[index], index, profile_));
    ++heads_[stream];
    startDma(stream, index, candidate, nowNs, std::move(plan));
  } else {
    ++heads_[stream];
    if (stream == kPeStream) startPe(index, candidate, nowNs);
    else startCompute(stream, index, candidate, nowNs);
  }
  if (observer_) return observer_->onStart(index);
  return Status::success();
}

void TimingRun::retireDue(double nowNs) {
  while (!increments_.empty() && increments_.top().timeNs <= nowNs) {
    Increment increment = increments_.top();
    increments_.pop();
    retireIncrement(increment.id, increment.producer, increment.timeNs);
  }
  completions_.clear();
  dma_.advanceTo(nowNs, completions_);
  for (const DmaCompletion &done : completions_) {
    TimelineEvent &event = timeline_.events[dmaEvents_.at(done.instruction)];
    dmaEvents_.erase(done.instruction);
    event.endNs = event.completeNs = done.completeNs;
    if (event.stall == StallReason::None && done.delayed) event.stall = StallReason::DmaEngine;
    timeline_.totalNs = std::max(timeline_.totalNs, done.completeNs);
    const Instruction &insn = program_[done.instruction];
    if (insn.increment) retireIncrement(*insn.increment, done.instruction, done.completeNs);
  }
}

size_t TimingRun::neverStarted() const {
  size_t count = 0;
  for (int stream : activeStreams_) count += streams_[stream].size() - heads_[stream];
  return count;
}

std::string TimingRun::blockedHeads() const {
  std::string blocked;
  for (int stream : activeStreams_) {
    if (streamDone(stream)) continue;
    const size_t index = headOf(stream);
    const Instruction &insn = program_[index];
    for (const SemaphoreWait &wait : insn.waits) {
      uint32_t value = semaphores_.count(wait.id);
      if (value >= wait.value) continue;
      blocked += fmt::format("\n  instruction {} ({}.{}, head of {}) waits for s{} >= {}; s{} is {}", index,
                             mnemonic(insn.opcode), engineName(insn.engine), streamName(stream), wait.id, wait.value,
                             wait.id, value);
    }
    size_t behind = streams_[stream].size() - heads_[stream] - 1;
    if (behind > 0) blocked += fmt::format(" ({} more instruction(s) queued behind it)", behind);
  }
  return blocked;
}

Expected<double> TimingRun::startReady(double nowNs) {
  while (true) {
    int best = -1;
    Candidate bestCandidate;
    double nextStartNs = kInfinity;
    for (int stream : activeStreams_) {
      if (streamDone(stream)) continue;
      Candidate c = candidate(stream);
      if (c.startNs > nowNs) {
        nextStartNs = std::min(nextStartNs, c.startNs);
      } else if (stream == kSpStream && isCollective(program_[headOf(stream)].opcode)) {
        if (!arrived_) arrived_ = c;  // Starts with the other cores' (simulateTimingCores).
      } else if (best < 0 || headOf(stream) < headOf(best)) {
        best = stream;
        bestCandidate = c;
      }
    }
    if (best < 0) return nextStartNs;
    TESSEL_RETURN_IF_ERROR(start(best, bestCandidate, nowNs));
  }
}

double TimingRun::nextEventNs() const {
  double nextNs = dma_.nextEventNs();
  if (!increments_.empty()) nextNs = std::min(nextNs, increments_.top().timeNs);
  return nextNs;
}

Timeline TimingRun::finish() {
  auto byStart = [](const TimelineEvent &a, const TimelineEvent &b) { return a.startNs < b.startNs; };
  if (!std::is_sorted(timeline_.events.begin(), timeline_.events.end(), byStart))
    std::stable_sort(timeline_.events.begin(), timeline_.events.end(), byStart);
  return std::move(timeline_);
}

std::string describe(const Instruction &insn, size_t index) {
  return fmt::format("instruction {} ({}.{})", index, mnemonic(insn.opcode), engineName(insn.engine));
}

uint64_t dstBytes(const Instruction &insn) {
  const AccessPattern &dst = *insn.operands[0];
  return dst.partitionCount * freeSizeElements(dst) * static_cast<uint64_t>(dtypeSizeBytes(dst.dtype));
}

// The k-th collectives of all cores are one operation: the same kind, core count, size, dtype and
// op, and every core has as many. Checked before the run, so a mismatch is an error, not a hang.
Status checkCollectivesMatch(std::span<const std::span<const Instruction>> programs) {
  const size_t cores = programs.size();
  std::vector<std::vector<size_t>> collectives(cores);
  for (size_t core = 0; core < cores; ++core)
    for (size_t i = 0; i < programs[core].size(); ++i) {
      const Instruction &insn = programs[core][i];
      if (!isCollective(insn.opcode)) continue;
      if (insn.cores != cores)
        return makeError(ErrorCode::InvalidArgument,
                         "nc simulation: core {} {} spans cores={}, but {} core(s) are simulated together", core,
                         describe(insn, i), insn.cores, cores);
      collectives[core].push_back(i);
    }
  for (size_t core = 1; core < cores; ++core) {
    const size_t common = std::min(collectives[0].size(), collectives[core].size());
    for (size_t k = 0; k < common; ++k) {
      const size_t first = collectives[0][k], other = collectives[core][k];
      const Instruction &a = programs[0][first], &b = programs[core][other];
      const AccessPattern &da = *a.operands[0], &db = *b.operands[0];
      if (a.opcode == b.opcode && dstBytes(a) == dstBytes(b) && da.dtype == db.dtype &&
          da.partitionCount == db.partitionCount && a.op0 == b.op0)
        continue;
      return makeError(ErrorCode::InvalidArgument,
                       "nc simulation: collective #{} differs between cores: core 0 {} has dst {} bytes in {} "
                       "partitions ({}, op0 {}), core {} {} has {} bytes in {} partitions ({}, op0 {})",
                       k, describe(a, first), dstBytes(a), da.partitionCount, dtypeName(da.dtype), aluOpName(a.op0),
                       core, describe(b, other), dstBytes(b), db.partitionCount, dtypeName(db.dtype),
                       aluOpName(b.op0));
    }
    if (collectives[0].size() != collectives[core].size()) {
      const size_t longer = collectives[0].size() > common ? 0 : core, shorter = longer == 0 ? core : 0;
      const size_t extra = collectives[longer][common];
      return makeError(ErrorCode::InvalidArgument,
                       "nc simulation: core {} has {} collective(s), core {} has {}: core {} {} (collective #{}) "
                       "would wait for core {}, which finishes without it",
                       longer, collectives[longer].size(), shorter, collectives[shorter].size(), longer,
                       describe(programs[longer][extra], extra), common, shorter);
    }
  }
  return Status::success();
}

Diagnostic deadlock(const std::vector<TimingRun> &runs, std::span<const std::span<const Instruction>> programs,
                    double nowNs) {
  size_t neverRan = 0;
  std::string blocked;
  const bool multiCore = runs.size() > 1;
  for (size_t core = 0; core < runs.size(); ++core) {
    const TimingRun &run = runs[core];
    neverRan += run.neverStarted();
    std::string lines = run.blockedHeads();
    if (std::optional<size_t> collective = run.nextCollective(); collective && run.collectiveArrived())
      lines += fmt::format("\n  {} waits for the other cores to reach it",
                           describe(programs[core][*collective], *collective));
    if (multiCore && !lines.empty()) {
      // Indent each line under its core.
      std::string indented;
      for (char c : lines) indented += c == '\n' ? std::string("\n  ") : std::string(1, c);
      lines = fmt::format("\n  core {}:{}", core, indented);
    }
    blocked += lines;
  }
  return makeError(ErrorCode::RuntimeError,
                   "nc simulation deadlocked at {:.1f} ns: {} instruction(s) never started and no running "
                   "instruction can increment the semaphores they wait for:{}",
                   nowNs, neverRan, blocked);
}

}  // namespace

Expected<std::vector<Timeline>> simulateTimingCores(std::span<const std::span<const Instruction>> programs,
                                                    const MachineProfile &profile,
                                                    std::span<TimingObserver *const> observers,
                                                    const CollectiveHandler &onCollective) {
  TESSEL_RETURN_IF_ERROR(checkCollectivesMatch(programs));
  std::vector<TimingRun> runs;
  runs.reserve(programs.size());
  for (size_t core = 0; core < programs.size(); ++core) {
    runs.emplace_back(programs[core], profile, observers.empty() ? nullptr : observers[core]);
    TESSEL_RETURN_IF_ERROR(runs.back().prepare());
  }
  std::vector<size_t> collective(programs.size());
  double nowNs = 0;
  while (true) {
    for (TimingRun &run : runs) run.retireDue(nowNs);
    double nextNs = kInfinity;
    while (true) {
      nextNs = kInfinity;
      for (TimingRun &run : runs) {
        TESSEL_ASSIGN_OR_RETURN(double nextStartNs, run.startReady(nowNs));
        nextNs = std::min(nextNs, nextStartNs);
      }
      bool allArrived = std::all_of(runs.begin(), runs.end(), [](const TimingRun &run) { return run.collectiveArrived(); });
      if (!allArrived) break;
      for (size_t core = 0; core < runs.size(); ++core) {
        collective[core] = *runs[core].nextCollective();
        TESSEL_RETURN_IF_ERROR(runs[core].startCollective(nowNs));
      }
      if (onCollective) TESSEL_RETURN_IF_ERROR(onCollective(collective));
    }
    for (const TimingRun &run : runs) nextNs = std::min(nextNs, run.nextEventNs());
    if (nextNs == kInfinity) {
      if (!std::all_of(runs.begin(), runs.end(), [](const TimingRun &run) { return run.allStarted(); }))
        return deadlock(runs, programs, nowNs);
      break;
    }
    nowNs = std::max(nowNs, nextNs);
  }
  std::vector<Timeline> timelines;
  for (TimingRun &run : runs) timelines.push_back(run.finish());
  return timelines;
}

Expected<Timeline> simulateTiming(std::span<const Instruction> program, const MachineProfile &profile,
                                  TimingObserver *observer) {
  const std::span<const Instruction> programs[] = {program};
  TimingObserver *const observers[] = {observer};
  TESSEL_ASSIGN_OR_RETURN(std::vector<Timeline> timelines, simulateTimingCores(programs, profile, observers, {}));
  return std::move(timelines[0]);
}

}  // namespace tessel::nc
