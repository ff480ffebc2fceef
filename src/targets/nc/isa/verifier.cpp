// Tile-rule verifier (rules T1-T15 of accelerator-model.md section 7 that apply to the opcodes of
// isa.def, plus engine, memory-connectivity and dtype rules of sections 3-4).
#include "targets/nc/isa/verifier.h"

#include <algorithm>
#include <initializer_list>

#include <fmt/format.h>

#include "targets/nc/isa/tile_rules.h"

namespace tessel::nc {
namespace {

class Checker {
 public:
  Checker(const Instruction &insn, size_t index, const IsaLimits &limits)
      : insn_(insn), limits_(limits), prefix_(fmt::format("#{} {}.{}: ", index, mnemonic(insn.opcode),
                                                          engineName(insn.engine))) {}

  std::vector<std::string> run();

 private:
  template <class... Args>
  void report(fmt::format_string<Args...> format, Args &&...args) {
    errors_.push_back(prefix_ + fmt::format(format, std::forward<Args>(args)...));
  }
  const AccessPattern *slot(std::string_view name) const {
    const std::vector<OperandSlot> &slots = operandSlots(insn_.opcode);
    for (size_t i = 0; i < slots.size(); ++i)
      if (slots[i].name == name && insn_.operands[i]) return &*insn_.operands[i];
    return nullptr;
  }
  void checkOperand(std::string_view name, const AccessPattern &ap, bool isDst);
  void checkMatmul();
  void checkTranspose();
  void checkOpcodeRules();
  void checkPerPartitionScalars(std::initializer_list<const char *> names);
  void checkSync();
  void checkCollective();

