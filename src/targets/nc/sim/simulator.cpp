// simulate(): verifies the program, runs the timing simulation (timing/timing_simulator.h) and, as it
// starts instructions, executes them on the MachineState (functional/execute.h) and feeds the race
// detector (race_detector.h). Executing in simulated start order means a race-free program computes
// what the hardware would; a racy one computes one possible outcome, and the races are reported.
#include "targets/nc/sim/simulator.h"

#include <optional>

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
    if (state_) return executeInstruction(program_[index], index, *state_, profile_);
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

}  // namespace

Expected<SimulationResult> simulate(std::span<const Instruction> program, const MachineProfile &profile,
                                    MachineState *state, const SimulateOptions &options) {
  if (!options.timingOnly && state == nullptr)
    return makeError(ErrorCode::InvalidArgument,
                     "nc simulate: a MachineState is required unless SimulateOptions::timingOnly is set");
  TESSEL_RETURN_IF_ERROR(verify(program, isaLimitsFor(profile)));
  SimulationDriver driver(program, profile, options.timingOnly ? nullptr : state, options.detectRaces);
  TESSEL_ASSIGN_OR_RETURN(Timeline timeline, simulateTiming(program, profile, &driver));
  SimulationResult result;
  result.timeline = std::move(timeline);
  result.races = driver.takeRaces();
  return result;
}

}  // namespace tessel::nc
