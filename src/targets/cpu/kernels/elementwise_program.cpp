// The FusedElementwise register-program evaluator (see elementwise_program.h).
#include "targets/cpu/kernels/elementwise_program.h"

#include <algorithm>
#include <cstring>

namespace tessel::cpu {

namespace {

const char *instructionName(const ProgramInstruction &instruction) {
  switch (instruction.kind) {
    case ProgramInstruction::Kind::Select: return "Where";
    case ProgramInstruction::Kind::Binary:
      switch (instruction.binary) {
        case BinaryOp::Add: return "Add";
        case BinaryOp::Sub: return "Sub";
        case BinaryOp::Mul: return "Mul";
        case BinaryOp::Div: return "Div";
        case BinaryOp::Pow: return "Pow";
        case BinaryOp::Max: return "Max";
        case BinaryOp::Min: return "Min";
      }
      return "?";
    case ProgramInstruction::Kind::Unary: break;
  }
  static const char *const kUnaryNames[] = {"Identity",  "Relu",        "Sigmoid",   "Tanh",     "Exp",  "Log",
                                            "Sqrt",      "Reciprocal",  "Neg",       "Abs",      "Erf",  "Clip",
                                            "LeakyRelu", "HardSigmoid", "HardSwish", "Softplus", "Gelu", "GeluTanh",
                                            "Silu",      "Square",      "Cube",      "Round",    "Floor", "Ceil"};
  return kUnaryNames[static_cast<size_t>(instruction.unary)];
}

/// Copies elements [start, start + count) of the broadcast view of one input into `dst`.
void gather(const ProgramInput &input, const void *data, int64_t start, int64_t count, float *dst) {
  const BroadcastLayout &layout = input.layout;
  const int64_t inner = layout.inner;
  const bool contiguous = layout.innerContiguous[0];
  int64_t row = start / inner, column = start % inner;
  for (int64_t done = 0; done < count; ++row, column = 0) {
    const int64_t run = std::min(inner - column, count - done);
    const int64_t offset = layout.rowOffset(0, row) + (contiguous ? column : 0);
    if (input.isBool) {
      const auto *src = static_cast<const uint8_t *>(data) + offset;
      if (contiguous) {
        for (int64_t i = 0; i < run; ++i) dst[done + i] = src[i] != 0 ? 1.0f : 0.0f;
      } else {
        std::fill(dst + done, dst + done + run, src[0] != 0 ? 1.0f : 0.0f);
      }
    } else {
      const float *src = static_cast<const float *>(data) + offset;
      if (contiguous) {
        std::memcpy(dst + done, src, size_t(run) * sizeof(float));
      } else {
        std::fill(dst + done, dst + done + run, src[0]);
      }
    }
    done += run;
  }
}

/// Evaluates elements [start, start + count), count <= kProgramBlock.
void runBlock(const ElementwiseKernels &kernels, const ElementwiseProgram &program, std::span<const void *const> inputs,
              float *out, int64_t start, int64_t count) {
  alignas(64) float registers[kProgramMaxTemporaries][kProgramBlock];
  alignas(64) float filled[3][kProgramBlock];  // Scalar operands of a Select, spread to a block.
  for (size_t i = 0; i < program.inputs.size(); ++i) {
    const ProgramInput &input = program.inputs[i];
    if (input.load == ProgramLoad::Broadcast) gather(input, inputs[i], start, count, registers[input.gatherRegister]);
  }
  auto pointer = [&](const ProgramOperand &operand) -> const float * {
    switch (operand.kind) {
      case ProgramOperand::Kind::Constant: return &program.constants[size_t(operand.index)];
      case ProgramOperand::Kind::Temporary: return registers[operand.index];
      case ProgramOperand::Kind::Input: break;
    }
    const ProgramInput &input = program.inputs[size_t(operand.index)];
    const float *data = static_cast<const float *>(inputs[size_t(operand.index)]);
    switch (input.load) {
      case ProgramLoad::Full: return data + start;
      case ProgramLoad::Scalar: return data;
      case ProgramLoad::Broadcast: break;
    }
    return registers[input.gatherRegister];
  };
  const size_t last = program.code.size() - 1;
  for (size_t k = 0; k <= last; ++k) {
    const ProgramInstruction &instruction = program.code[k];
    // The last instruction writes straight to the output unless its result is one value to spread.
    const bool direct = k == last && !instruction.scalar;
    float *dst = direct ? out + start : registers[instruction.destination];
    const int64_t n = instruction.scalar ? 1 : count;
    const ProgramOperand *sources = instruction.sources;
    switch (instruction.kind) {
      case ProgramInstruction::Kind::Unary:
        kernels.unary(instruction.unary, instruction.params, pointer(sources[0]), dst, n);
        break;
      case ProgramInstruction::Kind::Binary:
        kernels.binary(instruction.binary, pointer(sources[0]), sources[0].scalar, pointer(sources[1]),
                       sources[1].scalar, dst, n);
        break;
      case ProgramInstruction::Kind::Select: {
        const float *operands[3];
        for (int s = 0; s < 3; ++s) {
          operands[s] = pointer(sources[s]);
          if (sources[s].scalar && !instruction.scalar) {
            std::fill(filled[s], filled[s] + count, operands[s][0]);
            operands[s] = filled[s];
          }
        }
        kernels.select(operands[0], operands[1], operands[2], dst, n);
        break;
      }
    }
    if (k == last && !direct) std::fill(out + start, out + start + count, dst[0]);
  }
}

}  // namespace

std::string ElementwiseProgram::describe() const {
  std::string text = "fused_elementwise[";
  for (size_t k = 0; k < code.size(); ++k) {
    if (k > 0) text += ",";
    text += instructionName(code[k]);
  }
  return text + "]";
}

void runElementwiseProgram(const ElementwiseKernels &kernels, const ElementwiseProgram &program,
                           std::span<const void *const> inputs, float *out, ThreadPool *pool) {
  const int64_t blocks = (program.numel + kProgramBlock - 1) / kProgramBlock;
  // 32 blocks (8K elements) per range at least: the body does several passes over each block.
  parallelRanges(pool, blocks, 32, [&](int64_t begin, int64_t end) {
    for (int64_t block = begin; block < end; ++block) {
      const int64_t start = block * kProgramBlock;
      runBlock(kernels, program, inputs, out, start, std::min(kProgramBlock, program.numel - start));
    }
  });
}

}  // namespace tessel::cpu
