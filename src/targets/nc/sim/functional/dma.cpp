// dma_copy: element i of dst (partition-major, then free dims) gets element i of src, bit-exact when
// the dtypes match and converted through fp32 otherwise. SBUF and HBM only: DMA cannot reach PSUM.
// Both sides are walked as strided runs in lockstep, a bounded chunk at a time, so a copy of any size
// needs no buffer of its size (overlapping src and dst are copied in element order).
#include <algorithm>
#include <cstring>

#include "targets/nc/sim/functional/dtype_convert.h"
#include "targets/nc/sim/functional/ops.h"

namespace tessel::nc::functional {
namespace {

/// Elements converted per step through the fp32 buffer.
constexpr uint64_t kChunkElements = 4096;

}  // namespace

Status execDmaCopy(const ExecContext &ctx) {
  TESSEL_ASSIGN_OR_RETURN(Operand dst, ctx.operand("dst", Access::Write));
  TESSEL_ASSIGN_OR_RETURN(Operand src, ctx.operand("src", Access::Read));
  for (const Operand *op : {&dst, &src})
    if (op->space == MemSpace::PSUM)
      return ctx.error(ErrorCode::InvalidArgument,
                       "operand {} is in PSUM; DMA cannot reach PSUM (evict through SBUF, section 4.3)", op->name);
  if (dst.totalSize() != src.totalSize())
    return ctx.error(ErrorCode::ShapeMismatch, "operand dst {} has {} elements but src {} has {}", dst.shapeString(),
                     dst.totalSize(), src.shapeString(), src.totalSize());

  const bool sameType = dst.dtype == src.dtype;
  const size_t size = static_cast<size_t>(dst.elementBytes);
  float buffer[kChunkElements];
  RunCursor from(src), to(dst);
  while (!from.done()) {
    const uint64_t count = std::min({from.runRemaining(), to.runRemaining(), kChunkElements});
    const uint8_t *in = from.address();
    uint8_t *out = to.address();
    if (sameType) {
      if (from.strideBytes() == static_cast<int64_t>(size) && to.strideBytes() == static_cast<int64_t>(size)) {
        std::memmove(out, in, count * size);
      } else {
        for (uint64_t i = 0; i < count; ++i)
          std::memmove(out + static_cast<int64_t>(i) * to.strideBytes(),
                       in + static_cast<int64_t>(i) * from.strideBytes(), size);
      }
    } else {
      loadRun(in, from.strideBytes(), count, src.dtype, buffer);
      storeRun(out, to.strideBytes(), count, dst.dtype, buffer);
    }
    from.advance(count);
    to.advance(count);
  }
  return Status::success();
}

}  // namespace tessel::nc::functional
