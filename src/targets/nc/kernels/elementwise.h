// Elementwise kernels: binary add/mul/sub/max over [R, C] with optional broadcasting of the second
// input (a [1, C] row or an [R, 1] column), and unary activations (gelu, silu, relu) on ACT.
//
// The table of binary ONNX ops the vector engines compute in one instruction is stated here once,
// for these kernels and for the model compiler's elementwise lowering.
#pragma once

#include <optional>
#include <string_view>
#include <vector>

#include "targets/nc/kernels/kernel_def.h"

namespace tessel::nc::kernels {

/// A binary ONNX op that is one DVE/POOL instruction (tensor_tensor, or tensor_scalar with one constant
/// side), and its ALU op.
struct BinaryAluOp {
  std::string_view onnx;
  AluOp alu;
};
inline constexpr BinaryAluOp kBinaryAluOps[] = {{"Add", AluOp::Add},
                                                {"Sub", AluOp::Subtract},
                                                {"Mul", AluOp::Multiply},
                                                {"Max", AluOp::Maximum},
                                                {"Min", AluOp::Minimum}};

/// The ALU op of `onnx` in kBinaryAluOps; nullopt for any other op.
std::optional<AluOp> binaryAluOp(std::string_view onnx);

/// "add", "mul", "sub", "max" (option broadcast=none|row|col), "gelu", "silu", "relu".
std::vector<KernelDef> elementwiseKernels();

}  // namespace tessel::nc::kernels
