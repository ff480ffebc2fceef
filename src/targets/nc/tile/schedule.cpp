// Event-driven list scheduling; see schedule.h. Each stream keeps the ops released to it in two
// heaps: waiting (by the time their inputs are ready) and ready (by priority). A global heap visits
// the stream that can issue next; it issues its highest-priority ready op, and ops whose producers
// are all placed are released to a stream (chosen then, for open engines and DMA queues).
#include "targets/nc/tile/schedule.h"

#include <algorithm>
#include <limits>
#include <optional>
#include <queue>

#include <fmt/format.h>

#include "targets/nc/isa/ports.h"
#include "targets/nc/tile/estimate.h"

namespace tessel::nc::tile {
namespace {

constexpr double kNever = std::numeric_limits<double>::infinity();

struct Waiting {
  double readyNs;
  int32_t op;
  bool operator>(const Waiting &other) const {
    return readyNs != other.readyNs ? readyNs > other.readyNs : op > other.op;
  }
};

struct Ready {
  double priority;
  int32_t op;
  bool operator<(const Ready &other) const {
    return priority != other.priority ? priority < other.priority : op > other.op;
  }
};

struct Visit {
  double timeNs;
  int32_t stream;
  uint64_t version;
  bool operator>(const Visit &other) const {
    return timeNs != other.timeNs ? timeNs > other.timeNs : stream > other.stream;
  }
};

struct StreamState {
  double availNs = 0;
  double queuedBusyNs = 0;
  uint64_t version = 0;
  std::priority_queue<Waiting, std::vector<Waiting>, std::greater<>> waiting;
  std::priority_queue<Ready> ready;

  bool empty() const { return waiting.empty() && ready.empty(); }
  double decisionNs() const {
    if (!ready.empty()) return availNs;
    if (!waiting.empty()) return std::max(availNs, waiting.top().readyNs);
    return kNever;
  }
};

/// The shared ports (section 9.3), by the rules the simulator applies (isa/ports.h): an instruction
/// that needs a port another engine's instruction holds starts when that one ends. Engines run in
/// order, so the holder on each other engine is the last instruction placed there.
class PortTracker {
 public:
  explicit PortTracker(std::vector<PortRule> rules) : rules_(std::move(rules)) {}

  /// The earliest start the ports allow an instruction using `use`.
  double readyNs(const PortUse &use) const {
    double ready = 0;
    for (const Holder &last : last_)
      if (last.valid && last.endNs > ready && portsConflict(rules_, use, last.use)) ready = last.endNs;
    return ready;
  }

  void record(const PortUse &use, double endNs) { last_[static_cast<int>(use.engine)] = {true, use, endNs}; }

 private:
  struct Holder {
    bool valid = false;
    PortUse use;
    double endNs = 0;
  };
  std::vector<PortRule> rules_;
  Holder last_[kNumEngines];
};

}  // namespace

std::string streamName(int stream) {
  if (stream >= kFirstDmaStream) return fmt::format("DMA.q{}", stream - kFirstDmaStream);
  return std::string(engineName(static_cast<Engine>(stream)));
}

namespace {

/// The scheduler's state for one run; see the file comment.
class ListScheduler {
 public:
  ListScheduler(const std::vector<Instruction> &insns, const std::vector<uint8_t> &candidates,
                const DependenceGraph &deps, const MachineProfile &profile, std::vector<PortRule> portRules,
                int dmaQueues)
      : insns_(insns), candidates_(candidates), deps_(deps), profile_(profile), dmaQueues_(dmaQueues),
        n_(static_cast<int32_t>(insns.size())), ports_(std::move(portRules)) {
    schedule_.ops.resize(n_);
    schedule_.numStreams = kFirstDmaStream + dmaQueues;
    streams_.resize(schedule_.numStreams);
  }

  Schedule run() {
    estimateAll();
    buildSuccessors();
    computePriorities();
    remaining_.resize(n_);
    for (int32_t i = 0; i < n_; ++i) remaining_[i] = static_cast<int32_t>(deps_.preds[i].size());
    for (int32_t i = 0; i < n_; ++i)
      if (remaining_[i] == 0) release(i);
    schedule_.order.reserve(n_);
    while (!visits_.empty()) {
      Visit visit = visits_.top();
      visits_.pop();
      StreamState &state = streams_[visit.stream];
      if (visit.version != state.version || state.empty()) continue;
      issueNext(visit.stream);
    }
    TESSEL_CHECK(static_cast<int32_t>(schedule_.order.size()) == n_, "scheduled {} of {} ops",
                 schedule_.order.size(), n_);
    std::stable_sort(schedule_.order.begin(), schedule_.order.end(), [&](int32_t a, int32_t b) {
      const ScheduledOp &x = schedule_.ops[a], &y = schedule_.ops[b];
      return x.startNs != y.startNs ? x.startNs < y.startNs : a < b;
    });
    return std::move(schedule_);
  }

