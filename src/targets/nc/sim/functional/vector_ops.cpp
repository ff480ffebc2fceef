// The DVE/ACT instructions (and their POOL variants): activation, tensor_tensor, tensor_scalar,
// tensor_scalar_reduce, tensor_reduce, tensor_copy, memset, bn_stats and bn_aggr, as the shared spec
// defines them. Each works partition by partition: load the partition's elements as fp32 (or as
// integers for the bitwise ops), compute, round to the destination dtype on store. Elementwise
// operands must have the same shape (partition count and free dims, dims of count 1 ignored);
// tensor_copy only needs the same element count per partition.
#include <vector>

#include "targets/nc/sim/functional/alu.h"
#include "targets/nc/sim/functional/dtype_convert.h"
#include "targets/nc/sim/functional/ops.h"

namespace tessel::nc::functional {
namespace {

/// prelu's negative slope when the instruction gives none in imm[2].
constexpr float kDefaultPreluSlope = 0.01f;

/// The bn_stats record: {count, mean, M2} for the even-index elements, then for the odd ones.
constexpr uint64_t kBnStatsWidth = 6;
/// The bn_aggr result: {mean, variance}.
constexpr uint64_t kBnAggrWidth = 2;

/// The value of a per-partition [P,1] operand in partition `p`.
float scalarOf(const Operand &op, int64_t p) { return loadElement(op.partitionBase(p), op.dtype); }

/// Errors unless `op` can fold a reduction (a binary operator).
Status requireReduceOp(const ExecContext &ctx, AluOp op, std::string_view what) {
  if (op == AluOp::None || isUnaryOp(op))
    return ctx.error(ErrorCode::InvalidArgument, "{} needs a binary reduce operator in op0, got {}", what,
                     aluOpName(op));
  return Status::success();
}

/// Errors unless `op` has an integer dtype, as the bitwise operator `alu` requires.
Status requireIntegerFor(const ExecContext &ctx, const Operand &op, AluOp alu) {
  if (!isIntegerDType(op.dtype))
    return ctx.error(ErrorCode::TypeMismatch, "bitwise op {} needs integer operands; operand {} is {}", aluOpName(alu),
                     op.name, dtypeName(op.dtype));
  return Status::success();
}

/// A value in the mixed integer/fp32 chain of tensor_scalar with a bitwise op.
struct Num {
  bool isInt = false;
  int64_t i = 0;
  float f = 0;
  float asFloat() const { return isInt ? static_cast<float>(i) : f; }
  int64_t asInt() const { return isInt ? i : floatToInt64(f); }
};

Num applyNum(AluOp op, Num a, Num b, DType intType) {
  if (isBitwiseOp(op)) return Num{true, applyAluInt(op, a.asInt(), b.asInt(), intType), 0};
  return Num{false, 0, applyAlu(op, a.asFloat(), b.asFloat())};
}

/// Folds values[0..count) with `op` in order: ((v0 op v1) op v2) ...
float foldFloat(AluOp op, const float *values, uint64_t count) {
  float result = values[0];
  if (op == AluOp::Add) {
    for (uint64_t i = 1; i < count; ++i) result += values[i];
  } else {
    for (uint64_t i = 1; i < count; ++i) result = applyAlu(op, result, values[i]);
  }
  return result;
}

}  // namespace

Status execActivation(const ExecContext &ctx) {
  TESSEL_ASSIGN_OR_RETURN(Operand dst, ctx.operand("dst", Access::Write));
  TESSEL_ASSIGN_OR_RETURN(Operand src, ctx.operand("src", Access::Read));
  TESSEL_ASSIGN_OR_RETURN(std::optional<Operand> bias, ctx.optionalOperand("bias", Access::Read));
  TESSEL_ASSIGN_OR_RETURN(std::optional<Operand> accum, ctx.optionalOperand("accum", Access::Write));
  TESSEL_ASSIGN_OR_RETURN(std::optional<Operand> scale, ctx.optionalOperand("scale", Access::Read));
  const ActFunc func = ctx.insn().func;
  if (func == ActFunc::None) return ctx.error(ErrorCode::InvalidArgument, "func is required");
  TESSEL_RETURN_IF_ERROR(ctx.requireOnChip(dst));
  TESSEL_RETURN_IF_ERROR(ctx.requireOnChip(src));
  TESSEL_RETURN_IF_ERROR(ctx.requireSameShape(dst, src));
  for (const std::optional<Operand> *vector : {&bias, &accum, &scale}) {
    if (!*vector) continue;
    TESSEL_RETURN_IF_ERROR(ctx.requireOnChip(**vector));
    TESSEL_RETURN_IF_ERROR(ctx.requirePerPartitionScalar(**vector, src.partitions));
  }
  const AluOp reduceOp = ctx.insn().op0;
  if (accum) {
    TESSEL_RETURN_IF_ERROR(requireReduceOp(ctx, reduceOp, "accum"));
    if (isBitwiseOp(reduceOp))
      return ctx.error(ErrorCode::InvalidArgument, "accum reduces fp32 results; bitwise op {} not allowed",
                       aluOpName(reduceOp));
  }
  const float immScale = ctx.immediate(0, 1.0f), immBias = ctx.immediate(1, 0.0f);
  const float preluSlope = ctx.immediate(2, kDefaultPreluSlope);

  std::vector<float> values(src.freeSize);
  for (int64_t p = 0; p < src.partitions; ++p) {
    const float scaleValue = scale ? scalarOf(*scale, p) : immScale;
    const float biasValue = bias ? scalarOf(*bias, p) : immBias;
    loadPartition(src, p, values.data());
    for (float &value : values) value = applyActivation(func, value * scaleValue + biasValue, preluSlope);
    storePartition(dst, p, values.data());
    if (accum) storeElement(accum->partitionBase(p), accum->dtype, foldFloat(reduceOp, values.data(), values.size()));
  }
  ctx.markWritten(dst, /*byMatmul=*/false);
  if (accum) ctx.markWritten(*accum, /*byMatmul=*/false);
  return Status::success();
}

Status execTensorTensor(const ExecContext &ctx) {
  TESSEL_ASSIGN_OR_RETURN(Operand dst, ctx.operand("dst", Access::Write));
  TESSEL_ASSIGN_OR_RETURN(Operand in0, ctx.operand("in0", Access::Read));
  TESSEL_ASSIGN_OR_RETURN(Operand in1, ctx.operand("in1", Access::Read));
  const AluOp op = ctx.insn().op0;
  if (op == AluOp::None) return ctx.error(ErrorCode::InvalidArgument, "op0 is required");
  for (const Operand *operand : {&dst, &in0, &in1}) TESSEL_RETURN_IF_ERROR(ctx.requireOnChip(*operand));
  TESSEL_RETURN_IF_ERROR(ctx.requireSameShape(in0, in1));
  TESSEL_RETURN_IF_ERROR(ctx.requireSameShape(dst, in0));
  const uint64_t size = in0.freeSize;

  if (isBitwiseOp(op)) {
    TESSEL_RETURN_IF_ERROR(requireIntegerFor(ctx, in0, op));
    TESSEL_RETURN_IF_ERROR(requireIntegerFor(ctx, in1, op));
    std::vector<int64_t> a(size), b(size);
    for (int64_t p = 0; p < in0.partitions; ++p) {
      loadPartitionInt(in0, p, a.data());
      loadPartitionInt(in1, p, b.data());
      for (uint64_t i = 0; i < size; ++i) a[i] = applyAluInt(op, a[i], b[i], in0.dtype);
      storePartitionIntBits(dst, p, a.data());
    }
  } else {
    std::vector<float> a(size), b(size);
    for (int64_t p = 0; p < in0.partitions; ++p) {
      loadPartition(in0, p, a.data());
      loadPartition(in1, p, b.data());
      applyAluRun(op, a.data(), b.data(), 0.0f, a.data(), size);
      storePartition(dst, p, a.data());
    }
  }
  ctx.markWritten(dst, /*byMatmul=*/false);
  return Status::success();
}

Status execTensorTensorScan(const ExecContext &ctx) {
  TESSEL_ASSIGN_OR_RETURN(Operand dst, ctx.operand("dst", Access::Write));
  TESSEL_ASSIGN_OR_RETURN(Operand in0, ctx.operand("in0", Access::Read));
  TESSEL_ASSIGN_OR_RETURN(Operand in1, ctx.operand("in1", Access::Read));
  TESSEL_ASSIGN_OR_RETURN(std::optional<Operand> initial, ctx.optionalOperand("initial", Access::Read));
  const AluOp op0 = ctx.insn().op0, op1 = ctx.insn().op1;
  for (AluOp op : {op0, op1})
    if (op == AluOp::None || isUnaryOp(op) || isBitwiseOp(op))
      return ctx.error(ErrorCode::InvalidArgument, "op0 and op1 must be arithmetic binary operators; got {}, {}",
                       aluOpName(op0), aluOpName(op1));
  for (const Operand *operand : {&dst, &in0, &in1}) TESSEL_RETURN_IF_ERROR(ctx.requireOnChip(*operand));
  TESSEL_RETURN_IF_ERROR(ctx.requireSameShape(in0, in1));
  TESSEL_RETURN_IF_ERROR(ctx.requireSameShape(dst, in0));
  if (initial) {
    TESSEL_RETURN_IF_ERROR(ctx.requireOnChip(*initial));
    TESSEL_RETURN_IF_ERROR(ctx.requirePerPartitionScalar(*initial, in0.partitions));
  }
  const uint64_t size = in0.freeSize;
  std::vector<float> a(size), b(size);
  for (int64_t p = 0; p < in0.partitions; ++p) {
    loadPartition(in0, p, a.data());
    loadPartition(in1, p, b.data());
    // The running value stays fp32 between steps; only dst is rounded to its dtype.
    float running = initial ? scalarOf(*initial, p) : ctx.immediate(0, 0.0f);
    for (uint64_t i = 0; i < size; ++i) a[i] = running = applyAlu(op1, applyAlu(op0, a[i], running), b[i]);
    storePartition(dst, p, a.data());
  }
  ctx.markWritten(dst, /*byMatmul=*/false);
  return Status::success();
}

Status execTensorScalar(const ExecContext &ctx) {
  TESSEL_ASSIGN_OR_RETURN(Operand dst, ctx.operand("dst", Access::Write));
  TESSEL_ASSIGN_OR_RETURN(Operand src, ctx.operand("src", Access::Read));
  TESSEL_ASSIGN_OR_RETURN(std::optional<Operand> scalar0, ctx.optionalOperand("scalar0", Access::Read));
  TESSEL_ASSIGN_OR_RETURN(std::optional<Operand> scalar1, ctx.optionalOperand("scalar1", Access::Read));
  const AluOp op0 = ctx.insn().op0, op1 = ctx.insn().op1;
  if (op0 == AluOp::None) return ctx.error(ErrorCode::InvalidArgument, "op0 is required");
  TESSEL_RETURN_IF_ERROR(ctx.requireOnChip(dst));
  TESSEL_RETURN_IF_ERROR(ctx.requireOnChip(src));
  TESSEL_RETURN_IF_ERROR(ctx.requireSameShape(dst, src));
  const std::optional<Operand> *scalars[] = {&scalar0, &scalar1};
  const AluOp ops[] = {op0, op1};
  for (size_t i = 0; i < 2; ++i) {
    if (*scalars[i]) {
      TESSEL_RETURN_IF_ERROR(ctx.requireOnChip(**scalars[i]));
      TESSEL_RETURN_IF_ERROR(ctx.requirePerPartitionScalar(**scalars[i], src.partitions));
    } else if (ops[i] != AluOp::None && !isUnaryOp(ops[i]) && ctx.insn().scalars.size() <= i) {
      return ctx.error(ErrorCode::InvalidArgument, "op{} {} needs a scalar: operand scalar{} or imm[{}]", i,
                       aluOpName(ops[i]), i, i);
    }
  }
  const bool bitwise = isBitwiseOp(op0) || isBitwiseOp(op1);
  if (bitwise) TESSEL_RETURN_IF_ERROR(requireIntegerFor(ctx, src, isBitwiseOp(op0) ? op0 : op1));
  const uint64_t size = src.freeSize;

  if (!bitwise) {
    std::vector<float> values(size);
    for (int64_t p = 0; p < src.partitions; ++p) {
      const float s0 = scalar0 ? scalarOf(*scalar0, p) : ctx.immediate(0, 0.0f);
      const float s1 = scalar1 ? scalarOf(*scalar1, p) : ctx.immediate(1, 0.0f);
      loadPartition(src, p, values.data());
      applyAluRun(op0, values.data(), nullptr, s0, values.data(), size);
      if (op1 != AluOp::None) applyAluRun(op1, values.data(), nullptr, s1, values.data(), size);
      storePartition(dst, p, values.data());
    }
  } else {
    // Integer chain: bitwise ops on integers, the others in fp32, converting between them as needed.
    auto scalarNum = [&](const std::optional<Operand> &op, int64_t p, size_t i) {
      if (!op) return Num{false, 0, ctx.immediate(i, 0.0f)};
      const uint8_t *address = op->partitionBase(p);
      return isIntegerDType(op->dtype) ? Num{true, loadInteger(address, op->dtype), 0}
                                       : Num{false, 0, loadElement(address, op->dtype)};
    };
    std::vector<int64_t> values(size);
    std::vector<Num> results(size);
    for (int64_t p = 0; p < src.partitions; ++p) {
      const Num s0 = scalarNum(scalar0, p, 0), s1 = scalarNum(scalar1, p, 1);
      loadPartitionInt(src, p, values.data());
      for (uint64_t i = 0; i < size; ++i) {
        Num value = applyNum(op0, Num{true, values[i], 0}, s0, src.dtype);
        if (op1 != AluOp::None) value = applyNum(op1, value, s1, src.dtype);
        results[i] = value;
      }
      forEachElement(dst, p, [&](uint8_t *address, uint64_t k) {
        if (results[k].isInt) storeIntegerBits(address, dst.dtype, results[k].i);
        else storeElement(address, dst.dtype, results[k].f);
      });
    }
  }
  ctx.markWritten(dst, /*byMatmul=*/false);
  return Status::success();
}

Status execTensorScalarReduce(const ExecContext &ctx) {
  TESSEL_ASSIGN_OR_RETURN(Operand dst, ctx.operand("dst", Access::Write));
  TESSEL_ASSIGN_OR_RETURN(Operand src, ctx.operand("src", Access::Read));
  TESSEL_ASSIGN_OR_RETURN(Operand accum, ctx.operand("accum", Access::Write));
  TESSEL_ASSIGN_OR_RETURN(std::optional<Operand> scalar0, ctx.optionalOperand("scalar0", Access::Read));
  const AluOp op0 = ctx.insn().op0, reduceOp = ctx.insn().op1;
  if (op0 == AluOp::None || isBitwiseOp(op0))
    return ctx.error(ErrorCode::InvalidArgument, "op0 must be an arithmetic operator; got {}", aluOpName(op0));
  if (reduceOp == AluOp::None || isUnaryOp(reduceOp) || isBitwiseOp(reduceOp))
    return ctx.error(ErrorCode::InvalidArgument, "accum needs a binary arithmetic reduce operator in op1, got {}",
                     aluOpName(reduceOp));
  for (const Operand *operand : {&dst, &src, &accum}) TESSEL_RETURN_IF_ERROR(ctx.requireOnChip(*operand));
  TESSEL_RETURN_IF_ERROR(ctx.requireSameShape(dst, src));
  TESSEL_RETURN_IF_ERROR(ctx.requirePerPartitionScalar(accum, src.partitions));
  if (scalar0) {
    TESSEL_RETURN_IF_ERROR(ctx.requireOnChip(*scalar0));
    TESSEL_RETURN_IF_ERROR(ctx.requirePerPartitionScalar(*scalar0, src.partitions));
  } else if (!isUnaryOp(op0) && ctx.insn().scalars.empty()) {
    return ctx.error(ErrorCode::InvalidArgument, "op0 {} needs a scalar: operand scalar0 or imm[0]", aluOpName(op0));
  }
  std::vector<float> values(src.freeSize);
  for (int64_t p = 0; p < src.partitions; ++p) {
    const float s0 = scalar0 ? scalarOf(*scalar0, p) : ctx.immediate(0, 0.0f);
    loadPartition(src, p, values.data());
    applyAluRun(op0, values.data(), nullptr, s0, values.data(), values.size());
    storePartition(dst, p, values.data());
    // The reduction folds the fp32 results, before dst's rounding (as activation's accum).
    storeElement(accum.partitionBase(p), accum.dtype, foldFloat(reduceOp, values.data(), values.size()));
  }
  ctx.markWritten(dst, /*byMatmul=*/false);
  ctx.markWritten(accum, /*byMatmul=*/false);
  return Status::success();
}

Status execTensorReduce(const ExecContext &ctx) {
  TESSEL_ASSIGN_OR_RETURN(Operand dst, ctx.operand("dst", Access::Write));
  TESSEL_ASSIGN_OR_RETURN(Operand src, ctx.operand("src", Access::Read));
  const AluOp op = ctx.insn().op0;
  TESSEL_RETURN_IF_ERROR(requireReduceOp(ctx, op, "tensor_reduce"));
  TESSEL_RETURN_IF_ERROR(ctx.requireOnChip(dst));
  TESSEL_RETURN_IF_ERROR(ctx.requireOnChip(src));
  // dst keeps src's free dims without the innermost one.
  std::vector<uint32_t> expected, actual;
  for (size_t d = 0; d + 1 < src.dims.size(); ++d)
    if (src.dims[d].count != 1) expected.push_back(src.dims[d].count);
  for (const FreeDim &dim : dst.dims)
    if (dim.count != 1) actual.push_back(dim.count);
  if (dst.partitions != src.partitions || expected != actual)
    return ctx.error(
        ErrorCode::ShapeMismatch,
        "operand dst has shape {}; reducing the innermost dim of src {} leaves {} partitions x {} elements",
        dst.shapeString(), src.shapeString(), src.partitions, src.freeSize / src.dims.back().count);
  const uint64_t inner = src.dims.back().count, outer = src.freeSize / inner;

  if (isBitwiseOp(op)) {
    TESSEL_RETURN_IF_ERROR(requireIntegerFor(ctx, src, op));
    std::vector<int64_t> values(src.freeSize), results(outer);
    for (int64_t p = 0; p < src.partitions; ++p) {
      loadPartitionInt(src, p, values.data());
      for (uint64_t row = 0; row < outer; ++row) {
        int64_t result = values[row * inner];
        for (uint64_t i = 1; i < inner; ++i) result = applyAluInt(op, result, values[row * inner + i], src.dtype);
        results[row] = result;
      }
      storePartitionIntBits(dst, p, results.data());
    }
  } else {
    std::vector<float> values(src.freeSize), results(outer);
    for (int64_t p = 0; p < src.partitions; ++p) {
      loadPartition(src, p, values.data());
      for (uint64_t row = 0; row < outer; ++row) results[row] = foldFloat(op, values.data() + row * inner, inner);
      storePartition(dst, p, results.data());
    }
  }
  ctx.markWritten(dst, /*byMatmul=*/false);
  return Status::success();
}

Status execTensorCopy(const ExecContext &ctx) {
  TESSEL_ASSIGN_OR_RETURN(Operand dst, ctx.operand("dst", Access::Write));
  TESSEL_ASSIGN_OR_RETURN(Operand src, ctx.operand("src", Access::Read));
  TESSEL_RETURN_IF_ERROR(ctx.requireOnChip(dst));
  TESSEL_RETURN_IF_ERROR(ctx.requireOnChip(src));
  if (dst.partitions != src.partitions || dst.freeSize != src.freeSize)
    return ctx.error(ErrorCode::ShapeMismatch,
                     "operand dst has shape {} ({} x {} elements) but src has shape {} ({} x {} elements)",
                     dst.shapeString(), dst.partitions, dst.freeSize, src.shapeString(), src.partitions, src.freeSize);
  if (dst.dtype == src.dtype) {  // Bit-exact when the dtypes match.
    std::vector<uint8_t> bytes(src.freeSize * static_cast<uint64_t>(src.elementBytes));
    for (int64_t p = 0; p < src.partitions; ++p) {
      loadPartitionRaw(src, p, bytes.data());
      storePartitionRaw(dst, p, bytes.data());
    }
  } else {
    std::vector<float> values(src.freeSize);
    for (int64_t p = 0; p < src.partitions; ++p) {
      loadPartition(src, p, values.data());
      storePartition(dst, p, values.data());
    }
  }
  ctx.markWritten(dst, /*byMatmul=*/false);
  return Status::success();
}

Status execMemset(const ExecContext &ctx) {
  TESSEL_ASSIGN_OR_RETURN(Operand dst, ctx.operand("dst", Access::Write));
  TESSEL_RETURN_IF_ERROR(ctx.requireOnChip(dst));
  if (ctx.insn().scalars.empty()) return ctx.error(ErrorCode::InvalidArgument, "memset needs its fill value in imm[0]");
  const std::vector<float> values(dst.freeSize, ctx.insn().scalars[0]);
  for (int64_t p = 0; p < dst.partitions; ++p) storePartition(dst, p, values.data());
  ctx.markWritten(dst, /*byMatmul=*/false);
  return Status::success();
}

Status execBnStats(const ExecContext &ctx) {
  TESSEL_ASSIGN_OR_RETURN(Operand dst, ctx.operand("dst", Access::Write));
  TESSEL_ASSIGN_OR_RETURN(Operand src, ctx.operand("src", Access::Read));
  TESSEL_RETURN_IF_ERROR(ctx.requireOnChip(dst));
  TESSEL_RETURN_IF_ERROR(ctx.requireOnChip(src));
  if (dst.partitions != src.partitions || dst.freeSize != kBnStatsWidth)
    return ctx.error(ErrorCode::ShapeMismatch, "operand dst has shape {}; bn_stats of src {} writes [{}, {}]",
                     dst.shapeString(), src.shapeString(), src.partitions, kBnStatsWidth);
  std::vector<float> values(src.freeSize);
  float stats[kBnStatsWidth];
  for (int64_t p = 0; p < src.partitions; ++p) {
    loadPartition(src, p, values.data());
    for (uint64_t parity = 0; parity < 2; ++parity) {
      float count = 0, sum = 0;
      for (uint64_t i = parity; i < values.size(); i += 2) {
        count += 1.0f;
        sum += values[i];
      }
      const float mean = count > 0 ? sum / count : 0.0f;
      float m2 = 0;
      for (uint64_t i = parity; i < values.size(); i += 2) m2 += (values[i] - mean) * (values[i] - mean);
      stats[3 * parity + 0] = count;
      stats[3 * parity + 1] = mean;
      stats[3 * parity + 2] = m2;
    }
    storePartition(dst, p, stats);
  }
  ctx.markWritten(dst, /*byMatmul=*/false);
  return Status::success();
}

Status execBnAggr(const ExecContext &ctx) {
  TESSEL_ASSIGN_OR_RETURN(Operand dst, ctx.operand("dst", Access::Write));
  TESSEL_ASSIGN_OR_RETURN(Operand src, ctx.operand("src", Access::Read));
  TESSEL_RETURN_IF_ERROR(ctx.requireOnChip(dst));
  TESSEL_RETURN_IF_ERROR(ctx.requireOnChip(src));
  if (src.freeSize % kBnStatsWidth != 0)
    return ctx.error(ErrorCode::ShapeMismatch,
                     "operand src has {} elements per partition; bn_aggr reads bn_stats records (a multiple of {})",
                     src.freeSize, kBnStatsWidth);
  if (dst.partitions != src.partitions || dst.freeSize != kBnAggrWidth)
    return ctx.error(ErrorCode::ShapeMismatch, "operand dst has shape {}; bn_aggr of src {} writes [{}, {}]",
                     dst.shapeString(), src.shapeString(), src.partitions, kBnAggrWidth);
  std::vector<float> values(src.freeSize);
  for (int64_t p = 0; p < src.partitions; ++p) {
    loadPartition(src, p, values.data());
    // Chan et al.'s pairwise update over the {count, mean, M2} triples.
    float count = 0, mean = 0, m2 = 0;
    for (uint64_t i = 0; i + 3 <= values.size(); i += 3) {
      const float countB = values[i], meanB = values[i + 1], m2B = values[i + 2];
      if (countB <= 0) continue;
      const float total = count + countB, delta = meanB - mean;
      mean += delta * (countB / total);
      m2 += m2B + delta * delta * (count * countB / total);
      count = total;
    }
    const float result[kBnAggrWidth] = {mean, count > 0 ? m2 / count : 0.0f};
    storePartition(dst, p, result);
  }
  ctx.markWritten(dst, /*byMatmul=*/false);
  return Status::success();
}

}  // namespace tessel::nc::functional
