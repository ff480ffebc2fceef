// The elementwise family: emitElementwiseOp records one ONNX elementwise op (Add, Relu, Gelu, Clip,
// HardSwish, Pow, ...) over SBUF-resident operands on DVE and ACT. The model compiler's elementwise
// lowering calls it op by op on each block of a node's output (a fused chain keeps its intermediates
// in SBUF); the library's kernels (binary add/mul/sub/max over [R, C] with optional broadcasting of
// the second input as a [1, C] row or an [R, 1] column, and the unary gelu, silu, relu) are HBM
// adapters around the same call.
//
// The tables of the ONNX ops the engines compute in one instruction are stated here once.
#pragma once

#include <cmath>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "targets/nc/kernels/kernel_def.h"
#include "targets/nc/tile/dsl.h"

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

/// A unary ONNX op that is one ACT function.
struct UnaryActOp {
  std::string_view onnx;
  ActFunc func;
};
inline constexpr UnaryActOp kUnaryActOps[] = {
    {"Relu", ActFunc::Relu}, {"Sigmoid", ActFunc::Sigmoid}, {"Tanh", ActFunc::Tanh},
    {"Exp", ActFunc::Exp},   {"Erf", ActFunc::Erf},         {"Sqrt", ActFunc::Sqrt},
    {"Abs", ActFunc::Abs},   {"Log", ActFunc::Log},         {"Reciprocal", ActFunc::Reciprocal},
    {"Softplus", ActFunc::Softplus}, {"Sign", ActFunc::Sign}};

/// The ACT function of `onnx` in kUnaryActOps; nullopt for any other op.
std::optional<ActFunc> unaryActFunc(std::string_view onnx);

/// One elementwise op with its attributes, as the model states it.
struct ElementwiseOp {
  std::string type;                   // An ONNX op type (elementwiseOpTypes), or Gelu (tessel's and opset 20's).
  bool tanhApproximation = false;     // Gelu approximate="tanh".
  float alpha = 0.2f, beta = 0.5f;    // HardSigmoid.
  float low = -INFINITY, high = INFINITY;  // Clip's bounds.
};

/// Every op type emitElementwiseOp records: kUnaryActOps, kBinaryAluOps, Div, Pow, Neg, Identity,
/// Cast (to float32), Gelu, HardSigmoid, HardSwish, Clip.
std::span<const std::string_view> elementwiseOpTypes();
/// Binary op types (kBinaryAluOps, Div, Pow): the ops that may take a constant operand.
bool isBinaryElementwiseOp(std::string_view type);

/// An operand of one op: a tile like the destination, a per-partition scalar [partitions, 1], or an
/// immediate.
struct ElementwiseOperand {
  enum Kind { Immediate, PartitionScalar, Full } kind = Full;
  float value = 0;      // Immediate.
  tile::TileView view;  // PartitionScalar: [partitions, 1]; Full: shaped like the destination.
};

/// Records `op` on `operands` (one, or two for a binary op; at least one Full, and Pow's exponent an
/// immediate: the caller's checks) into `dst` and returns dst as a Full operand. Identity and Cast of
/// a non-Full operand return it unchanged. `name` prefixes the temporaries' tiles.
Expected<ElementwiseOperand> emitElementwiseOp(tile::KernelBuilder &b, const std::string &name, const ElementwiseOp &op,
                                               std::span<const ElementwiseOperand> operands, const tile::TileView &dst);

/// "add", "mul", "sub", "max" (option broadcast=none|row|col), "gelu", "silu", "relu".
std::vector<KernelDef> elementwiseKernels();

}  // namespace tessel::nc::kernels
