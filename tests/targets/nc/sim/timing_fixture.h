// Shared helpers of the timing, race and calibration tests: load a bundled profile, assemble a
// program (assembler.h syntax), run it through simulate() (timing only unless a state is given),
// and find the timeline event of an instruction on a track. Times are compared in ns; cycles of an
// engine convert with the profile's clocks (cost.h), never with literals.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <string_view>
#include <vector>

#include "targets/nc/isa/assembler.h"
#include "targets/nc/machine/cost.h"
#include "targets/nc/machine/profile.h"
#include "targets/nc/sim/simulator.h"

namespace tessel::nc::testing {

/// Slack for comparing simulated times in ns (sums of doubles).
inline constexpr double kTimeToleranceNs = 1e-6;

inline MachineProfile bundledProfile(const std::string &name) {
  Expected<MachineProfile> loaded = loadProfile(name);
  EXPECT_TRUE(loaded.ok()) << loaded.diag().str();
  return loaded.ok() ? *loaded : MachineProfile{};
}

inline std::vector<Instruction> assembleText(const std::string &text) {
  Expected<std::vector<Instruction>> program = assemble(text, "test.s");
  EXPECT_TRUE(program.ok()) << program.diag().str();
  return program.ok() ? *program : std::vector<Instruction>{};
}

/// simulate() in timing-only mode; fails the test on an error.
inline SimulationResult simulateOk(const std::vector<Instruction> &program, const MachineProfile &profile,
                                   bool detectRaces = false) {
  SimulateOptions options;
  options.timingOnly = true;
  options.detectRaces = detectRaces;
  Expected<SimulationResult> result = simulate(program, profile, nullptr, options);
  EXPECT_TRUE(result.ok()) << result.diag().str();
  return result.ok() ? *result : SimulationResult{};
}

inline Timeline timelineOf(const std::string &text, const MachineProfile &profile) {
  return simulateOk(assembleText(text), profile).timeline;
}

/// The event of instruction `index` on `track` (a failing test and an empty event when missing).
inline TimelineEvent eventOf(const Timeline &timeline, size_t index, std::string_view track) {
  for (const TimelineEvent &event : timeline.events)
    if (event.instruction == index && event.track == track) return event;
  ADD_FAILURE() << "no event for instruction " << index << " on track " << track;
  return TimelineEvent{};
}

/// True when instruction `index` has an event on `track`.
inline bool hasEvent(const Timeline &timeline, size_t index, std::string_view track) {
  for (const TimelineEvent &event : timeline.events)
    if (event.instruction == index && event.track == track) return true;
  return false;
}

/// `cycles` of `engine` in ns.
inline double ns(const MachineProfile &profile, Engine engine, double cycles) {
  return cyclesToNs(profile, engine, cycles);
}

/// The semaphore latency a consumer on `engine` sees, in ns.
inline double semLatencyNs(const MachineProfile &profile, Engine engine) {
  return cyclesToNs(profile, engine, static_cast<double>(profile.semLatencyCycles));
}

}  // namespace tessel::nc::testing