 private:
  const InstructionEstimate &estimate(int32_t op, Engine engine) const {
    return estimates_[static_cast<size_t>(op) * kNumEngines + static_cast<int>(engine)];
  }

  /// What op uses of the shared ports on `engine`; collectives move data through the collective
  /// engines and take none (as in the simulator).
  std::optional<PortUse> portUse(int32_t op, Engine engine, bool dvePerfMode) const {
    if (isCollective(insns_[op].opcode)) return std::nullopt;
    return portUseOf(insns_[op], engine, dvePerfMode, profile_);
  }

  /// Estimates every op on each engine it may use; remembers the cheapest.
  void estimateAll() {
    estimates_.resize(static_cast<size_t>(n_) * kNumEngines);
    semNs_.resize(kNumEngines);
    for (int e = 0; e < kNumEngines; ++e)
      semNs_[e] = semaphoreLatencyNs(profile_, static_cast<Engine>(e));
    cheapest_.assign(n_, Engine::DVE);
    for (int32_t i = 0; i < n_; ++i) {
      double best = kNever;
      for (int e = 0; e < kNumEngines; ++e) {
        if (!(candidates_[i] & engineBit(static_cast<Engine>(e)))) continue;
        InstructionEstimate &slot = estimates_[static_cast<size_t>(i) * kNumEngines + e];
        slot = estimateInstruction(insns_[i], static_cast<Engine>(e), profile_);
        double total = slot.triggerNs + slot.busyNs;
        if (total < best) best = total, cheapest_[i] = static_cast<Engine>(e);
      }
    }
  }

  /// Successor lists (CSR) from the predecessor lists.
  void buildSuccessors() {
    succStart_.assign(n_ + 1, 0);
    for (int32_t i = 0; i < n_; ++i)
      for (const Dependence &dep : deps_.preds[i]) ++succStart_[dep.producer + 1];
    for (int32_t i = 0; i < n_; ++i) succStart_[i + 1] += succStart_[i];
    succ_.resize(succStart_[n_]);
    std::vector<int32_t> fill(succStart_.begin(), succStart_.end() - 1);
    for (int32_t i = 0; i < n_; ++i)
      for (const Dependence &dep : deps_.preds[i]) succ_[fill[dep.producer]++] = i;
  }

  /// Priority: the longest path to the end of the kernel, each op at its cheapest engine's cost,
  /// each edge between streams adding the producer's pipeline latency and the semaphore latency.
  void computePriorities() {
    auto fixedEngine = [&](int32_t op) { return __builtin_popcount(candidates_[op]) == 1; };
    priority_.assign(n_, 0);
    for (int32_t i = n_ - 1; i >= 0; --i) {
      const InstructionEstimate &own = estimate(i, cheapest_[i]);
      double tail = 0;
      for (int32_t k = succStart_[i]; k < succStart_[i + 1]; ++k) {
        int32_t s = succ_[k];
        bool sameEngine =
            fixedEngine(i) && fixedEngine(s) && cheapest_[i] == cheapest_[s] && cheapest_[i] != Engine::DMA;
        double edge = sameEngine ? 0 : own.latencyNs + semNs_[static_cast<int>(cheapest_[s])];
        tail = std::max(tail, edge + priority_[s]);
      }
      priority_[i] = own.triggerNs + own.busyNs + tail;
    }
  }

  void revisit(int32_t stream) {
    StreamState &state = streams_[stream];
    ++state.version;
    double when = state.decisionNs();
    if (when != kNever) visits_.push(Visit{when, stream, state.version});
  }

  void enqueue(int32_t op, int stream, double readyNs, double busyNs) {
    StreamState &state = streams_[stream];
    state.waiting.push(Waiting{readyNs, op});
    state.queuedBusyNs += busyNs;
    revisit(stream);
  }

  /// All producers of `op` are placed: choose its stream and queue it there.
  void release(int32_t op) {
    if (candidates_[op] == kDMA)
      releaseDma(op);
    else
      releaseCompute(op);
  }

  /// DMA copies go round-robin to the least-loaded queue.
  void releaseDma(int32_t op) {
    double readyNs = 0;
    for (const Dependence &dep : deps_.preds[op])
      readyNs = std::max(readyNs, schedule_.ops[dep.producer].completeNs + semNs_[static_cast<int>(Engine::DMA)]);
    double bestLoad = kNever;
    int best = 0;
    for (int k = 0; k < dmaQueues_; ++k) {
      int q = (nextQueue_ + k) % dmaQueues_;
      const StreamState &state = streams_[kFirstDmaStream + q];
      double load = state.availNs + state.queuedBusyNs;
      if (load < bestLoad) bestLoad = load, best = q;
    }
    nextQueue_ = (best + 1) % dmaQueues_;
    ScheduledOp &placed = schedule_.ops[op];
    placed.engine = Engine::DMA;
    placed.queue = static_cast<uint8_t>(best);
    placed.stream = kFirstDmaStream + best;
    enqueue(op, placed.stream, readyNs, estimate(op, Engine::DMA).busyNs);
  }

