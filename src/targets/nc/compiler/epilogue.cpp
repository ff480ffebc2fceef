// See epilogue.h; the instructions are kernels::emitEpilogue's.
#include "targets/nc/compiler/epilogue.h"

namespace tessel::nc::compiler {

Epilogue epilogueOf(const Node &node) {
  return Epilogue{node.attrString("activation", ""), node.attrFloats("activation_params")};
}

std::string epilogueUnsupportedReason(const Node &node) { return kernels::epilogueUnsupportedReason(epilogueOf(node)); }

void emitEpilogue(LoweringContext &ctx, const tile::TileView &dst, const tile::TileView &src,
                  const std::optional<tile::TileView> &bias, const std::optional<tile::TileView> &residual,
                  const Epilogue &epilogue) {
  kernels::EpilogueOperands operands;
  operands.partitionBias = bias;
  operands.addend = residual;
  kernels::emitEpilogue(ctx.builder(), dst, src, operands, epilogue);
}

}  // namespace tessel::nc::compiler
