// tessel DynamicQuantizeCentered (passes/float_dynamic_quantization.h: DynamicQuantizeLinear's values
// less their zero point, as float32 integers, and its scale) on the accelerator, in the layout of its
// input, so that the float Conv / MatMul after it reads integers its PE multiplies exactly.
//
// The range: per partition the max of x and of -x (DVE reductions, 0 included), then across the
// partitions by two PE transposes into one PSUM row on partition 0 and a reduction there. The scale,
// its reciprocal and the zero point are computed on partition 0 and broadcast to every partition by
// an all-ones matmul. Each element is then round(x * (1 / scale)) clamped to [-zp, 255 - zp].
//
// Two assumptions, both stated where they act:
// - The ISA has no divide (accelerator-model.md section 6.2), so x / scale is x times the reciprocal
//   of the scale, and range / 255 is range times 1/255. Each is within an ulp or two of the quotient,
//   so an element within that distance of a rounding tie can land one step from the reference.
// - Rounding half to even is the fp32 sum with 1.5 * 2^23 (the ALU rounds each result to nearest
//   even in fp32), exact for |v| < 2^22; here |v| <= 255.
#include <cmath>

#include <fmt/format.h>

#include "targets/nc/compiler/lowering.h"
#include "targets/nc/kernels/tiling.h"

namespace tessel::nc::compiler {
namespace {

using tile::KernelBuilder;
using tile::TileView;

/// Adding and subtracting it rounds an fp32 value of magnitude below 2^22 to an integer, ties to even.
constexpr float kRoundingBias = 12582912.0f;  // 1.5 * 2^23.
/// The smallest scale the reciprocal takes (its input range, section 6.3: +/-[2^-42, 2^42]). A zero
/// range (x all zeros) quantizes to 0 through it, as in the reference; a nonzero range below
/// 255 * 2^-42 would quantize as if it were that wide.
const float kSmallestScale = std::ldexp(1.0f, -42);

std::string checkDynamicQuantizeCentered(const Node &node, const LoweringOptions &) {
  if (node.outputs().size() != 2) return "DynamicQuantizeCentered has two outputs";
  return "";
}

Status emitDynamicQuantizeCentered(LoweringContext &ctx, const Node &node) {
  KernelBuilder &b = ctx.builder();
  const int64_t P = ctx.profile().partitions;
  const Value *x = node.input(0);
  const std::vector<int64_t> shape = staticShape(x);
  const int64_t rank = static_cast<int64_t>(shape.size());
  // The input's own layout when it has one; a segment input loads in the roomy one.
  int64_t axis = rank == 4 ? 1 : std::max<int64_t>(rank - 1, 0);
  if (ctx.isUnloadedInput(x)) {
    axis = ctx.roomyAxis(shape, axis);
  } else {
    TESSEL_ASSIGN_OR_RETURN(DeviceTensor t, ctx.activation(x));
    if (int64_t a = t.partitionAxis(); a >= 0 && t.isStandard(a)) axis = a;
  }
  TESSEL_ASSIGN_OR_RETURN(DeviceTensor in, ctx.standard(x, axis));
  DeviceTensor out = ctx.allocate(node.output(0), axis);
  const std::string name = node.name();

  // Per partition: max(x) and max(-x), with 0 (the range always includes 0). The output's tiles take
  // -x, which the quantization below overwrites.
  TileView range = b.sbuf(name + "/range", DType::F32, P, {2});
  b.memset(range, 0.0f);
  for (size_t k = 0; k < in.blocks.size(); ++k) {
    const int64_t pc = in.blocks[k].partitions();
    for (const kernels::Span &c : kernels::splitRange(in.freeSize, kColumnChunk)) {
      TileView part = b.sbuf(name + "/part", DType::F32, pc, {2});
      const TileView chunk = in.blocks[k].cols(c.start, c.count);
      b.reduce(part.cols(0, 1), chunk, AluOp::Maximum);
      b.tensorScalarReduce(out.blocks[k].cols(c.start, c.count), chunk, AluOp::Multiply, -1.0f, part.cols(1, 1),
                           AluOp::Maximum);
      b.tensorTensor(range.partitionSlice(0, pc), range.partitionSlice(0, pc), part, AluOp::Maximum);
    }
  }
  // Across the partitions: both columns as one row of partition 0, then its two maxima (hi, -lo).
  TileView rows = b.psum(name + "/rows", DType::F32, 1, {2 * P});
  b.transpose(rows.cols(0, P), range.cols(0, 1));
  b.transpose(rows.cols(P, P), range.cols(1, 1));
  TileView bounds = b.sbuf(name + "/bounds", DType::F32, 1, {2});
  b.reduce(bounds, rows.reshapeFree({2, P}), AluOp::Maximum);

  // On partition 0: scale = (hi - lo) / 255; zp = round(-lo / scale), in [0, 255] as -lo <= hi - lo.
  // The row broadcast to every partition: 1 / scale, -zp and 255 - zp.
  TileView scale = b.sbuf(name + "/scale", DType::F32, 1, {1});
  b.tensorTensor(scale, bounds.cols(0, 1), bounds.cols(1, 1), AluOp::Add);
  b.tensorScalar(scale, scale, AluOp::Multiply, 1.0f / 255.0f);
  TileView params = b.sbuf(name + "/params", DType::F32, 1, {3});
  b.tensorScalar(params.cols(0, 1), scale, AluOp::Maximum, kSmallestScale);
  b.tensorScalar(params.cols(0, 1), params.cols(0, 1), AluOp::Reciprocal, 0.0f, AluOp::None, 0.0f, Engine::DVE);
  TileView zero = b.sbuf(name + "/zero", DType::F32, 1, {1});
  b.tensorScalar(zero, bounds.cols(1, 1), AluOp::Multiply, params.cols(0, 1), AluOp::Add, kRoundingBias);
  b.tensorScalar(zero, zero, AluOp::Subtract, kRoundingBias, AluOp::Minimum, 255.0f);
  b.tensorScalar(params.cols(1, 1), zero, AluOp::Multiply, -1.0f);
  b.tensorScalar(params.cols(2, 1), zero, AluOp::Multiply, -1.0f, AluOp::Add, 255.0f);
  const TileView everywhere = ctx.broadcastRow(params, name + "/params");

  for (size_t k = 0; k < in.blocks.size(); ++k) {
    const int64_t pc = in.blocks[k].partitions();
    const TileView p = everywhere.partitionSlice(0, pc);
    for (const kernels::Span &c : kernels::splitRange(in.freeSize, kColumnChunk)) {
      const TileView dst = out.blocks[k].cols(c.start, c.count);
      b.tensorScalar(dst, in.blocks[k].cols(c.start, c.count), AluOp::Multiply, p.cols(0, 1), AluOp::Add,
                     kRoundingBias);
      b.tensorScalar(dst, dst, AluOp::Subtract, kRoundingBias, AluOp::Maximum, p.cols(1, 1));
      b.tensorScalar(dst, dst, AluOp::Minimum, p.cols(2, 1));
    }
  }
  ctx.define(node.output(0), out);

  DeviceTensor scaleOut = ctx.allocate(node.output(1), 0, DType::F32);
  b.copy(scaleOut.blocks[0], scale);
  ctx.define(node.output(1), scaleOut);
  return Status::success();
}

}  // namespace

std::vector<OpLowering> quantizeLowerings() {
  return {OpLowering{"tessel", "DynamicQuantizeCentered", checkDynamicQuantizeCentered, emitDynamicQuantizeCentered}};
}

}  // namespace tessel::nc::compiler
