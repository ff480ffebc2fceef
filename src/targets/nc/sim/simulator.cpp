// simulate() and simulateCores(): verify each program, run the timing simulation of all cores
// together (timing/timing_simulator.h) and, as it starts instructions, execute them on each core's
// MachineState (functional/execute.h; collectives on all states at once) and feed each core's race
// detector (race_detector.h). Executing in simulated start order means a race-free program computes
// what the hardware would; a racy one computes one possible outcome, and the races are reported.
#include "targets/nc/sim/simulator.h"

#include <optional>

#include <fmt/format.h>

#include "targets/nc/isa/verifier.h"
#include "targets/nc/sim/functional/execute.h"
#include "targets/nc/sim/race_detector.h"
#include "targets/nc/sim/timing/timing_simulator.h"

namespace tessel::nc {
namespace {

class SimulationDriver : public TimingObserver {
 public:
  SimulationDriver(std::span<const Instruction> program, const MachineProfile &profile, MachineState *state,
                   bool detectRaces)
      : program_(program), profile_(profile), state_(state) {
    if (detectRaces) races_.emplace(program, profile);
  }

  Status onStart(size_t index) override {
    if (races_) races_->onStart(index);
    // A collective's data moves between all the cores' states at once (executeCollective).
    if (state_ && !isCollective(program_[index].opcode)) return executeInstruction(program_[index], index, *state_, profile_);
    return Status::success();
  }

  void onIncrement(uint16_t id, size_t producer) override {
    if (races_) races_->onIncrement(id, producer);
  }

  std::vector<Race> takeRaces() { return races_ ? races_->takeRaces() : std::vector<Race>{}; }

 private:
  std::span<const Instruction> program_;
  const MachineProfile &profile_;
  MachineState *state_;
  std::optional<RaceDetector> races_;
};

// verifyProgram() takes a vector; copying a 100k-instruction program costs more than checking it, so
// the instructions are checked in place and only a failing program is copied for the full message.
Status verify(std::span<const Instruction> program, const IsaLimits &limits) {
  for (size_t i = 0; i < program.size(); ++i)
    if (!verifyInstruction(program[i], i, limits).empty())
      return verifyProgram(std::vector<Instruction>(program.begin(), program.end()), limits);
  return Status::success();
}

// The cores' programs run together; `states` holds one state per program (unused with timingOnly).
Expected<std::vector<SimulationResult>> simulateTogether(std::span<const std::span<const Instruction>> programs,
                                                         const MachineProfile &profile,
                                                         std::span<MachineState *const> states,
                                                         const SimulateOptions &options) {
  const size_t cores = programs.size();
  const IsaLimits limits = isaLimitsFor(profile);
  std::vector<SimulationDriver> drivers;
  drivers.reserve(cores);
  for (size_t core = 0; core < cores; ++core) {
    if (!options.timingOnly && states[core] == nullptr)
      return makeError(ErrorCode::InvalidArgument,
                       "nc simulate: a MachineState is required unless SimulateOptions::timingOnly is set{}",
                       cores > 1 ? fmt::format(" (core {} has none)", core) : "");
    Status verified = verify(programs[core], limits);
    if (!verified.ok()) {
      if (cores > 1) verified.diag().message = fmt::format("core {}: {}", core, verified.diag().message);
      return verified.diag();
    }
    drivers.emplace_back(programs[core], profile, options.timingOnly ? nullptr : states[core], options.detectRaces);
  }
  std::vector<TimingObserver *> observers;
  for (SimulationDriver &driver : drivers) observers.push_back(&driver);
  CollectiveHandler exchange;
  if (!options.timingOnly)
    exchange = [&](std::span<const size_t> indices) {
      std::vector<const Instruction *> insns;
      for (size_t core = 0; core < cores; ++core) insns.push_back(&programs[core][indices[core]]);
      return executeCollective(insns, indices, states, profile);
    };
  TESSEL_ASSIGN_OR_RETURN(std::vector<Timeline> timelines, simulateTimingCores(programs, profile, observers, exchange));
  std::vector<SimulationResult> results(cores);
  for (size_t core = 0; core < cores; ++core) {
    results[core].timeline = std::move(timelines[core]);
    results[core].races = drivers[core].takeRaces();
  }
  return results;
}

}  // namespace

Expected<SimulationResult> simulate(std::span<const Instruction> program, const MachineProfile &profile,
                                    MachineState *state, const SimulateOptions &options) {
  const std::span<const Instruction> programs[] = {program};
  MachineState *const states[] = {state};
  TESSEL_ASSIGN_OR_RETURN(std::vector<SimulationResult> results, simulateTogether(programs, profile, states, options));
  return std::move(results[0]);
}

Expected<std::vector<SimulationResult>> simulateCores(std::span<const std::vector<Instruction>> programs,
                                                      const MachineProfile &profile,
                                                      std::span<MachineState *const> states,
                                                      const SimulateOptions &options) {
  if (programs.empty()) return makeError(ErrorCode::InvalidArgument, "nc simulateCores: no programs");
  if (!options.timingOnly && states.size() != programs.size())
    return makeError(ErrorCode::InvalidArgument, "nc simulateCores: {} programs but {} machine states",
                     programs.size(), states.size());
  std::vector<std::span<const Instruction>> spans(programs.begin(), programs.end());
  std::vector<MachineState *> used(programs.size(), nullptr);
  if (!options.timingOnly) used.assign(states.begin(), states.end());
  return simulateTogether(spans, profile, used, options);
}

}  // namespace tessel::nc
