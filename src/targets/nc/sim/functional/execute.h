// The functional semantics of every instruction (the definition of what it computes; isa.def lists
// the per-opcode rules): reads operands through their access patterns, computes in fp32 (integers
// as raw bits for bitwise ops), rounds to the destination dtype on write (round-to-nearest-even for
// bf16/fp16/fp8), and accumulates matmuls in fp32 PSUM. Out-of-bounds accesses and undefined PSUM
// accumulation are errors naming the instruction index, mnemonic and operand.
#pragma once

#include <cstddef>
#include <span>

#include "support/diagnostic.h"
#include "targets/nc/isa/instruction.h"
#include "targets/nc/machine/profile.h"
#include "targets/nc/sim/machine_state.h"

namespace tessel::nc {

/// Executes instruction `index` of a program on `state`.
Status executeInstruction(const Instruction &insn, size_t index, MachineState &state,
                          const MachineProfile &profile);

/// Executes one collective (all_gather, all_reduce) across the cores that take part: core c runs
/// instruction indices[c], insns[c], on states[c] (insns all the same kind and size; one core for a
/// single-core run, where the data stays as it is up to all_reduce's rounding).
Status executeCollective(std::span<const Instruction *const> insns, std::span<const size_t> indices,
                         std::span<MachineState *const> states, const MachineProfile &profile);

}  // namespace tessel::nc
