// The PE LoadStationary / MultiplyMoving pipeline; see pe_pipeline.h.
#include "targets/nc/sim/timing/pe_pipeline.h"

#include <algorithm>

namespace tessel::nc {

bool PePipeline::needsLoadStationary(const Instruction &insn) const {
  if (insn.opcode != Opcode::NcMatmul) return false;
  return !cachedStationary_ || !insn.operands[1] || !(*cachedStationary_ == *insn.operands[1]);
}

double PePipeline::readyNs(const Instruction &insn) const {
  if (needsLoadStationary(insn)) return std::max(lsFreeNs_, lastMmStartNs_);
  return mmFreeNs_;
}

PeSchedule PePipeline::start(const Instruction &insn, const InstructionCost &cost, double startNs) {
  PeSchedule schedule;
  schedule.loadsStationary = needsLoadStationary(insn);
  if (schedule.loadsStationary) {
    schedule.lsReadyNs = readyNs(insn);
    schedule.lsStartNs = startNs;
    schedule.lsEndNs = startNs + cost.loadStationaryNs;
    lsFreeNs_ = schedule.lsEndNs;
    schedule.mmReadyNs = std::max(mmFreeNs_, schedule.lsEndNs);
  } else {
    schedule.mmReadyNs = readyNs(insn);
  }
  schedule.mmStartNs = schedule.loadsStationary ? schedule.mmReadyNs : startNs;
  bool isMatmul = insn.opcode == Opcode::NcMatmul;
  schedule.cap = isMatmul ? throttle_.capAt(schedule.mmStartNs) : 1.0;
  schedule.mmEndNs = schedule.mmStartNs + cost.busyNs / schedule.cap;
  schedule.completeNs = schedule.mmEndNs + cost.pipeLatencyNs;
  throttle_.recordBusy(schedule.mmStartNs, schedule.mmEndNs);
  mmFreeNs_ = schedule.mmEndNs;
  lastMmStartNs_ = schedule.mmStartNs;
  if (isMatmul) cachedStationary_ = insn.operands[1];
  else cachedStationary_.reset();
  return schedule;
}

}  // namespace tessel::nc
