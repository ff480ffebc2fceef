// Instruction costs; see instruction_cost.h. Each opcode maps its operands onto one cost.h function
// (the formula and its source are stated there); the comment on each case names the table row.
#include "targets/nc/isa/instruction_cost.h"

#include <algorithm>
#include <cstdlib>

namespace tessel::nc {
namespace {

// Section 8: fp8 FLOPs count at half weight so that the fp8 peak maps onto the bf16 peak.
constexpr double kFp8FlopWeight = 0.5;
// Section 6.1 tensor_reduce: N/2 cycles for bf16 in/out with add or max (twice the streaming rate).
constexpr double kBf16ReduceSpeedup = 2;
// Section 6.1 memset: N/2 cycles for a zero fill in bf16/fp16.
constexpr double kHalfZeroMemsetSpeedup = 2;
// Section 6.1 bn_aggr: max(MIN_II, 13*N/3) cycles, i.e. 13/3 streamed elements per input element.
constexpr int64_t kBnAggrWorkNumerator = 13, kBnAggrWorkDenominator = 3;

const AccessPattern *slot(const Instruction &insn, int index) {
  const auto &operand = insn.operands[static_cast<size_t>(index)];
  return operand ? &*operand : nullptr;
}

bool isHalfFloat(DType dtype) { return dtype == DType::BF16 || dtype == DType::F16; }

// Contiguous innermost dim: the innermost dim with more than one element steps by one element
// (count-1 dims do not count; a stride-0 broadcast dim is not contiguous).
bool isContiguous(const AccessPattern &ap) {
  for (auto it = ap.dims.rbegin(); it != ap.dims.rend(); ++it)
    if (it->count > 1) return it->strideElements == 1;
  return true;
}

int64_t freeElements(const AccessPattern &ap) { return static_cast<int64_t>(freeSizeElements(ap)); }

int64_t maxStrideBytes(std::initializer_list<const AccessPattern *> operands) {
  int64_t stride = 0;
  for (const AccessPattern *ap : operands)
    if (ap) stride = std::max(stride, innermostStrideBytes(*ap));
  return stride;
}

// The nc-v3 DVE performance-mode case of an instruction run on `engine` (section 5.2): bf16/fp16 in
// and out, SBUF placement and contiguity. Only the data operands count (dst and src; tensor_tensor:
// both inputs); tensor_scalar's f32 [P,1] scalar operands (and tensor_scalar_reduce's accum) do not
// disqualify it.
DvePerfCase dvePerfCaseOf(const Instruction &insn, Engine engine) {
  if (engine != Engine::DVE) return DvePerfCase::None;
  const AccessPattern *dst = slot(insn, 0), *src = slot(insn, 1);
  if (!dst || !src) return DvePerfCase::None;
  if (insn.opcode == Opcode::TensorCopy || insn.opcode == Opcode::TensorScalar ||
      insn.opcode == Opcode::TensorScalarReduce) {
    if (!isHalfFloat(dst->dtype) || !isHalfFloat(src->dtype)) return DvePerfCase::None;
    bool bothSbuf = dst->space == MemSpace::SBUF && src->space == MemSpace::SBUF;
    if (bothSbuf && isContiguous(*dst) && isContiguous(*src)) return DvePerfCase::CopyOrTensorScalarBf16SbufContiguous;
    return DvePerfCase::CopyOrTensorScalarBf16Other;
  }
  if (insn.opcode == Opcode::TensorTensor) {
    const AccessPattern *in1 = slot(insn, 2);
    if (!in1 || !isHalfFloat(dst->dtype) || !isHalfFloat(src->dtype) || !isHalfFloat(in1->dtype)) return DvePerfCase::None;
    if (src->space == MemSpace::SBUF && in1->space == MemSpace::SBUF) return DvePerfCase::TensorTensorBf16Sbuf;
  }
  return DvePerfCase::None;
}

double pipeLatencyNs(const MachineProfile &profile, Engine engine) {
  switch (engine) {
    case Engine::PE: return cyclesToNs(profile, engine, static_cast<double>(profile.pe.pipeLatencyCycles));
    case Engine::DVE: return cyclesToNs(profile, engine, static_cast<double>(profile.dve.pipeLatencyCycles));
    case Engine::ACT: return cyclesToNs(profile, engine, static_cast<double>(profile.act.pipeLatencyCycles));
    // POOL's start-up is inside its cost (GPSIMD_START); the profile has no separate POOL latency.
    case Engine::POOL:
    case Engine::SP:
    case Engine::DMA: break;
  }
  return 0;
}

Diagnostic noRule(const Instruction &insn, Engine engine, size_t index) {
  return makeError(ErrorCode::InvalidArgument, "instruction {} ({}.{}): no timing rule for this opcode on {}", index,
                   mnemonic(insn.opcode), engineName(insn.engine), engineName(engine));
}

}  // namespace

PeDtype peDtypeOf(DType dtype) {
  switch (dtype) {
    case DType::F8E4M3:
    case DType::F8E5M2:
    case DType::F8E4M3FN:
    case DType::F8E8M0FNU: return PeDtype::Fp8;
    case DType::F16: return PeDtype::Fp16;
    case DType::TF32: return PeDtype::Tf32;
    case DType::F32: return PeDtype::Fp32;
    default: return PeDtype::Bf16;
  }
}

int64_t innermostStrideBytes(const AccessPattern &ap) {
  int64_t elementBytes = dtypeSizeBytes(ap.dtype);
  for (auto it = ap.dims.rbegin(); it != ap.dims.rend(); ++it)
    if (it->count > 1) return std::abs(it->strideElements) * elementBytes;
  return elementBytes;
}

// One case per opcode, each mapping operands onto one cost.h function: the switch reads as the
// section 6.1 table, so it stays one function rather than a dozen three-line helpers.
Expected<InstructionCost> costInstruction(const Instruction &insn, size_t index, const MachineProfile &profile) {
  return costInstructionOn(insn, insn.engine, index, profile);
}

Expected<InstructionCost> costInstructionOn(const Instruction &insn, Engine engine, size_t index,
                                            const MachineProfile &profile) {
  InstructionCost cost;
  cost.pipeLatencyNs = pipeLatencyNs(profile, engine);
  const AccessPattern *dst = slot(insn, 0), *src = slot(insn, 1);
  if (!dst) return noRule(insn, engine, index);
  auto busy = [&](int64_t cycles) { cost.busyNs = cyclesToNs(profile, engine, static_cast<double>(cycles)); };
  auto stream = [&](int64_t elements, int64_t inputs, int64_t strideBytes, double speedup) {
    busy(costStreamingCycles(profile, engine, StreamShape{elements, inputs, strideBytes, speedup}));
  };
  const bool onPool = engine == Engine::POOL, onDve = engine == Engine::DVE, onAct = engine == Engine::ACT;

  switch (insn.opcode) {
    case Opcode::NcMatmul: {  // Section 5.1: LoadStationary + MultiplyMoving.
      const AccessPattern *moving = slot(insn, 2);
      if (engine != Engine::PE || !src || !moving) return noRule(insn, engine, index);
      MatmulShape shape{src->partitionCount, freeElements(*src), freeElements(*moving), peDtypeOf(src->dtype)};
      busy(costMatmulCycles(profile, shape));
      cost.loadStationaryNs = cyclesToNs(profile, engine, static_cast<double>(costLoadStationaryCycles(profile, shape.m)));
      double weight = shape.dtype == PeDtype::Fp8 ? kFp8FlopWeight : 1.0;
      cost.matmulFlops = matmulFlops(shape) * weight;
      cost.peFlops = cost.matmulFlops;
      return cost;
    }
    case Opcode::NcTranspose: {  // Section 6.1: PE max(P, min(64, F)); DVE max(MIN_II, N).
      if (!src) return noRule(insn, engine, index);
      if (engine == Engine::PE) {
        int64_t partitions = src->partitionCount, free = freeElements(*src);
        busy(costPeTransposeCycles(profile, partitions, free));
        // A PE transpose is a matmul of the data (stationary [P, F]) with a P x P identity (moving).
        double weight = peDtypeOf(src->dtype) == PeDtype::Fp8 ? kFp8FlopWeight : 1.0;
        cost.peFlops = matmulFlops(MatmulShape{partitions, free, partitions}) * weight;
        return cost;
      }
      if (!onDve) return noRule(insn, engine, index);
      stream(freeElements(*src), 1, maxStrideBytes({dst, src}), 1.0);
      return cost;
    }
    case Opcode::Activation: {  // Section 6.1: max(MIN_II, N) (+ MIN_II with the accumulate).
      if (!onAct || !src) return noRule(insn, engine, index);
      busy(costActivationCycles(profile, freeElements(*src), /*reduce=*/slot(insn, 3) != nullptr));
      return cost;
    }
    case Opcode::TensorTensor: {  // Section 6.1: N with a PSUM input or bf16 add/sub/mul in SBUF, else 2N.
      const AccessPattern *in1 = slot(insn, 2);
      if (!src || !in1) return noRule(insn, engine, index);
      if (onPool) {
        busy(costPoolCycles(profile, freeElements(*src)));
        return cost;
      }
      if (!onDve) return noRule(insn, engine, index);
      bool psumInput = src->space == MemSpace::PSUM || in1->space == MemSpace::PSUM;
      bool cheapBf16 = src->dtype == DType::BF16 && in1->dtype == DType::BF16 && dst->dtype == DType::BF16 &&
                       (insn.op0 == AluOp::Add || insn.op0 == AluOp::Subtract || insn.op0 == AluOp::Multiply) &&
                       isContiguous(*src) && isContiguous(*in1) && isContiguous(*dst);
      int64_t inputs = psumInput || cheapBf16 ? 1 : 2;
      cost.dvePerfCase = dvePerfCaseOf(insn, engine);
      cost.dvePerfMode = dvePerfModeSpeedup(profile, cost.dvePerfCase) > 1;
      // The performance mode doubles the two-input rate; the one-input cases already run at N.
      double speedup = inputs == 2 ? dvePerfModeSpeedup(profile, cost.dvePerfCase) : 1.0;
      stream(freeElements(*src), inputs, maxStrideBytes({dst, src, in1}), speedup);
      return cost;
    }
    case Opcode::TensorTensorScan: {  // Section 6.1: max(MIN_II, 2N).
      const AccessPattern *in1 = slot(insn, 2);
      if (!onDve || !src || !in1) return noRule(insn, engine, index);
      stream(freeElements(*src), 2, maxStrideBytes({dst, src, in1}), 1.0);
      return cost;
    }
    case Opcode::TensorScalar:
    case Opcode::TensorCopy: {  // Section 6.1: max(MIN_II, N); nc-v3 DVE performance mode /4 or /2.
      if (!src) return noRule(insn, engine, index);
      if (onPool) {
        busy(costPoolCycles(profile, freeElements(*src)));
        return cost;
      }
      if (!onDve && !onAct) return noRule(insn, engine, index);
      cost.dvePerfCase = dvePerfCaseOf(insn, engine);
      double speedup = dvePerfModeSpeedup(profile, cost.dvePerfCase);
      stream(freeElements(*src), 1, maxStrideBytes({dst, src}), speedup);
      cost.dvePerfMode = speedup > 1;
      return cost;
    }
    case Opcode::TensorScalarReduce: {  // Section 6.1: max(MIN_II, N) + MIN_II.
      // The tensor_scalar pass (with its nc-v3 performance mode) plus the reduction's MIN_II.
      if (!onDve || !src) return noRule(insn, engine, index);
      cost.dvePerfCase = dvePerfCaseOf(insn, engine);
      double speedup = dvePerfModeSpeedup(profile, cost.dvePerfCase);
      busy(costTensorScalarReduceCycles(profile, StreamShape{freeElements(*src), 1, maxStrideBytes({dst, src}), speedup}));
      cost.dvePerfMode = speedup > 1;
      return cost;
    }
    case Opcode::TensorReduce: {  // Section 6.1: N; N/2 for bf16 in/out with add or max.
      if (!onDve || !src) return noRule(insn, engine, index);
      bool fast = src->dtype == DType::BF16 && dst->dtype == DType::BF16 &&
                  (insn.op0 == AluOp::Add || insn.op0 == AluOp::Maximum);
      stream(freeElements(*src), 1, maxStrideBytes({src}), fast ? kBf16ReduceSpeedup : 1.0);
      return cost;
    }
    case Opcode::Memset: {  // Section 6.1: max(MIN_II, N); N/2 for zero in bf16/fp16.
      if (onPool) {
        busy(costPoolCycles(profile, freeElements(*dst)));
        return cost;
      }
      if (!onDve) return noRule(insn, engine, index);
      bool zeroHalf = isHalfFloat(dst->dtype) && !insn.scalars.empty() && insn.scalars[0] == 0.0f;
      stream(freeElements(*dst), 1, maxStrideBytes({dst}), zeroHalf ? kHalfZeroMemsetSpeedup : 1.0);
      return cost;
    }
    case Opcode::Iota:
    case Opcode::AffineSelect: {  // Section 6.1: GPSIMD_START + N.
      if (!onPool) return noRule(insn, engine, index);
      busy(costPoolCycles(profile, freeElements(*dst)));
      return cost;
    }
    case Opcode::BnStats: {  // Section 6.1: max(MIN_II, N).
      if (!onDve || !src) return noRule(insn, engine, index);
      stream(freeElements(*src), 1, maxStrideBytes({src}), 1.0);
      return cost;
    }
    case Opcode::BnAggr: {  // Section 6.1: max(MIN_II, 13*N/3).
      if (!onDve || !src) return noRule(insn, engine, index);
      int64_t work = (freeElements(*src) * kBnAggrWorkNumerator + kBnAggrWorkDenominator - 1) / kBnAggrWorkDenominator;
      stream(work, 1, maxStrideBytes({src}), 1.0);
      return cost;
    }
    case Opcode::AllGather:
    case Opcode::AllReduce: {  // The ring model of the profile's collective section; SP only triggers it.
      if (engine != Engine::SP || insn.cores == 0) return noRule(insn, engine, index);
      int64_t bytes = dst->partitionCount * freeElements(*dst) * dtypeSizeBytes(dst->dtype);
      cost.busyNs = costCollectiveNs(
          profile, insn.opcode == Opcode::AllReduce ? Collective::AllReduce : Collective::AllGather, bytes, insn.cores);
      return cost;
    }
    case Opcode::DmaCopy: break;
  }
  return noRule(insn, engine, index);
}

}  // namespace tessel::nc
