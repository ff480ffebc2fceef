// Tile-rule verifier (rules T1-T15 of accelerator-model.md section 7 that apply to the opcodes of
// isa.def, plus engine, memory-connectivity and dtype rules of sections 3-4).
#include "targets/nc/isa/verifier.h"

#include <algorithm>

#include <fmt/format.h>

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

  const Instruction &insn_;
  const IsaLimits &limits_;
  std::string prefix_;
  std::vector<std::string> errors_;
};

bool isPeInput(DType t) {
  return t == DType::F8E4M3 || t == DType::F8E5M2 || t == DType::BF16 || t == DType::F16 ||
         t == DType::TF32 || t == DType::F32;
}
bool isWide(DType t) { return t == DType::F32 || t == DType::TF32; }

void Checker::checkOperand(std::string_view name, const AccessPattern &ap, bool isDst) {
  uint64_t capacity = ap.space == MemSpace::SBUF   ? limits_.sbufBytesPerPartition
                      : ap.space == MemSpace::PSUM ? limits_.psumBytesPerPartition
                                                   : limits_.hbmBytes;
  if (ap.space == MemSpace::HBM) {
    if (ap.startPartition != 0 || ap.partitionCount != 1)
      report("{}: HBM operand must use p0:1 (HBM is linear), got p{}:{}", name, ap.startPartition, ap.partitionCount);
  } else {
    int start = ap.startPartition, count = ap.partitionCount;
    if (count < 1 || start + count > limits_.partitions)  // T1
      report("{}: partitions p{}:{} outside 0..{} (T1)", name, start, count, limits_.partitions);
    int align = count > 64 ? 128 : count > 32 ? 64 : 32;  // T6, section 4.2.
    if (start % align != 0)
      report("{}: start partition {} not allowed for {} partitions; must be a multiple of {} (T6)", name, start,
             count, align);
  }
  // Byte range inside one partition (or HBM), counting negative strides.
  int64_t minElement = 0, maxElement = 0;
  for (const FreeDim &dim : ap.dims) {
    if (dim.count == 0) {
      report("{}: free dim of count 0", name);
      return;
    }
    int64_t span = static_cast<int64_t>(dim.strideElements) * (dim.count - 1);
    (span < 0 ? minElement : maxElement) += span;
  }
  int64_t size = dtypeSizeBytes(ap.dtype);
  int64_t first = static_cast<int64_t>(std::min<uint64_t>(ap.offsetBytes, INT64_MAX / 4)) + minElement * size;
  uint64_t end = ap.offsetBytes + static_cast<uint64_t>((maxElement + 1) * size);
  if (first < 0 || end > capacity || ap.offsetBytes > capacity)
    report("{}: bytes [{}, {}) outside {} (0..{})", name, first, end, memSpaceName(ap.space), capacity);
  // Engine <-> memory connectivity (section 4.4).
  bool psum = ap.space == MemSpace::PSUM, hbm = ap.space == MemSpace::HBM;
  switch (insn_.engine) {
    case Engine::PE:
      if (hbm || (isDst && !psum) || (!isDst && psum))
        report("{}: PE reads SBUF and writes PSUM only, got {} {}", name, isDst ? "dst in" : "source in",
               memSpaceName(ap.space));
      break;
    case Engine::POOL:
      if (psum || hbm) report("{}: POOL cannot access {} (T11)", name, memSpaceName(ap.space));
      break;
    case Engine::DMA:
      if (psum) report("{}: DMA cannot access PSUM (section 4.3)", name);
      break;
    case Engine::DVE:
    case Engine::ACT:
      if (hbm) report("{}: {} cannot access HBM", name, engineName(insn_.engine));
      break;
  }
  // T7: DVE/ACT free size.
  if (insn_.engine == Engine::DVE || insn_.engine == Engine::ACT) {
    uint64_t max = psum ? limits_.dveActMaxFreePsum : limits_.dveActMaxFreeSbuf;
    if (freeSizeElements(ap) > max)
      report("{}: free size {} exceeds {} elements in {} (T7)", name, freeSizeElements(ap), max, memSpaceName(ap.space));
  }
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
  if (isWide(stat->dtype) != isWide(mov->dtype))  // T12
    report("stationary {} with moving {}: f32/tf32 pairs only with f32/tf32 (T12)", dtypeName(stat->dtype),
           dtypeName(mov->dtype));
  if (stat->partitionCount != mov->partitionCount)  // T4
    report("contraction K differs: stationary has {} partitions, moving {} (T4)", stat->partitionCount,
           mov->partitionCount);
  if (stat->partitionCount > limits_.matmulMaxK) report("K = {} exceeds {} (T3)", stat->partitionCount, limits_.matmulMaxK);
  uint64_t m = freeSizeElements(*stat), n = freeSizeElements(*mov);
  if (m > static_cast<uint64_t>(limits_.matmulMaxStationaryFree))
    report("stationary free size M = {} exceeds {} (T3)", m, limits_.matmulMaxStationaryFree);
  if (n > static_cast<uint64_t>(limits_.matmulMaxMovingFree))
    report("moving free size N = {} exceeds {} (T3)", n, limits_.matmulMaxMovingFree);
  if (dst->partitionCount != m || freeSizeElements(*dst) != n)
    report("dst shape {}x{} does not match M x N = {}x{}", dst->partitionCount, freeSizeElements(*dst), m, n);
  // T2: one matmul output lies inside one PSUM bank.
  uint64_t bytes = freeSizeElements(*dst) * dtypeSizeBytes(dst->dtype);
  if (dst->space == MemSpace::PSUM && bytes > 0 && dst->offsetBytes / limits_.psumBankBytes !=
                                          (dst->offsetBytes + bytes - 1) / limits_.psumBankBytes)
    report("dst: bytes [{}, {}) cross a {}-byte PSUM bank boundary (T2)", dst->offsetBytes, dst->offsetBytes + bytes,
           limits_.psumBankBytes);
}

