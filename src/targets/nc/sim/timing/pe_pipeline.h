// The tensor engine's two halves (accelerator-model.md sections 5.1 and 9.2): nc_matmul is a
// LoadStationary (LS, track "PE.LoadStationary") that caches the stationary operand in the array,
// then a MultiplyMoving (MM, track "PE.Matmul") that streams the moving operand through it. The array
// double-buffers the stationary, so the LS of the next matmul runs in the background of the current
// MM: LS_i starts at max(LS_{i-1} end, MM_{i-1} start, waits) and MM_i at max(MM_{i-1} end, LS_i end),
// and a stream costs max(LS_II, MM_II) per pair with only the first LS exposed. A matmul whose
// stationary operand is the same access pattern as the previous matmul's (nothing else on PE in
// between) reuses the cached weights and needs no LS. nc_transpose on PE runs on the MM half and
// replaces the cached stationary. The MM time is stretched by the nc-v3 throttle (throttle.h).
#pragma once

#include <optional>

#include "targets/nc/isa/instruction.h"
#include "targets/nc/machine/profile.h"
#include "targets/nc/isa/instruction_cost.h"
#include "targets/nc/sim/timing/throttle.h"

namespace tessel::nc {

/// When the phases of one PE instruction run.
struct PeSchedule {
  bool loadsStationary = false;
  double lsReadyNs = 0, lsStartNs = 0, lsEndNs = 0;  // Valid with loadsStationary.
  double mmReadyNs = 0, mmStartNs = 0, mmEndNs = 0;  // The MM (or PE transpose).
  double completeNs = 0;                              // MM end + PE pipeline latency.
  double cap = 1;                                     // Throttle cap the MM ran under.
};

class PePipeline {
 public:
  explicit PePipeline(const MachineProfile &profile) : throttle_(profile) {}

  /// True when `insn` (nc_matmul) must load its stationary operand.
  bool needsLoadStationary(const Instruction &insn) const;

  /// The earliest start of `insn`'s first phase that the PE itself allows (before waits).
  double readyNs(const Instruction &insn) const;

  /// Schedules `insn` (nc_matmul or PE nc_transpose) with its first phase starting at `startNs`
  /// (>= readyNs(insn)) and advances the pipeline.
  PeSchedule start(const Instruction &insn, const InstructionCost &cost, double startNs);

 private:
  PeThrottle throttle_;
  double lsFreeNs_ = 0;       // End of the last LS.
  double mmFreeNs_ = 0;       // End of the last MM or transpose.
  double lastMmStartNs_ = 0;  // Start of the last MM or transpose.
  std::optional<AccessPattern> cachedStationary_;
};

}  // namespace tessel::nc
