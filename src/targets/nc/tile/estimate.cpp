// Instruction time estimates; see estimate.h. Each case names the cost.h function and the section
// of accelerator-model.md it follows.
#include "targets/nc/tile/estimate.h"

#include <algorithm>
#include <cstdlib>

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

PeDtype peDtype(DType dtype) {
  switch (dtype) {
    case DType::F8E4M3:
    case DType::F8E5M2:
    case DType::F8E4M3FN: return PeDtype::Fp8;
    case DType::F16: return PeDtype::Fp16;
    case DType::TF32: return PeDtype::Tf32;
    case DType::F32: return PeDtype::Fp32;
    default: return PeDtype::Bf16;
  }
}

bool isHalf(DType dtype) { return dtype == DType::BF16 || dtype == DType::F16; }

int64_t innermostStrideBytes(const Instruction &insn) {
  int64_t stride = 0;
  for (const auto &ap : insn.operands)
    if (ap && !ap->dims.empty())
      stride = std::max(stride, std::abs(ap->dims.back().strideElements) * dtypeSizeBytes(ap->dtype));
  return stride;
}

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

/// The DVE performance-mode case of a streaming instruction (section 5.2; speedup 1 on nc-v2).
DvePerfCase dvePerfCase(const Instruction &insn) {
  bool allHalf = true, allSbuf = true, contiguous = true;
  for (const auto &ap : insn.operands) {
    if (!ap) continue;
    allHalf &= isHalf(ap->dtype);
    allSbuf &= ap->space == MemSpace::SBUF;
    contiguous &= ap->dims.empty() || ap->dims.back().strideElements == 1;
  }
  if (!allHalf) return DvePerfCase::None;
  switch (insn.opcode) {
    case Opcode::TensorTensor: return allSbuf ? DvePerfCase::TensorTensorBf16Sbuf : DvePerfCase::None;
    case Opcode::TensorCopy:
    case Opcode::TensorScalar:
      return allSbuf && contiguous ? DvePerfCase::CopyOrTensorScalarBf16SbufContiguous
                                   : DvePerfCase::CopyOrTensorScalarBf16Other;
    default: return DvePerfCase::None;
  }
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
  const AccessPattern *dst = operand(insn, "dst");
  const AccessPattern *src = operand(insn, "src");
  int64_t n = freeSize(src ? src : dst);
  int64_t cycles = 0, pipeCycles = 0;
  switch (engine) {
    case Engine::PE: {
      pipeCycles = profile.pe.pipeLatencyCycles;
      if (insn.opcode == Opcode::NcMatmul) {
        const AccessPattern *stationary = operand(insn, "stationary"), *moving = operand(insn, "moving");
        MatmulShape shape{stationary->partitionCount, freeSize(stationary), freeSize(moving),
                          peDtype(stationary->dtype)};
        cycles = costMatmulStreamPairCycles(profile, shape);  // Section 9.2: LS hidden behind the previous MM.
      } else {
        cycles = costPeTransposeCycles(profile, src ? src->partitionCount : 1, n);  // Section 6.1.
      }
      break;
    }
    case Engine::ACT: {
      pipeCycles = profile.act.pipeLatencyCycles;
      if (insn.opcode == Opcode::Activation)
        cycles = costActivationCycles(profile, n, operand(insn, "accum") != nullptr);  // Section 5.3.
      else
        cycles = costStreamingCycles(profile, Engine::ACT, StreamShape{n, 1, innermostStrideBytes(insn)});
      break;
    }
    case Engine::DVE: {
      pipeCycles = profile.dve.pipeLatencyCycles;
      StreamShape shape{n, 1, innermostStrideBytes(insn), dvePerfModeSpeedup(profile, dvePerfCase(insn))};
      estimate.dvePerfMode = shape.speedup > 1;
      if (insn.opcode == Opcode::TensorTensor) {
        // Two streamed SBUF inputs cost 2N; one PSUM input streams at N (section 6.1).
        const AccessPattern *in0 = operand(insn, "in0"), *in1 = operand(insn, "in1");
        bool onePsum = (in0 && in0->space == MemSpace::PSUM) || (in1 && in1->space == MemSpace::PSUM);
        shape.streamedInputs = onePsum ? 1 : 2;
      }
      cycles = costStreamingCycles(profile, Engine::DVE, shape);
      break;
    }
    case Engine::POOL: cycles = costPoolCycles(profile, n); break;  // Section 5.4.
    case Engine::SP:
    case Engine::DMA: break;
  }
  if (engine != Engine::SP && engine != Engine::DMA) {
    estimate.busyNs = cyclesToNs(profile, engine, static_cast<double>(cycles));
    estimate.latencyNs = cyclesToNs(profile, engine, static_cast<double>(pipeCycles));
  }
  return estimate;
}

}  // namespace tessel::nc::tile