void Checker::checkTranspose() {
  const AccessPattern *dst = slot("dst"), *src = slot("src");
  if (!dst || !src) return;
  int max = insn_.engine == Engine::PE ? limits_.peTransposeMax : limits_.dveTransposeMax;
  uint64_t free = freeSizeElements(*src);
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

void Checker::checkOpcodeRules() {
  switch (insn_.opcode) {
    case Opcode::NcMatmul: return checkMatmul();
    case Opcode::NcTranspose: return checkTranspose();
    case Opcode::Activation:
      if (insn_.func == ActFunc::None) report("func is required");
      if (slot("accum") && insn_.op0 == AluOp::None) report("accum needs a reduce op in op0");
      for (const char *name : {"bias", "accum"})
        if (const AccessPattern *ap = slot(name); ap && freeSizeElements(*ap) != 1)
          report("{}: must be one element per partition ([P,1]), got free size {}", name, freeSizeElements(*ap));
      if (slot("accum") && limits_.actReduceAddOnly && insn_.op0 != AluOp::None && insn_.op0 != AluOp::Add)
        report("ACT reduce op {} not supported; only add (T15)", aluOpName(insn_.op0));
      return;
    case Opcode::TensorTensor:
      if (insn_.op0 == AluOp::None) report("op0 is required");
      if (slot("in0") && slot("in1") && slot("in0")->space == MemSpace::PSUM && slot("in1")->space == MemSpace::PSUM)
        report("in0 and in1 both in PSUM (T11)");
      return;
    case Opcode::TensorScalar:
      if (insn_.op0 == AluOp::None) report("op0 is required");
      return;
    case Opcode::TensorReduce:
      if (insn_.op0 == AluOp::None) report("op0 (the reduce op) is required");
      return;
    case Opcode::BnStats:
      if (slot("src") && freeSizeElements(*slot("src")) > limits_.bnStatsMaxFree)
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
  if (!(allowedEngines(insn_.opcode) & (1 << static_cast<int>(insn_.engine)))) {
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
