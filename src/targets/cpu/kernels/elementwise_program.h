// A small register program for FusedElementwise: the body graph's ops become instructions over
// registers that each hold one block (kProgramBlock elements) of the broadcast output, evaluated
// block by block in a stack buffer so every intermediate stays in L1; blocks are spread over the
// thread pool. Inputs with the output's shape are read in place (a register is a pointer), scalar
// inputs and constants stay scalars (the binary loops take a scalar operand), and other broadcast
// inputs are gathered per block by runs of their BroadcastLayout.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "targets/cpu/kernels/elementwise.h"

namespace tessel::cpu {

/// Elements per block, and the registers a program may use for intermediates (the stack holds
/// kProgramMaxTemporaries * kProgramBlock floats).
constexpr int64_t kProgramBlock = 256;
constexpr int kProgramMaxTemporaries = 24;

/// How an input reaches its register.
enum class ProgramLoad : uint8_t {
  Full,       // Same shape as the output: read in place.
  Scalar,     // One element: a scalar register.
  Broadcast,  // Gathered per block through `layout`.
};

struct ProgramInput {
  ProgramLoad load = ProgramLoad::Full;
  bool isBool = false;     // A bool tensor (Where's condition), always gathered (converted to 0/1).
  BroadcastLayout layout;  // For Broadcast: this input against the output.
  int gatherRegister = 0;  // For Broadcast: the temporary register it is gathered into.
};

/// An operand: an input, a constant, or a temporary register.
struct ProgramOperand {
  enum class Kind : uint8_t { Input, Constant, Temporary };
  Kind kind = Kind::Temporary;
  int index = 0;        // Input index, constant index, or temporary register.
  bool scalar = false;  // Holds one value for the whole block (scalar input, constant, or computed from those).
};

struct ProgramInstruction {
  enum class Kind : uint8_t { Unary, Binary, Select };
  Kind kind = Kind::Unary;
  UnaryOp unary = UnaryOp::Identity;
  BinaryOp binary = BinaryOp::Add;
  UnaryParams params;
  ProgramOperand sources[3];
  int destination = 0;  // A temporary register; the last instruction writes the output instead.
  bool scalar = false;  // Every source is scalar, so the result is one value.
};

struct ElementwiseProgram {
  std::vector<ProgramInput> inputs;
  std::vector<float> constants;
  std::vector<ProgramInstruction> code;  // Nonempty; the last one produces the output.
  int temporaries = 0;                   // Registers in all, gather registers included; <= kProgramMaxTemporaries.
  int64_t numel = 0;                     // Output elements.

  /// For reports: "fused_elementwise[Mul,Add,Gelu] <isa>".
  std::string describe() const;
};

/// Runs `program`: inputs[i] points at input i (f32, or bool bytes when isBool), out at the f32
/// output. out may be an input of Full load (in place).
void runElementwiseProgram(const ElementwiseKernels &kernels, const ElementwiseProgram &program,
                           std::span<const void *const> inputs, float *out, ThreadPool *pool);

}  // namespace tessel::cpu
