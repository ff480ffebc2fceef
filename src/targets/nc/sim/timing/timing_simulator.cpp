// The timing simulation's event loop; see timing_simulator.h. Each pass of the loop takes one point
// in time: it retires the compute increments and DMA completions due by then, then starts every
// stream head that can start at that time (lowest program index first, re-evaluating after each start
// because a start can take a port), then moves to the next time anything can change.
#include "targets/nc/sim/timing/timing_simulator.h"

#include <algorithm>
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
#include "targets/nc/sim/timing/ports.h"
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

class TimingRun {
 public:
  TimingRun(std::span<const Instruction> program, const MachineProfile &profile, TimingObserver *observer)
      : program_(program), profile_(profile), observer_(observer), pe_(profile),
        dma_(profile, usedQueues(program)) {}

  Expected<Timeline> run();

 private:
  static std::vector<int> usedQueues(std::span<const Instruction> program);
  Status prepare();
  bool streamDone(int stream) const { return heads_[stream] == streams_[stream].size(); }
  size_t headOf(int stream) const { return streams_[stream][heads_[stream]]; }
  Candidate candidate(int stream) const;
  Status start(int stream, const Candidate &candidate, double nowNs);
  void startDma(int stream, size_t index, const Candidate &candidate, double nowNs, DmaTransferPlan plan);
  void startPe(size_t index, const Candidate &candidate, double nowNs);
  void startCompute(int stream, size_t index, const Candidate &candidate, double nowNs);
  void retireDue(double nowNs);
  void addIncrement(const Instruction &insn, size_t index, double completeNs);
  void retireIncrement(uint16_t id, size_t producer, double completeNs);
  TimelineEvent makeEvent(size_t index, std::string track, std::string name, const Candidate &candidate,
                          double startNs) const;
  Diagnostic deadlock(double nowNs) const;
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
    if (!portRules_.empty()) portUses_[i] = portUseOf(insn, costs_[i].dvePerfMode, profile_);
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
  if (stream < kComputeStreams && !portRules_.empty()) {
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

Diagnostic TimingRun::deadlock(double nowNs) const {
  size_t neverRan = 0;
  std::string blocked;
  for (int stream : activeStreams_) {
    if (streamDone(stream)) continue;
    neverRan += streams_[stream].size() - heads_[stream];
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
  return makeError(ErrorCode::RuntimeError,
                   "nc simulation deadlocked at {:.1f} ns: {} instruction(s) never started and no running "
                   "instruction can increment the semaphores they wait for:{}",
                   nowNs, neverRan, blocked);
}

Expected<Timeline> TimingRun::run() {
  TESSEL_RETURN_IF_ERROR(prepare());
  double nowNs = 0;
  while (true) {
    retireDue(nowNs);
    double nextStartNs = kInfinity;
    while (true) {
      int best = -1;
      Candidate bestCandidate;
      nextStartNs = kInfinity;
      for (int stream : activeStreams_) {
        if (streamDone(stream)) continue;
        Candidate c = candidate(stream);
        if (c.startNs > nowNs) {
          nextStartNs = std::min(nextStartNs, c.startNs);
        } else if (best < 0 || headOf(stream) < headOf(best)) {
          best = stream;
          bestCandidate = c;
        }
      }
      if (best < 0) break;
      TESSEL_RETURN_IF_ERROR(start(best, bestCandidate, nowNs));
    }
    double nextNs = std::min(nextStartNs, dma_.nextEventNs());
    if (!increments_.empty()) nextNs = std::min(nextNs, increments_.top().timeNs);
    if (nextNs == kInfinity) {
      bool allStarted = std::all_of(activeStreams_.begin(), activeStreams_.end(),
                                    [&](int stream) { return streamDone(stream); });
      if (!allStarted) return deadlock(nowNs);
      break;
    }
    nowNs = std::max(nowNs, nextNs);
  }
  auto byStart = [](const TimelineEvent &a, const TimelineEvent &b) { return a.startNs < b.startNs; };
  if (!std::is_sorted(timeline_.events.begin(), timeline_.events.end(), byStart))
    std::stable_sort(timeline_.events.begin(), timeline_.events.end(), byStart);
  return std::move(timeline_);
}

}  // namespace

Expected<Timeline> simulateTiming(std::span<const Instruction> program, const MachineProfile &profile,
                                  TimingObserver *observer) {
  TimingRun run(program, profile, observer);
  return run.run();
}

}  // namespace tessel::nc