  const Instruction &insn_;
  const IsaLimits &limits_;
  std::string prefix_;
  std::vector<std::string> errors_;
};


void Checker::checkOperand(std::string_view name, const AccessPattern &ap, bool isDst) {
  uint64_t capacity = ap.space == MemSpace::SBUF   ? limits_.sbufBytesPerPartition
                      : ap.space == MemSpace::PSUM ? limits_.psumBytesPerPartition
                                                   : limits_.hbmBytes;
  if (ap.space == MemSpace::HBM) {
    if (ap.startPartition != 0 || ap.partitionCount != 1)
      report("{}: HBM operand must use p0:1 (HBM is linear), got p{}:{}", name, ap.startPartition, ap.partitionCount);
  } else {
    int start = ap.startPartition, count = ap.partitionCount;
    if (!partitionsInRange(limits_, start, count))
      report("{}: partitions p{}:{} outside 0..{} (T1)", name, start, count, limits_.partitions);
    const int64_t align = partitionStartAlignment(count, limits_.partitions);
    if (start % align != 0)
      report("{}: start partition {} not allowed for {} partitions; must be a multiple of {} (T6)", name, start,
             count, align);
  }
  // Free dim widths: SBUF/PSUM access patterns have int16 strides and uint16 counts (section 4.2);
  // HBM operands are DMA descriptors, whose fields are wide.
  for (size_t d = 0; d < ap.dims.size(); ++d) {
    const FreeDim &dim = ap.dims[d];
    if (dim.count == 0) {
      report("{}: free dim {} has count 0; every dim needs count >= 1", name, d);
      return;
    }
    if (ap.space == MemSpace::HBM) continue;
    if (!accessDimEncodable(dim.strideElements, 1))
      report("{}: free dim {} stride {} outside the {} access-pattern range {}..{} (int16 stride)", name, d,
             dim.strideElements, memSpaceName(ap.space), INT16_MIN, INT16_MAX);
    if (!accessDimEncodable(0, dim.count))
      report("{}: free dim {} count {} outside the {} access-pattern range 1..{} (uint16 count)", name, d, dim.count,
             memSpaceName(ap.space), UINT16_MAX);
  }
  // Byte range inside one partition (or HBM), counting negative strides; wide HBM dims can overflow
  // int64, which is out of range by definition.
  int64_t minElement = 0, maxElement = 0;
  bool overflow = false;
  for (const FreeDim &dim : ap.dims) {
    int64_t span = 0;
    overflow |= __builtin_mul_overflow(dim.strideElements, static_cast<int64_t>(dim.count) - 1, &span);
    overflow |= __builtin_add_overflow(span < 0 ? minElement : maxElement, span, span < 0 ? &minElement : &maxElement);
  }
  int64_t size = dtypeSizeBytes(ap.dtype), minBytes = 0, maxBytes = 0;
  overflow |= __builtin_mul_overflow(minElement, size, &minBytes);
  overflow |= __builtin_mul_overflow(maxElement + 1, size, &maxBytes);
  uint64_t elements = 1;
  for (const FreeDim &dim : ap.dims) overflow |= __builtin_mul_overflow(elements, uint64_t{dim.count}, &elements);
  if (overflow) {
    report("{}: free dims span more than 64-bit byte addresses; outside {} (0..{})", name, memSpaceName(ap.space),
           capacity);
  } else if (ap.offsetBytes > capacity) {
    report("{}: offset {} outside {} (0..{})", name, ap.offsetBytes, memSpaceName(ap.space), capacity);
  } else {
    int64_t first = static_cast<int64_t>(ap.offsetBytes) + minBytes;  // offset <= capacity < 2^62.
    uint64_t end = ap.offsetBytes + static_cast<uint64_t>(maxBytes);
    if (first < 0 || end > capacity)
      report("{}: bytes [{}, {}) outside {} (0..{})", name, first, end, memSpaceName(ap.space), capacity);
  }
  // Engine <-> memory connectivity (section 4.4).
  bool psum = ap.space == MemSpace::PSUM, hbm = ap.space == MemSpace::HBM;
  switch (insn_.engine) {
    case Engine::PE:
      if (hbm || (isDst && !psum) || (!isDst && psum))
        report("{}: PE reads SBUF and writes PSUM only, got {} {}", name, isDst ? "dst in" : "source in",
               memSpaceName(ap.space));
      break;
    case Engine::POOL:
      if (hbm || !poolAccesses(limits_, ap.space)) report("{}: POOL cannot access {} (T11)", name, memSpaceName(ap.space));
      break;
    case Engine::DMA:
      if (psum) report("{}: DMA cannot access PSUM (section 4.3)", name);
      break;
    case Engine::DVE:
    case Engine::ACT:
      if (hbm) report("{}: {} cannot access HBM", name, engineName(insn_.engine));
      break;
    case Engine::SP: break;  // Only collectives run on SP; checkCollective() holds them to SBUF.
  }
  // T7: DVE/ACT free size.
  if (uint64_t max = maxFreeElements(limits_, insn_.engine, ap.space); freeSizeElements(ap) > max)
    report("{}: free size {} exceeds {} elements in {} (T7)", name, freeSizeElements(ap), max, memSpaceName(ap.space));
}

void Checker::checkMatmul() {
  const AccessPattern *dst = slot("dst"), *stat = slot("stationary"), *mov = slot("moving");
  if (!dst || !stat || !mov) return;
  if (dst->space != MemSpace::PSUM) report("dst: matmul output must be in PSUM, got {}", memSpaceName(dst->space));
  if (dst->dtype != DType::F32) report("dst: matmul output must be f32, got {} (section 3)", dtypeName(dst->dtype));
  for (const AccessPattern *in : {stat, mov})
    if (!isPeInput(in->dtype))
      report("{}: PE input dtype {} not one of f8e4m3 f8e5m2 bf16 f16 tf32 f32 (section 3)",
             in == stat ? "stationary" : "moving", dtypeName(in->dtype));
  if (!peInputsPair(stat->dtype, mov->dtype))  // T12
    report("stationary {} with moving {}: f32/tf32 pairs only with f32/tf32 (T12)", dtypeName(stat->dtype),
           dtypeName(mov->dtype));
  if (stat->partitionCount != mov->partitionCount)  // T4
    report("contraction K differs: stationary has {} partitions, moving {} (T4)", stat->partitionCount,
           mov->partitionCount);
  const uint64_t m = freeSizeElements(*stat), n = freeSizeElements(*mov);
  if (!matmulFits(limits_, stat->partitionCount, static_cast<int64_t>(m), static_cast<int64_t>(n)))  // T3
    report("K = {}, M = {}, N = {}; limits K <= {}, M <= {}, N <= {} (T3)", stat->partitionCount, m, n,
           limits_.matmulMaxK, limits_.matmulMaxStationaryFree, limits_.matmulMaxMovingFree);
  if (dst->partitionCount != m || freeSizeElements(*dst) != n)
    report("dst shape {}x{} does not match M x N = {}x{}", dst->partitionCount, freeSizeElements(*dst), m, n);
  // T2: one matmul output lies inside one PSUM bank.
  uint64_t bytes = freeSizeElements(*dst) * dtypeSizeBytes(dst->dtype);
  if (dst->space == MemSpace::PSUM && !withinOnePsumBank(limits_, dst->offsetBytes, bytes))
    report("dst: bytes [{}, {}) cross a {}-byte PSUM bank boundary (T2)", dst->offsetBytes, dst->offsetBytes + bytes,
           limits_.psumBankBytes);
}

void Checker::checkTranspose() {
  const AccessPattern *dst = slot("dst"), *src = slot("src");
  if (!dst || !src) return;
  const int64_t max = transposeLimit(limits_, insn_.engine == Engine::PE);
  const uint64_t free = freeSizeElements(*src);
  if (src->partitionCount > max || free > static_cast<uint64_t>(max))  // T9
    report("src {}x{} exceeds the {} transpose limit {}x{} (T9)", src->partitionCount, free, engineName(insn_.engine),
           max, max);
  if (dst->dtype != src->dtype)
    report("dst dtype {} differs from src dtype {} (T9)", dtypeName(dst->dtype), dtypeName(src->dtype));
  if (dst->partitionCount != free || freeSizeElements(*dst) != src->partitionCount)
    report("dst {}x{} is not the transpose of src {}x{}", dst->partitionCount, freeSizeElements(*dst),
           src->partitionCount, free);
  if (insn_.engine == Engine::PE && dst->space != MemSpace::PSUM)
    report("dst: PE transpose writes PSUM, got {}", memSpaceName(dst->space));
}

// Optional [P,1] operands (bias, scale, accum, scalar0/1): one element in each of dst's partitions.
void Checker::checkPerPartitionScalars(std::initializer_list<const char *> names) {
  const AccessPattern *dst = slot("dst");
  for (const char *name : names) {
    const AccessPattern *ap = slot(name);
    if (!ap) continue;
    if (freeSizeElements(*ap) != 1)
      report("{}: must be one element per partition ([P,1]), got free size {}", name, freeSizeElements(*ap));
    if (dst && ap->partitionCount != dst->partitionCount)
      report("{}: {} partitions, dst has {}; a [P,1] operand covers dst's partitions", name, ap->partitionCount,
             dst->partitionCount);
  }
}

// Semaphore waits, the DMA queue (section 2, 5.5) and the core count of a collective.
void Checker::checkSync() {
  if (insn_.waits.size() > static_cast<size_t>(kMaxWaits))
    report("{} semaphore waits; at most {}", insn_.waits.size(), kMaxWaits);
  if (insn_.opcode == Opcode::DmaCopy) {
    if (insn_.queue >= limits_.dmaQueues)
      report("queue q{} outside the DMA queues q0..q{}", insn_.queue, limits_.dmaQueues - 1);
  } else if (insn_.queue != 0) {
    report("queue q{} on a non-DMA instruction; only dma_copy has a queue (must be 0)", insn_.queue);
  }
  if (const auto &dynamic = insn_.dynamicOffset) {
    const std::vector<OperandSlot> &slots = operandSlots(insn_.opcode);
    if (insn_.opcode != Opcode::DmaCopy) {
      report("a dynamic offset on {}; only dma_copy takes one", mnemonic(insn_.opcode));
    } else if (dynamic->operand >= slots.size() || !insn_.operands[dynamic->operand] ||
               insn_.operands[dynamic->operand]->space != MemSpace::HBM) {
      report("dynamic offset: operand slot {} is not an HBM operand; only HBM addresses are placed at launch",
             dynamic->operand);
    }
  }
  if (isCollective(insn_.opcode)) {
    if (insn_.cores < 1 || insn_.cores > limits_.coresPerChip)
      report("cores={} outside the chip's cores 1..{}", insn_.cores, limits_.coresPerChip);
  } else if (insn_.cores != 0) {
    report("cores={} on a non-collective instruction; only all_gather and all_reduce have a core count (must be 0)",
           insn_.cores);
  }
}

// all_gather splits dst's partitions evenly over the cores; all_reduce adds floats in place.
void Checker::checkCollective() {
  const AccessPattern *dst = slot("dst");
  if (!dst) return;
  if (dst->space != MemSpace::SBUF) report("dst: collectives work on SBUF, got {}", memSpaceName(dst->space));
  if (insn_.opcode == Opcode::AllGather) {
    if (insn_.op0 != AluOp::None) report("op0 {} given; all_gather has no ALU op", aluOpName(insn_.op0));
    if (insn_.cores > 0 && dst->partitionCount % insn_.cores != 0)
      report("dst: {} partitions do not split into {} equal parts, one per core", dst->partitionCount, insn_.cores);
    return;
  }
  if (insn_.op0 != AluOp::Add)
    report("op0 {} is not add; all_reduce supports add only", aluOpName(insn_.op0));
  if (dst->dtype != DType::F32 && dst->dtype != DType::BF16)
    report("dst dtype {} is not f32 or bf16", dtypeName(dst->dtype));
}

void Checker::checkOpcodeRules() {
  switch (insn_.opcode) {
    case Opcode::NcMatmul: return checkMatmul();
    case Opcode::NcTranspose: return checkTranspose();
    case Opcode::AllGather:
    case Opcode::AllReduce: return checkCollective();
    case Opcode::Activation:
      if (insn_.func == ActFunc::None) report("func is required");
      checkPerPartitionScalars({"bias", "accum", "scale"});
      if (insn_.scalars.size() > 1 && !actTakesImmediateBias(limits_, insn_.scalars[1]))
        report("immediate bias {} not supported; the bias must be a [P,1] operand (T15)", insn_.scalars[1]);
      if (slot("accum")) {
        AluOp op = insn_.op0;
        if (op == AluOp::None)
          report("accum needs a reduce op in op0");
        else if (op != AluOp::Add && op != AluOp::Maximum && op != AluOp::Minimum && op != AluOp::Multiply)
          report("accum reduce op {} is not one of add, maximum, minimum, multiply", aluOpName(op));
        else if (!actReduceOpSupported(limits_, op))
          report("ACT reduce op {} not supported on this profile (T15)", aluOpName(op));
      }
      return;
    case Opcode::TensorTensor:
      if (insn_.op0 == AluOp::None) report("op0 is required");
      if (slot("in0") && slot("in1") && !inputsNotBothInPsum(slot("in0")->space, slot("in1")->space))
        report("in0 and in1 both in PSUM (T11)");
      return;
    case Opcode::TensorTensorScan:
      if (insn_.op0 == AluOp::None || insn_.op1 == AluOp::None) report("op0 and op1 are required");
      if (slot("in0") && slot("in1") && !inputsNotBothInPsum(slot("in0")->space, slot("in1")->space))
        report("in0 and in1 both in PSUM (T11)");
      checkPerPartitionScalars({"initial"});
      return;
    case Opcode::TensorScalar:
      if (insn_.op0 == AluOp::None) report("op0 is required");
      checkPerPartitionScalars({"scalar0", "scalar1"});
      if (slot("scalar1") && insn_.op1 == AluOp::None) report("scalar1 given but op1 is none");
      return;
    case Opcode::TensorScalarReduce: {
      const AluOp op = insn_.op0, reduce = insn_.op1;
      if (op == AluOp::None) report("op0 is required");
      else if (op == AluOp::Invert || op == AluOp::BitwiseAnd || op == AluOp::BitwiseOr || op == AluOp::BitwiseXor ||
               op == AluOp::LeftShift || op == AluOp::LogicalShiftRight)
        report("op0 {} is bitwise; tensor_scalar_reduce takes an arithmetic op", aluOpName(op));
      if (reduce != AluOp::Add && reduce != AluOp::Subtract && reduce != AluOp::Multiply && reduce != AluOp::Maximum &&
          reduce != AluOp::Minimum)
        report("op1 (the reduce op) {} is not one of add, subtract, multiply, maximum, minimum", aluOpName(reduce));
      checkPerPartitionScalars({"accum", "scalar0"});
      return;
    }
    case Opcode::TensorReduce:
      if (insn_.op0 == AluOp::None) report("op0 (the reduce op) is required");
      return;
    case Opcode::BnStats:
      if (slot("src") && !bnStatsFits(limits_, freeSizeElements(*slot("src"))))
        report("src free size {} exceeds {} (T8)", freeSizeElements(*slot("src")), limits_.bnStatsMaxFree);
      return;
    case Opcode::Iota:
    case Opcode::AffineSelect:
      for (const auto &operand : insn_.operands)
        if (operand && operand->space != MemSpace::SBUF) report("operands must be in SBUF (T13)");
      return;
    case Opcode::DmaCopy:
      if (slot("dst") && slot("src")) {
        uint64_t dstCount = slot("dst")->partitionCount * freeSizeElements(*slot("dst"));
        uint64_t srcCount = slot("src")->partitionCount * freeSizeElements(*slot("src"));
        if (dstCount != srcCount) report("dst has {} elements, src {}", dstCount, srcCount);
      }
      return;
    default: return;
  }
}

std::vector<std::string> Checker::run() {
  checkSync();
  if (!(allowedEngines(insn_.opcode) & engineBit(insn_.engine))) {
    report("engine {} may not run {}", engineName(insn_.engine), mnemonic(insn_.opcode));
    return errors_;  // The remaining rules assume a legal engine.
  }
  const std::vector<OperandSlot> &slots = operandSlots(insn_.opcode);
  for (size_t i = 0; i < slots.size(); ++i)
    if (insn_.operands[i]) checkOperand(slots[i].name, *insn_.operands[i], /*isDst=*/i == 0);
  checkOpcodeRules();
  return errors_;
}

}  // namespace

IsaLimits isaLimitsFor(const MachineProfile &profile) {
  IsaLimits limits;
  limits.partitions = static_cast<int>(profile.partitions);
  limits.sbufBytesPerPartition = static_cast<uint64_t>(profile.sbuf.bytesPerPartition);
  limits.psumBytesPerPartition = static_cast<uint64_t>(profile.psum.bytesPerPartition);
  limits.psumBankBytes = static_cast<uint64_t>(profile.psum.bankFp32Elements) * dtypeSizeBytes(DType::F32);
  limits.hbmBytes = static_cast<uint64_t>(profile.hbm.bytesPerCore);
  limits.matmulMaxK = static_cast<int>(profile.pe.rows);
  limits.matmulMaxStationaryFree = static_cast<int>(profile.pe.cols);
  limits.matmulMaxMovingFree = static_cast<int>(profile.psum.bankFp32Elements);
  limits.peTransposeMax = static_cast<int>(std::min(profile.pe.rows, profile.pe.cols));
  // The profile's names (its loader admits these four) of ACT's accumulate ops.
  limits.actReduceOps = 0;
  for (const std::string &name : profile.act.reduceOps)
    limits.actReduceOps |= aluOpBit(name == "add"   ? AluOp::Add
                                    : name == "max" ? AluOp::Maximum
                                    : name == "min" ? AluOp::Minimum
                                                    : AluOp::Multiply);
  limits.poolPsumAccess = profile.pool.psumAccess;
  limits.actBiasImmediate = profile.act.biasImmediate;
  limits.dmaQueues = static_cast<int>(profile.dma.queuesPerEngine);
  limits.coresPerChip = static_cast<int>(profile.chip.coresPerChip);
  return limits;
}

std::vector<std::string> verifyInstruction(const Instruction &insn, size_t index, const IsaLimits &limits) {
  return Checker(insn, index, limits).run();
}

Status verifyProgram(const std::vector<Instruction> &program, const IsaLimits &limits) {
  std::vector<std::string> all;
  for (size_t i = 0; i < program.size(); ++i)
    for (std::string &error : verifyInstruction(program[i], i, limits)) all.push_back(std::move(error));
  if (all.empty()) return Status::success();
  std::string message = fmt::format("nc program: {} tile-rule violation(s):", all.size());
  for (const std::string &error : all) message += "\n  " + error;
  return makeError(ErrorCode::InvalidArgument, "{}", message);
}

}  // namespace tessel::nc
