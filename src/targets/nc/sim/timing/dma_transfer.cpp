// DMA transfer planning; see dma_transfer.h.
#include "targets/nc/sim/timing/dma_transfer.h"

#include <algorithm>

#include "targets/nc/machine/cost.h"
#include "targets/nc/isa/footprint.h"

namespace tessel::nc {
namespace {

uint64_t totalElements(const AccessPattern &ap) {
  uint64_t rows = ap.space == MemSpace::HBM ? 1 : ap.partitionCount;
  return rows * freeSizeElements(ap);
}

// Chunks and busy time of the element range [begin, end) when chunks break at every multiple of
// runA and of runB (and at the range ends).
struct ChunkSum {
  uint64_t chunks = 0;
  double ns = 0;
};

ChunkSum sumChunks(const MachineProfile &profile, int64_t begin, int64_t end, int64_t runA, int64_t runB,
                   int64_t elementBytes) {
  ChunkSum sum;
  auto add = [&](int64_t lengthElements, int64_t count) {
    if (count <= 0 || lengthElements <= 0) return;
    sum.chunks += static_cast<uint64_t>(count);
    sum.ns += static_cast<double>(count) * dmaChunkNs(profile, lengthElements * elementBytes);
  };
  if (runA % runB == 0 || runB % runA == 0) {
    // One run length divides the other: the breaks are the multiples of the shorter one.
    int64_t run = std::min(runA, runB);
    int64_t firstBreak = (begin / run + 1) * run;
    if (firstBreak >= end) {
      add(end - begin, 1);
      return sum;
    }
    add(firstBreak - begin, 1);
    add(run, (end - firstBreak) / run);
    add((end - firstBreak) % run, 1);
    return sum;
  }
  int64_t position = begin;
  int64_t nextA = (begin / runA + 1) * runA, nextB = (begin / runB + 1) * runB;
  while (position < end) {
    int64_t next = std::min({nextA, nextB, end});
    add(next - position, 1);
    position = next;
    if (nextA == next) nextA += runA;
    if (nextB == next) nextB += runB;
  }
  return sum;
}

}  // namespace

int64_t contiguousRunElements(const AccessPattern &ap) {
  std::vector<StridedDim> dims = normalizedDims(ap.dims, /*dropBroadcast=*/false);
  if (dims.empty()) return ap.space == MemSpace::HBM ? static_cast<int64_t>(freeSizeElements(ap)) : 1;
  return dims.back().strideElements == 1 ? dims.back().count : 1;
}

Expected<DmaTransferPlan> planDmaTransfer(const Instruction &insn, size_t index, const MachineProfile &profile) {
  const auto &dstSlot = insn.operands[0], &srcSlot = insn.operands[1];
  if (!dstSlot || !srcSlot)
    return makeError(ErrorCode::InvalidArgument, "instruction {} (dma_copy): needs dst and src", index);
  const AccessPattern &dst = *dstSlot, &src = *srcSlot;
  if (dst.space == MemSpace::PSUM || src.space == MemSpace::PSUM)
    return makeError(ErrorCode::InvalidArgument, "instruction {} (dma_copy): DMA cannot access PSUM (section 4.3)",
                     index);
  const uint64_t elements = totalElements(dst);
  if (elements != totalElements(src))
    return makeError(ErrorCode::InvalidArgument,
                     "instruction {} (dma_copy): dst has {} elements but src has {}; they must match", index,
                     elements, totalElements(src));

  // Rows: the SBUF side's partitions; HBM <-> HBM uses the destination's outermost dim.
  int64_t rows = 1;
  if (dst.space == MemSpace::SBUF) rows = dst.partitionCount;
  else if (src.space == MemSpace::SBUF) rows = src.partitionCount;
  else if (!dst.dims.empty()) rows = dst.dims.front().count;
  if (rows <= 0 || elements % static_cast<uint64_t>(rows) != 0) rows = 1;
  const auto rowElements = static_cast<int64_t>(elements / static_cast<uint64_t>(rows));

  const int64_t runDst = contiguousRunElements(dst), runSrc = contiguousRunElements(src);
  const int64_t elementBytes = std::max(dtypeSizeBytes(dst.dtype), dtypeSizeBytes(src.dtype));
  const int64_t rowsPerEngine = dmaPartitionsPerEngine(profile, rows);

  DmaTransferPlan plan;
  plan.touchesHbm = dst.space == MemSpace::HBM || src.space == MemSpace::HBM;
  plan.bytes = elements * static_cast<uint64_t>(dtypeSizeBytes(dst.dtype));
  if (src.space == MemSpace::HBM) plan.hbmReadBytes = elements * static_cast<uint64_t>(dtypeSizeBytes(src.dtype));
  if (dst.space == MemSpace::HBM) plan.hbmWriteBytes = plan.bytes;
  for (int64_t firstRow = 0, engine = 0; firstRow < rows; firstRow += rowsPerEngine, ++engine) {
    int64_t lastRow = std::min(rows, firstRow + rowsPerEngine);
    int64_t begin = firstRow * rowElements, end = lastRow * rowElements;
    ChunkSum sum = sumChunks(profile, begin, end, runDst, runSrc, elementBytes);
    DmaEngineShare share;
    share.engine = static_cast<int>(engine);
    share.elements = static_cast<uint64_t>(end - begin);
    share.bytes = share.elements * static_cast<uint64_t>(elementBytes);
    share.chunks = sum.chunks;
    share.busyNs = profile.dma.transferFixedNs + sum.ns;
    plan.chunks += sum.chunks;
    plan.shares.push_back(share);
  }
  return plan;
}

}  // namespace tessel::nc
