// The tensor engine's instructions: nc_matmul (dst[m][n] = sum_k stationary[k][m] * moving[k][n] in
// fp32, overwriting or accumulating into PSUM) and nc_transpose (a bit-exact partition <-> free swap).
// Both operands are converted to fp32 once per instruction and multiplied with an i-k-j loop over
// contiguous rows, four output rows at a time, which the compiler vectorises: a 128x128x512 tile is a
// few milliseconds at most.
#include <algorithm>
#include <vector>

#include "targets/nc/sim/functional/ops.h"

namespace tessel::nc::functional {
namespace {

/// Output rows computed together: each moving row is read once per block.
constexpr int64_t kRowBlock = 4;

/// out[m*N + n] = sum over k (ascending) of st[k*M + m] * mv[k*N + n].
void multiply(const float *st, const float *mv, float *out, int64_t k, int64_t m, int64_t n) {
  std::fill(out, out + m * n, 0.0f);
  int64_t row = 0;
  for (; row + kRowBlock <= m; row += kRowBlock) {
    float *__restrict o0 = out + (row + 0) * n;
    float *__restrict o1 = out + (row + 1) * n;
    float *__restrict o2 = out + (row + 2) * n;
    float *__restrict o3 = out + (row + 3) * n;
    for (int64_t kk = 0; kk < k; ++kk) {
      const float *__restrict moving = mv + kk * n;
      const float *weights = st + kk * m + row;
      const float a0 = weights[0], a1 = weights[1], a2 = weights[2], a3 = weights[3];
      for (int64_t j = 0; j < n; ++j) {
        const float x = moving[j];
        o0[j] += a0 * x;
        o1[j] += a1 * x;
        o2[j] += a2 * x;
        o3[j] += a3 * x;
      }
    }
  }
  for (; row < m; ++row) {
    float *__restrict o = out + row * n;
    for (int64_t kk = 0; kk < k; ++kk) {
      const float *__restrict moving = mv + kk * n;
      const float a = st[kk * m + row];
      for (int64_t j = 0; j < n; ++j) o[j] += a * moving[j];
    }
  }
}

/// Errors unless every PSUM word of `dst` was last written by a matmul (accumulation is only
/// defined onto matmul results, section 4.3).
Status checkAccumulationTarget(const ExecContext &ctx, const Operand &dst) {
  const MachineState &state = ctx.state();
  for (int64_t p = 0; p < dst.partitions; ++p) {
    const uint64_t partitionAddress = dst.baseAddress + static_cast<uint64_t>(p) * dst.partitionStrideBytes;
    std::optional<uint64_t> bad;
    forEachElement(dst, p, [&](uint8_t *address, uint64_t) {
      uint64_t byteAddress = partitionAddress + static_cast<uint64_t>(address - dst.partitionBase(p));
      if (!bad && !state.psumWordWrittenByMatmul(byteAddress)) bad = byteAddress;
    });
    if (bad) {
      uint64_t partition = *bad / dst.partitionStrideBytes, offset = *bad % dst.partitionStrideBytes;
      return ctx.error(ErrorCode::RuntimeError,
                       "acc=1 accumulates onto PSUM partition {} bytes {}..{}, which no matmul wrote last (never "
                       "written, or written by a non-matmul instruction); that is undefined (section 4.3)",
                       partition, offset, offset + dst.elementBytes);
    }
  }
  return Status::success();
}

}  // namespace

Status execMatmul(const ExecContext &ctx) {
  TESSEL_ASSIGN_OR_RETURN(Operand dst, ctx.operand("dst", Access::Write));
  TESSEL_ASSIGN_OR_RETURN(Operand st, ctx.operand("stationary", Access::Read));
  TESSEL_ASSIGN_OR_RETURN(Operand mv, ctx.operand("moving", Access::Read));
  if (dst.space != MemSpace::PSUM)
    return ctx.error(ErrorCode::InvalidArgument, "operand dst is in {}; nc_matmul writes PSUM",
                     memSpaceName(dst.space));
  if (dst.dtype != DType::F32)
    return ctx.error(ErrorCode::TypeMismatch, "operand dst is {}; nc_matmul writes f32", dtypeName(dst.dtype));
  TESSEL_RETURN_IF_ERROR(ctx.requireOnChip(st));
  TESSEL_RETURN_IF_ERROR(ctx.requireOnChip(mv));
  const int64_t k = st.partitions;
  const int64_t m = static_cast<int64_t>(st.freeSize), n = static_cast<int64_t>(mv.freeSize);
  if (mv.partitions != k)
    return ctx.error(ErrorCode::ShapeMismatch,
                     "contraction K differs: stationary {} has {} partitions, moving {} has {}", st.shapeString(), k,
                     mv.shapeString(), mv.partitions);
  if (dst.partitions != m || static_cast<int64_t>(dst.freeSize) != n)
    return ctx.error(ErrorCode::ShapeMismatch,
                     "operand dst has shape {} ({} x {} elements); stationary {} and moving {} give M x N = {} x {}",
                     dst.shapeString(), dst.partitions, dst.freeSize, st.shapeString(), mv.shapeString(), m, n);
  if (ctx.insn().accumulate) TESSEL_RETURN_IF_ERROR(checkAccumulationTarget(ctx, dst));

  std::vector<float> stationary(static_cast<size_t>(k * m)), moving(static_cast<size_t>(k * n));
  for (int64_t p = 0; p < k; ++p) {
    loadPartition(st, p, stationary.data() + p * m);
    loadPartition(mv, p, moving.data() + p * n);
  }
  std::vector<float> out(static_cast<size_t>(m * n));
  multiply(stationary.data(), moving.data(), out.data(), k, m, n);

  std::vector<float> old(ctx.insn().accumulate ? static_cast<size_t>(n) : 0);
  for (int64_t row = 0; row < m; ++row) {
    float *result = out.data() + row * n;
    if (ctx.insn().accumulate) {
      loadPartition(dst, row, old.data());
      for (int64_t j = 0; j < n; ++j) result[j] = old[j] + result[j];
    }
    storePartition(dst, row, result);
  }
  ctx.markWritten(dst, /*byMatmul=*/true);
  return Status::success();
}

Status execTranspose(const ExecContext &ctx) {
  TESSEL_ASSIGN_OR_RETURN(Operand dst, ctx.operand("dst", Access::Write));
  TESSEL_ASSIGN_OR_RETURN(Operand src, ctx.operand("src", Access::Read));
  TESSEL_RETURN_IF_ERROR(ctx.requireOnChip(dst));
  TESSEL_RETURN_IF_ERROR(ctx.requireOnChip(src));
  if (dst.dtype != src.dtype)
    return ctx.error(ErrorCode::TypeMismatch, "operand dst is {} but src is {}; nc_transpose keeps the dtype",
                     dtypeName(dst.dtype), dtypeName(src.dtype));
  const int64_t partitions = src.partitions, free = static_cast<int64_t>(src.freeSize);
  if (dst.partitions != free || static_cast<int64_t>(dst.freeSize) != partitions)
    return ctx.error(ErrorCode::ShapeMismatch, "operand dst has shape {} ({} x {}); the transpose of src {} is {} x {}",
                     dst.shapeString(), dst.partitions, dst.freeSize, src.shapeString(), free, partitions);
  const size_t size = static_cast<size_t>(src.elementBytes);
  std::vector<uint8_t> all(static_cast<size_t>(partitions * free) * size),
      column(static_cast<size_t>(partitions) * size);
  for (int64_t p = 0; p < partitions; ++p) loadPartitionRaw(src, p, all.data() + static_cast<size_t>(p * free) * size);
  for (int64_t f = 0; f < free; ++f) {
    for (int64_t p = 0; p < partitions; ++p)
      std::copy_n(all.data() + static_cast<size_t>(p * free + f) * size, size,
                  column.data() + static_cast<size_t>(p) * size);
    storePartitionRaw(dst, f, column.data());
  }
  ctx.markWritten(dst, /*byMatmul=*/false);
  return Status::success();
}

}  // namespace tessel::nc::functional
