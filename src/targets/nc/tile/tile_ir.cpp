// Tile IR as text: the kernel's HBM tensors, its tiles, then one line per op with its engine (or
// "auto" where the compiler chooses), its operands as views named by signature slot, and its
// attributes. Deterministic, for golden tests and for reading what a DSL kernel recorded.
#include "targets/nc/tile/tile_ir.h"

#include <fmt/format.h>

namespace tessel::nc::tile {
namespace {

std::string formatDims(const std::vector<FreeDim> &dims) {
  std::string text;
  for (const FreeDim &dim : dims) text += fmt::format(", [{},{}]", dim.strideElements, dim.count);
  return text;
}

std::string formatOperand(const Kernel &kernel, const OperandView &view) {
  if (view.space == MemSpace::HBM) {
    const std::string &name = view.id >= 0 && view.id < static_cast<int32_t>(kernel.tensors.size())
                                  ? kernel.tensors[view.id].name
                                  : std::string("?");
    return fmt::format("{}[+{}{}]", name, view.offsetElements, formatDims(view.dims));
  }
  const std::string &name =
      view.id >= 0 && view.id < static_cast<int32_t>(kernel.tiles.size()) ? kernel.tiles[view.id].name : std::string("?");
  return fmt::format("{}[p{}:{}, +{}{}]", name, view.partitionStart, view.partitionCount, view.offsetElements,
                     formatDims(view.dims));
}

}  // namespace

std::string_view tileOpKindName(TileOpKind kind) {
  switch (kind) {
    case TileOpKind::Load: return "load";
    case TileOpKind::Store: return "store";
    case TileOpKind::Matmul: return "matmul";
    case TileOpKind::Transpose: return "transpose";
    case TileOpKind::Activation: return "activation";
    case TileOpKind::TensorTensor: return "tensorTensor";
    case TileOpKind::TensorScalar: return "tensorScalar";
    case TileOpKind::Reduce: return "reduce";
    case TileOpKind::Copy: return "copy";
    case TileOpKind::Memset: return "memset";
    case TileOpKind::Iota: return "iota";
    case TileOpKind::AffineSelect: return "affineSelect";
    case TileOpKind::BnStats: return "bnStats";
    case TileOpKind::BnAggr: return "bnAggr";
    case TileOpKind::AllGather: return "allGather";
    case TileOpKind::AllReduce: return "allReduce";
    case TileOpKind::TensorTensorScan: return "tensorTensorScan";
    case TileOpKind::TensorScalarReduce: return "tensorScalarReduce";
  }
  return "?";
}

std::string printKernel(const Kernel &kernel) {
  std::string text = fmt::format("kernel '{}'\n", kernel.name);
  for (const HbmTensorDecl &tensor : kernel.tensors)
    text += fmt::format("  {} {}: {}[{}]\n", tensor.isOutput ? "output" : "input", tensor.name,
                        dtypeName(tensor.dtype), fmt::join(tensor.shape, ", "));
  for (size_t i = 0; i < kernel.tiles.size(); ++i) {
    const TileDecl &tile = kernel.tiles[i];
    text += fmt::format("  tile {}: {} {}[{}{}{}]\n", tile.name, memSpaceName(tile.space), dtypeName(tile.dtype),
                        tile.partitions, tile.freeShape.empty() ? "" : ", ", fmt::join(tile.freeShape, ", "));
  }
  for (size_t i = 0; i < kernel.ops.size(); ++i) {
    const TileOp &op = kernel.ops[i];
    text += fmt::format("  #{} {}.{}", i, tileOpKindName(op.kind), op.engine ? engineName(*op.engine) : "auto");
    const std::vector<OperandSlot> &slots = operandSlots(op.opcode);
    for (size_t s = 0; s < op.operands.size() && s < slots.size(); ++s)
      if (op.operands[s]) text += fmt::format(" {}={}", slots[s].name, formatOperand(kernel, *op.operands[s]));
    if (op.op0 != AluOp::None) text += fmt::format(" op0={}", aluOpName(op.op0));
    if (op.op1 != AluOp::None) text += fmt::format(" op1={}", aluOpName(op.op1));
    if (op.func != ActFunc::None) text += fmt::format(" func={}", actFuncName(op.func));
    if (!op.scalars.empty()) text += fmt::format(" imm={}", fmt::join(op.scalars, ","));
    if (op.accumulate) text += " acc=1";
    if (const auto &at = op.launchOffset) text += fmt::format(" at=r{}*{}<={}", at->reg, at->stepElements, at->maxValue);
    text += "\n";
  }
  return text;
}

}  // namespace tessel::nc::tile
