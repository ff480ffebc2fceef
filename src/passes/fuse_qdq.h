// QDQ fusion: the DequantizeLinear -> Conv/MatMul (-> QuantizeLinear) patterns of a QDQ model (what
// onnxruntime's quantize_static and `tessel quantize` write) become integer ops that run on int8
// kernels.
#pragma once

#include "ir/graph.h"
#include "support/diagnostic.h"

namespace tessel {

/// For each Conv, 2-D-weight MatMul or plain Gemm (alpha and beta 1, A not transposed, a bias per
/// column if any) whose data input is DequantizeLinear(xq) (per tensor) and whose weight is
/// DequantizeLinear of a constant u8/s8 tensor (per tensor, or per output channel: Conv axis 0,
/// MatMul axis 1, Gemm the N axis of B), all scales and zero points constant (a transposed Gemm B
/// is read as a [K, N] constant transposed once):
///  - when its output is read only by a per-tensor QuantizeLinear (directly, or through a Relu or
///    Clip the quantization makes redundant: its bounds quantize to the type's minimum and maximum,
///    where quantizing saturates anyway), the three become
///    QLinearConv / QLinearMatMul, with the Conv's bias as int32 at scale x_scale * w_scale (an
///    int32 DequantizeLinear at that scale as it is, a float bias rounded to it); a Gemm with a
///    bias becomes tessel QLinearMatMulToFloat with that int32 bias, the QuantizeLinear kept;
///  - otherwise it becomes ConvInteger / MatMulInteger -> Cast(float) -> Mul(x_scale * w_scale)
///    (-> Add(bias)), the products in int32 and the rest in float.
/// Then each Add of two per-tensor DequantizeLinear outputs of one shape and 8-bit type, read only
/// by a per-tensor QuantizeLinear of that type (through a redundant Relu or Clip as above), becomes
/// tessel QLinearAdd: the same float32 arithmetic in one pass, bit for bit. A MaxPool between a
/// per-tensor DequantizeLinear and a QuantizeLinear of the same scale, zero point and type pools
/// the quantized values themselves (exact: dequantizing is increasing). A QLinearMatMul read only
/// by a DequantizeLinear of its own y_scale and y_zero_point becomes tessel QLinearMatMulToFloat
/// (exact: the same values, without the bytes in between), and a QuantizeLinear -> DequantizeLinear
/// round trip of a QLinearMatMulToFloat's own output parameters is dropped (exact: its floats are
/// on that grid already). Last, each per-tensor QuantizeLinear -> DequantizeLinear round trip of
/// float32 values that is left (those around products of two activations, attention's) becomes
/// Mul(Clip(Round(Div(x, scale)), min - zero, max - zero), scale): the same values, bit for bit, in
/// one elementwise pass that fuse-elementwise merges with its neighbours (from opset 11).
/// Results agree with the QDQ graph's float arithmetic to within float32 rounding before the
/// output's quantization (so within one quantization step after it). Must run before
/// fold-constants, which would fold the weights' DequantizeLinear into float weights. Returns
/// whether any pattern was rewritten.
Expected<bool> fuseQdq(Model &model);

}  // namespace tessel
