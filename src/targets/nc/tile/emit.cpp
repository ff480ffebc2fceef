// Instruction construction; see emit.h.
#include "targets/nc/tile/emit.h"

namespace tessel::nc::tile {

std::vector<HbmPlacement> layoutHbm(const Kernel &kernel, uint64_t *totalBytes) {
  const uint64_t align = 64;
  std::vector<HbmPlacement> placements;
  uint64_t offset = 0;
  for (const HbmTensorDecl &tensor : kernel.tensors) {
    uint64_t elements = 1;
    for (int64_t n : tensor.shape) elements *= static_cast<uint64_t>(n);
    placements.push_back(HbmPlacement{tensor.name, tensor.dtype, tensor.shape, offset, tensor.isOutput, tensor.isScratch});
    offset += (elements * dtypeSizeBytes(tensor.dtype) + align - 1) / align * align;
  }
  *totalBytes = offset;
  return placements;
}

AccessPattern placeView(const OperandView &view, const Allocation &allocation, const std::vector<HbmPlacement> &hbm) {
  AccessPattern ap;
  ap.space = view.space;
  ap.dtype = view.dtype;
  ap.dims = view.dims;
  uint64_t base = view.space == MemSpace::HBM ? hbm.at(view.id).offsetBytes : allocation.tiles.at(view.id).offsetBytes;
  ap.offsetBytes = base + static_cast<uint64_t>(view.offsetElements * dtypeSizeBytes(view.dtype));
  ap.startPartition = static_cast<uint8_t>(view.partitionStart);
  ap.partitionCount = static_cast<uint8_t>(view.partitionCount);
  return ap;
}

Instruction emitOp(const TileOp &op, const Allocation &allocation, const std::vector<HbmPlacement> &hbm) {
  Instruction insn;
  insn.opcode = op.opcode;
  insn.engine = op.engine.value_or(Engine::DVE);
  for (size_t s = 0; s < op.operands.size() && s < insn.operands.size(); ++s)
    if (op.operands[s]) insn.operands[s] = placeView(*op.operands[s], allocation, hbm);
  insn.op0 = op.op0;
  insn.op1 = op.op1;
  insn.func = op.func;
  insn.scalars = op.scalars;
  insn.accumulate = op.accumulate;
  insn.cores = static_cast<uint8_t>(op.cores);
  return insn;
}

}  // namespace tessel::nc::tile
