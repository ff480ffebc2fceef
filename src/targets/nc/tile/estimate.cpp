// Instruction time estimates; see estimate.h. Compute instructions take the simulator's cost
// function (isa/instruction_cost.h); dma_copy follows the cost.h DMA formula.
#include "targets/nc/tile/estimate.h"

#include <algorithm>

#include "targets/nc/isa/instruction_cost.h"
#include "targets/nc/machine/cost.h"

namespace tessel::nc::tile {
namespace {

const AccessPattern *operand(const Instruction &insn, std::string_view name) {
  const std::vector<OperandSlot> &slots = operandSlots(insn.opcode);
  for (size_t i = 0; i < slots.size(); ++i)
    if (slots[i].name == name && insn.operands[i]) return &*insn.operands[i];
  return nullptr;
}

int64_t freeSize(const AccessPattern *ap) { return ap ? static_cast<int64_t>(freeSizeElements(*ap)) : 1; }

/// Elements of one contiguous run of `ap` (innermost dims merged while they chain).
int64_t contiguousRun(const AccessPattern &ap) {
  int64_t run = 1;
  for (size_t d = ap.dims.size(); d-- > 0;) {
    const FreeDim &dim = ap.dims[d];
    if (dim.count == 1) continue;
    if (dim.strideElements != run) break;
    run *= dim.count;
  }
  return run;
}

InstructionEstimate estimateDma(const Instruction &insn, const MachineProfile &profile) {
  const AccessPattern *dst = operand(insn, "dst"), *src = operand(insn, "src");
  InstructionEstimate estimate;
  if (!dst || !src) return estimate;
  const AccessPattern *onChip = dst->space != MemSpace::HBM ? dst : src->space != MemSpace::HBM ? src : nullptr;
  // The partition role: the on-chip side's partitions, or an HBM->HBM copy's outermost dim.
  int64_t partitions = onChip ? onChip->partitionCount : (dst->dims.empty() ? 1 : dst->dims.front().count);
  int64_t totalElements = dst->partitionCount * freeSize(dst);
  partitions = std::max<int64_t>(1, std::min(partitions, totalElements));
  int64_t elementsPerPartition = (totalElements + partitions - 1) / partitions;
  int64_t bytesPerPartition = elementsPerPartition * std::max(dtypeSizeBytes(dst->dtype), dtypeSizeBytes(src->dtype));
  int64_t chunksPerPartition = 1;
  for (const AccessPattern *ap : {dst, src}) {
    int64_t run = std::min(contiguousRun(*ap), elementsPerPartition);
    chunksPerPartition = std::max(chunksPerPartition, (elementsPerPartition + run - 1) / run);
  }
  DmaCopyShape shape{partitions, bytesPerPartition, chunksPerPartition};
  double totalNs = costDmaCopyNs(profile, shape);
  estimate.triggerNs = profile.dma.triggerNs;
  estimate.busyNs = totalNs - profile.dma.triggerNs;
  // HBM traffic cannot beat the core's share of HBM bandwidth (section 9.4 global limiter).
  if (dst->space == MemSpace::HBM || src->space == MemSpace::HBM)
    estimate.busyNs = std::max(estimate.busyNs, static_cast<double>(partitions * bytesPerPartition) /
                                                    profile.hbm.bytesPerNsPerCore);
  estimate.dmaEngineShare = static_cast<double>(std::min(partitions, profile.dma.enginesPerCore)) /
                            static_cast<double>(profile.dma.enginesPerCore);
  return estimate;
}

}  // namespace

int64_t dmaEnginesUsed(const Instruction &insn, const MachineProfile &profile) {
  const AccessPattern *dst = operand(insn, "dst"), *src = operand(insn, "src");
  if (!dst || !src) return 0;
  uint64_t elements = dst->partitionCount * freeSizeElements(*dst);
  int64_t rows = 1;
  if (dst->space == MemSpace::SBUF)
    rows = dst->partitionCount;
  else if (src->space == MemSpace::SBUF)
    rows = src->partitionCount;
  else if (!dst->dims.empty())
    rows = dst->dims.front().count;
  if (rows <= 0 || elements % static_cast<uint64_t>(rows) != 0) rows = 1;
  int64_t rowsPerEngine = dmaPartitionsPerEngine(profile, rows);
  return (rows + rowsPerEngine - 1) / rowsPerEngine;
}

double semaphoreLatencyNs(const MachineProfile &profile, Engine engine) {
  Engine clock = engine == Engine::DMA ? Engine::SP : engine;
  return cyclesToNs(profile, clock, static_cast<double>(profile.semLatencyCycles));
}

InstructionEstimate estimateInstruction(const Instruction &insn, Engine engine, const MachineProfile &profile) {
  if (insn.opcode == Opcode::DmaCopy) return estimateDma(insn, profile);
  InstructionEstimate estimate;
  // SP runs nothing but collectives, which cost what the simulator charges them.
  if (engine == Engine::DMA || (engine == Engine::SP && !isCollective(insn.opcode))) return estimate;
  // The simulator's own cost function (isa/instruction_cost.h), so the two cannot disagree.
  Expected<InstructionCost> cost = costInstructionOn(insn, engine, /*index=*/0, profile);
  TESSEL_CHECK(cost.ok(), "estimateInstruction: {}", cost.diag().message);
  estimate.busyNs = cost->busyNs;
  // A matmul stream hides each LoadStationary behind the previous MultiplyMoving (section 9.2): the
  // PE is busy for the longer of the two halves per matmul.
  if (insn.opcode == Opcode::NcMatmul) estimate.busyNs = std::max(cost->busyNs, cost->loadStationaryNs);
  estimate.latencyNs = cost->pipeLatencyNs;
  estimate.dvePerfMode = cost->dvePerfMode;
  return estimate;
}

}  // namespace tessel::nc::tile
