// Text printer of accelerator instructions; the inverse of the assembler (syntax in assembler.h).
#include "targets/nc/isa/disassembler.h"

#include <bit>
#include <cmath>

#include <fmt/format.h>

namespace tessel::nc {
namespace {

/// Finite scalars print in shortest round-trip form; others as raw bits so NaN payloads survive.
std::string formatScalar(float value) {
  if (std::isfinite(value)) return fmt::format("{}", value);
  return fmt::format("bits:0x{:08x}", std::bit_cast<uint32_t>(value));
}

}  // namespace

std::string formatAccessPattern(const AccessPattern &ap) {
  std::string text = fmt::format("{}[p{}:{}, off {}", memSpaceName(ap.space), ap.startPartition,
                                 ap.partitionCount, ap.offsetBytes);
  for (const FreeDim &dim : ap.dims) text += fmt::format(", [{},{}]", dim.strideElements, dim.count);
  text += fmt::format("]:{}", dtypeName(ap.dtype));
  return text;
}

std::string formatInstruction(const Instruction &insn) {
  std::string text = fmt::format("{}.{}", mnemonic(insn.opcode), engineName(insn.engine));
  const std::vector<OperandSlot> &slots = operandSlots(insn.opcode);
  for (size_t i = 0; i < slots.size(); ++i)
    if (insn.operands[i]) text += fmt::format(" {}={}", slots[i].name, formatAccessPattern(*insn.operands[i]));
  if (insn.op0 != AluOp::None) text += fmt::format(" op0={}", aluOpName(insn.op0));
  if (insn.op1 != AluOp::None) text += fmt::format(" op1={}", aluOpName(insn.op1));
  if (insn.func != ActFunc::None) text += fmt::format(" func={}", actFuncName(insn.func));
  if (!insn.scalars.empty()) {
    text += " imm=";
    for (size_t i = 0; i < insn.scalars.size(); ++i)
      text += (i ? "," : "") + formatScalar(insn.scalars[i]);
  }
  if (insn.accumulate) text += " acc=1";
  // dma_copy always shows its queue; elsewhere a queue is an error the verifier reports, printed so
  // that the text still says what the binary holds.
  if (insn.opcode == Opcode::DmaCopy || insn.queue != 0) text += fmt::format(" queue=q{}", insn.queue);
  // Likewise for the core count of a collective.
  if (isCollective(insn.opcode) || insn.cores != 0) text += fmt::format(" cores={}", insn.cores);
  if (const auto &dynamic = insn.dynamicOffset) {
    const std::string_view slot = dynamic->operand < slots.size() ? slots[dynamic->operand].name : "?";
    text += fmt::format(" dyn={}+r{}*{}<={}", slot, dynamic->reg, dynamic->strideBytes, dynamic->maxValue);
  }
  for (size_t i = 0; i < insn.waits.size(); ++i)
    text += fmt::format("{}s{}>={}", i ? "," : " wait=", insn.waits[i].id, insn.waits[i].value);
  if (insn.increment) text += fmt::format(" inc=s{}", *insn.increment);
  return text;
}

std::string disassemble(const std::vector<Instruction> &program) {
  std::string text;
  for (const Instruction &insn : program) {
    text += formatInstruction(insn);
    text += '\n';
  }
  return text;
}

}  // namespace tessel::nc
