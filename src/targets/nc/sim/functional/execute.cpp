// executeInstruction (execute.h): dispatches on the opcode to the family files (ops.h).
#include "targets/nc/sim/functional/execute.h"

#include "targets/nc/sim/functional/ops.h"

namespace tessel::nc {

Status executeInstruction(const Instruction &insn, size_t index, MachineState &state, const MachineProfile &profile) {
  const functional::ExecContext ctx(insn, index, state, profile);
  switch (insn.opcode) {
    case Opcode::NcMatmul: return functional::execMatmul(ctx);
    case Opcode::NcTranspose: return functional::execTranspose(ctx);
    case Opcode::Activation: return functional::execActivation(ctx);
    case Opcode::TensorTensor: return functional::execTensorTensor(ctx);
    case Opcode::TensorTensorScan: return functional::execTensorTensorScan(ctx);
    case Opcode::TensorScalar: return functional::execTensorScalar(ctx);
    case Opcode::TensorScalarReduce: return functional::execTensorScalarReduce(ctx);
    case Opcode::TensorReduce: return functional::execTensorReduce(ctx);
    case Opcode::TensorCopy: return functional::execTensorCopy(ctx);
    case Opcode::Memset: return functional::execMemset(ctx);
    case Opcode::Iota: return functional::execIota(ctx);
    case Opcode::AffineSelect: return functional::execAffineSelect(ctx);
    case Opcode::BnStats: return functional::execBnStats(ctx);
    case Opcode::BnAggr: return functional::execBnAggr(ctx);
    case Opcode::DmaCopy: return functional::execDmaCopy(ctx);
    case Opcode::AllGather:
    case Opcode::AllReduce: {
      const Instruction *insns[] = {&insn};
      const size_t indices[] = {index};
      MachineState *const states[] = {&state};
      return executeCollective(insns, indices, states, profile);
    }
  }
  return ctx.error(ErrorCode::Internal, "opcode {} has no functional semantics", static_cast<int>(insn.opcode));
}

}  // namespace tessel::nc
