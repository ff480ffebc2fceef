// Instruction construction; see emit.h.
#include "targets/nc/tile/emit.h"

#include <set>
#include <string>

#include "targets/nc/isa/tile_rules.h"

namespace tessel::nc::tile {

uint64_t hbmFootprint(DType dtype, const std::vector<int64_t> &shape) {
  constexpr uint64_t kAlign = 64;
  uint64_t elements = 1;
  for (int64_t n : shape) elements *= static_cast<uint64_t>(n);
  return (elements * dtypeSizeBytes(dtype) + kAlign - 1) / kAlign * kAlign;
}

std::vector<HbmPlacement> layoutHbm(const Kernel &kernel, uint64_t *totalBytes) {
  std::vector<HbmPlacement> placements;
  for (const HbmTensorDecl &tensor : kernel.tensors)
    placements.push_back(HbmPlacement{tensor.name, tensor.dtype, tensor.shape, 0, tensor.isOutput, tensor.isScratch});
  auto bytesOf = [](const HbmTensorDecl &tensor) { return hbmFootprint(tensor.dtype, tensor.shape); };
  // Pinned constants at their offsets, then the other constants, then everything else, each in
  // declaration order: the constants' offsets then do not depend on the sizes of the inputs and
  // activations (see KernelBuilder::constant).
  uint64_t offset = 0;
  std::vector<bool> placed(kernel.tensors.size(), false);
  std::set<std::string> pinned;  // Each pin serves one tensor: names need not be unique.
  for (size_t t = 0; t < kernel.tensors.size(); ++t) {
    const HbmTensorDecl &tensor = kernel.tensors[t];
    auto pin = kernel.pinnedConstants.find(tensor.name);
    if (!tensor.isConstant || pin == kernel.pinnedConstants.end() || pin->second.second != bytesOf(tensor) ||
        !pinned.insert(tensor.name).second)
      continue;
    placements[t].offsetBytes = pin->second.first;
    placed[t] = true;
  }
  for (const auto &[name, pin] : kernel.pinnedConstants) offset = std::max(offset, pin.first + pin.second);
  for (bool constants : {true, false})
    for (size_t t = 0; t < kernel.tensors.size(); ++t) {
      const HbmTensorDecl &tensor = kernel.tensors[t];
      if (placed[t] || tensor.isConstant != constants) continue;
      placements[t].offsetBytes = offset;
      offset += bytesOf(tensor);
    }
  *totalBytes = offset;
  return placements;
}

AccessPattern placeView(const OperandView &view, const Allocation &allocation, const std::vector<HbmPlacement> &hbm) {
  AccessPattern ap;
  ap.space = view.space;
  ap.dtype = view.dtype;
  ap.dims = view.dims;
  for (FreeDim &dim : ap.dims) dim.strideElements = encodedStride(dim.strideElements, dim.count);
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
  if (op.launchOffset)
    insn.dynamicOffset = DynamicOffset{0, static_cast<uint8_t>(op.launchOffset->reg),
                                       static_cast<uint64_t>(op.launchOffset->stepElements * dtypeSizeBytes(op.operands[0]->dtype)),
                                       static_cast<uint32_t>(op.launchOffset->maxValue)};
  return insn;
}

}  // namespace tessel::nc::tile
