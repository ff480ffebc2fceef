// Prints accelerator instructions as text assembly (syntax in assembler.h). The output is
// canonical: the assembler reads it back to the same instructions, and printing those again gives
// the same bytes, so programs can be held as golden files and diffed.
#pragma once

#include <string>
#include <vector>

#include "targets/nc/isa/instruction.h"

namespace tessel::nc {

/// Formats one access pattern, e.g. "sbuf[p0:128, off 0, [1,512]]:bf16".
std::string formatAccessPattern(const AccessPattern &ap);

/// Formats one instruction as one line of assembly, without the newline.
std::string formatInstruction(const Instruction &insn);

/// Formats a program, one instruction per line, each ending in '\n'.
std::string disassemble(const std::vector<Instruction> &program);

}  // namespace tessel::nc