  /// Compute ops go to the allowed engine where they would finish first, given each engine's
  /// backlog, its ports and its producers' completions.
  void releaseCompute(int32_t op) {
    double bestFinish = kNever, bestReady = 0;
    Engine bestEngine = cheapest_[op];
    for (int e = 0; e < kNumEngines; ++e) {
      Engine engine = static_cast<Engine>(e);
      if (!(candidates_[op] & engineBit(engine))) continue;
      double readyNs = 0;
      for (const Dependence &dep : deps_.preds[op]) {
        const ScheduledOp &producer = schedule_.ops[dep.producer];
        readyNs = std::max(readyNs, producer.stream == e ? producer.endNs : producer.completeNs + semNs_[e]);
      }
      const StreamState &state = streams_[e];
      const InstructionEstimate &cost = estimate(op, engine);
      const std::optional<PortUse> use = portUse(op, engine, cost.dvePerfMode);
      double portNs = use ? ports_.readyNs(*use) : 0;
      double finish = std::max({readyNs, state.availNs + state.queuedBusyNs, portNs}) + cost.busyNs;
      if (finish < bestFinish) bestFinish = finish, bestEngine = engine, bestReady = readyNs;
    }
    ScheduledOp &placed = schedule_.ops[op];
    placed.engine = bestEngine;
    placed.stream = static_cast<int>(bestEngine);
    enqueue(op, placed.stream, bestReady, estimate(op, bestEngine).busyNs);
  }

  /// Issues the highest-priority op `stream` has ready at its decision time.
  void issueNext(int32_t stream) {
    StreamState &state = streams_[stream];
    double now = state.decisionNs();
    while (!state.waiting.empty() && state.waiting.top().readyNs <= now) {
      int32_t op = state.waiting.top().op;
      state.waiting.pop();
      state.ready.push(Ready{priority_[op], op});
    }
    int32_t op = state.ready.top().op;
    state.ready.pop();
    ScheduledOp &placed = schedule_.ops[op];
    const InstructionEstimate &cost = estimate(op, placed.engine);
    state.queuedBusyNs -= cost.busyNs;
    placed.startNs = now;
    if (placed.engine == Engine::DMA) {
      // Data moves once the trigger latency has passed and the core's DMA engines are free.
      double dataStart = std::max(now + cost.triggerNs, dmaEnginesFreeNs_);
      double dataEnd = dataStart + cost.busyNs;
      dmaEnginesFreeNs_ = dataStart + cost.busyNs * cost.dmaEngineShare;
      placed.endNs = placed.completeNs = dataEnd;
      // The queue triggers its next copy so that its data phase can follow this one's.
      state.availNs = std::max(now + cost.busyNs * 1e-3, dataEnd - cost.triggerNs);
    } else {
      const std::optional<PortUse> use = portUse(op, placed.engine, cost.dvePerfMode);
      placed.startNs = std::max(now, use ? ports_.readyNs(*use) : 0);
      placed.endNs = placed.startNs + cost.busyNs;
      if (use) ports_.record(*use, placed.endNs);
      placed.completeNs = placed.endNs + cost.latencyNs;
      state.availNs = placed.endNs;
    }
    schedule_.makespanNs = std::max(schedule_.makespanNs, placed.completeNs);
    schedule_.order.push_back(op);
    revisit(stream);
    for (int32_t k = succStart_[op]; k < succStart_[op + 1]; ++k)
      if (--remaining_[succ_[k]] == 0) release(succ_[k]);
  }

  const std::vector<Instruction> &insns_;
  const std::vector<uint8_t> &candidates_;
  const DependenceGraph &deps_;
  const MachineProfile &profile_;
  const int dmaQueues_;
  const int32_t n_;
  Schedule schedule_;
  std::vector<InstructionEstimate> estimates_;  // Per (op, engine).
  std::vector<double> semNs_;                   // Per consumer engine.
  std::vector<Engine> cheapest_;
  std::vector<int32_t> succStart_, succ_, remaining_;
  std::vector<double> priority_;
  std::vector<StreamState> streams_;
  std::priority_queue<Visit, std::vector<Visit>, std::greater<>> visits_;
  PortTracker ports_;
  int nextQueue_ = 0;
  double dmaEnginesFreeNs_ = 0;
};

}  // namespace

Expected<Schedule> scheduleOps(const std::vector<Instruction> &insns, const std::vector<uint8_t> &candidates,
                               const DependenceGraph &deps, const MachineProfile &profile, int dmaQueues) {
  TESSEL_ASSIGN_OR_RETURN(std::vector<PortRule> rules, parsePortRules(profile));
  return ListScheduler(insns, candidates, deps, profile, std::move(rules), dmaQueues).run();
}

}  // namespace tessel::nc::tile
