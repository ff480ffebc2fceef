// The ALU operators (accelerator-model.md section 6.2) and ACT functions (section 6.3) as scalar
// functions, the definitions DVE/ACT/POOL instructions apply per element. Arithmetic is fp32
// (comparisons and logical ops give 1.0/0.0); the bitwise ops work on integers (raw bits of the
// operand dtype); unary ops ignore their second operand.
#pragma once

#include <cstdint>

#include "targets/nc/isa/instruction.h"

namespace tessel::nc::functional {

/// invert, bitwise_and/or/xor, left_shift, logical_shift_right.
bool isBitwiseOp(AluOp op);
/// abs, square, relu, rsqrt, reciprocal and invert: they use their first operand only.
bool isUnaryOp(AluOp op);

/// `a op b` in fp32. Precondition: op is not None and not bitwise.
float applyAlu(AluOp op, float a, float b);

/// `a op b` for a bitwise op on integers of dtype `dtype` (its width bounds logical_shift_right and
/// the result is wrapped to it). Precondition: isBitwiseOp(op).
int64_t applyAluInt(AluOp op, int64_t a, int64_t b, DType dtype);

/// Applies `op` elementwise: out[i] = a[i] op b[i] (bRow) or a[i] op scalar (bRow null).
/// Precondition: op not bitwise. `out` may alias `a` or `bRow`.
void applyAluRun(AluOp op, const float *a, const float *bRow, float scalar, float *out, uint64_t count);

/// f(x) of an ACT function in fp32. `alpha` is prelu's negative slope.
float applyActivation(ActFunc func, float x, float alpha);

}  // namespace tessel::nc::functional
