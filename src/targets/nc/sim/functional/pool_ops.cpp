// The GpSimd (POOL) index instructions: iota writes an affine function of the partition and flat
// free index (int32 arithmetic, converted on write), affine_select keeps the source element where
// an affine predicate of the same indices is >= 0 and writes a fill value elsewhere (the causal
// mask). Partition indices are relative to the operand's first partition.
#include <vector>

#include "targets/nc/sim/functional/dtype_convert.h"
#include "targets/nc/sim/functional/ops.h"

namespace tessel::nc::functional {
namespace {

/// The int32 value of an immediate (truncated toward zero, saturated).
int32_t immediateInt32(const ExecContext &ctx, size_t i) {
  int64_t value = floatToInt64(ctx.immediate(i, 0.0f));
  if (value > INT32_MAX) return INT32_MAX;
  if (value < INT32_MIN) return INT32_MIN;
  return static_cast<int32_t>(value);
}

/// int32 a + b*c with two's complement wrap-around (no signed overflow).
int32_t wrapMulAdd(int32_t a, int64_t b, int32_t c) {
  return static_cast<int32_t>(static_cast<uint32_t>(a) + static_cast<uint32_t>(b) * static_cast<uint32_t>(c));
}

}  // namespace

Status execIota(const ExecContext &ctx) {
  TESSEL_ASSIGN_OR_RETURN(Operand dst, ctx.operand("dst", Access::Write));
  TESSEL_RETURN_IF_ERROR(ctx.requireOnChip(dst));
  const int32_t base = immediateInt32(ctx, 0), partitionStep = immediateInt32(ctx, 1),
                freeStep = immediateInt32(ctx, 2);
  for (int64_t p = 0; p < dst.partitions; ++p) {
    const int32_t rowBase = wrapMulAdd(base, p, partitionStep);
    forEachElement(dst, p, [&](uint8_t *address, uint64_t k) {
      storeIntegerSaturating(address, dst.dtype, wrapMulAdd(rowBase, static_cast<int64_t>(k), freeStep));
    });
  }
  ctx.markWritten(dst, /*byMatmul=*/false);
  return Status::success();
}

Status execAffineSelect(const ExecContext &ctx) {
  TESSEL_ASSIGN_OR_RETURN(Operand dst, ctx.operand("dst", Access::Write));
  TESSEL_ASSIGN_OR_RETURN(Operand src, ctx.operand("src", Access::Read));
  TESSEL_RETURN_IF_ERROR(ctx.requireOnChip(dst));
  TESSEL_RETURN_IF_ERROR(ctx.requireOnChip(src));
  TESSEL_RETURN_IF_ERROR(ctx.requireSameShape(dst, src));
  if (ctx.insn().scalars.size() < 3)
    return ctx.error(ErrorCode::InvalidArgument,
                     "affine_select needs imm=<fill>,<partition coefficient>,<free coefficient>[,<offset>]; got {} "
                     "immediate(s)",
                     ctx.insn().scalars.size());
  const float fill = ctx.immediate(0, 0.0f);
  // The predicate in double: exact for the integer coefficients masks use.
  const double partitionCoefficient = ctx.immediate(1, 0.0f), freeCoefficient = ctx.immediate(2, 0.0f),
               offset = ctx.immediate(3, 0.0f);
  std::vector<float> values(src.freeSize);
  for (int64_t p = 0; p < src.partitions; ++p) {
    loadPartition(src, p, values.data());
    const double rowValue = partitionCoefficient * static_cast<double>(p) + offset;
    for (uint64_t k = 0; k < values.size(); ++k)
      if (rowValue + freeCoefficient * static_cast<double>(k) < 0) values[k] = fill;
    storePartition(dst, p, values.data());
  }
  ctx.markWritten(dst, /*byMatmul=*/false);
  return Status::success();
}

}  // namespace tessel::nc::functional
