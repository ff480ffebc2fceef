// The functional semantics of every instruction (the definition of what it computes; isa.def lists
// the per-opcode rules): reads operands through their access patterns, computes in fp32 (integers
// as raw bits for bitwise ops), rounds to the destination dtype on write (round-to-nearest-even for
// bf16/fp16/fp8), and accumulates matmuls in fp32 PSUM. Out-of-bounds accesses and undefined PSUM
// accumulation are errors naming the instruction index, mnemonic and operand.
#pragma once

#include <cstddef>

#include "support/diagnostic.h"
#include "targets/nc/isa/instruction.h"
#include "targets/nc/machine/profile.h"
#include "targets/nc/sim/machine_state.h"

namespace tessel::nc {

/// Executes instruction `index` of a program on `state`.
Status executeInstruction(const Instruction &insn, size_t index, MachineState &state,
                          const MachineProfile &profile);

}  // namespace tessel::nc
