// Layer normalization over the last axis (tessel LayerNormalization, ONNX LayerNormalization) and
// RMS normalization (tessel RMSNormalization) with the features on partitions, the layout the
// matmuls around them produce and consume, on the norm family's features form (kernels/norm.h: the
// sums over the features by an all-ones matmul, so they arrive on every partition in fp32).
#include <fmt/format.h>

#include "targets/nc/compiler/lowering.h"
#include "targets/nc/kernels/norm.h"
#include "targets/nc/kernels/tiling.h"

namespace tessel::nc::compiler {
namespace {

using kernels::Span;
using kernels::splitRange;
using tile::TileView;

/// Both normalizations (RMSNormalization has neither a bias nor statistics outputs).
std::string checkNorm(const Node &node, const LoweringOptions &) {
  const int64_t rank = node.input(0)->type().shape().rank();
  if (normalizeAxis(node.attrInt("axis", -1), rank) != rank - 1) return "normalization over other than the last axis";
  if (!node.input(1)->hasInitializer()) return "the scale is not a constant";
  if (node.input(2) && !node.input(2)->hasInitializer()) return "the bias is not a constant";
  if (node.outputs().size() > 1 && (node.output(1) || node.output(2))) return "Mean/InvStdDev outputs are used";
  return "";
}

/// Both normalizations on the features-on-partitions form of the kernel family (kernels/norm.h), one
/// chunk of at most a PSUM bank of rows at a time; a one-row RMSNorm whose blocks lie side by side
/// (a decode step) on the family's one-row emit.
Status emitNorm(LoweringContext &ctx, const Node &node, kernels::NormKind kind) {
  tile::KernelBuilder &b = ctx.builder();
  const int64_t P = ctx.profile().partitions;
  const int64_t bank = ctx.profile().psum.bankFp32Elements;
  const bool layer = kind == kernels::NormKind::Layer;
  TESSEL_ASSIGN_OR_RETURN(DeviceTensor x, ctx.standard(node.input(0), -1));
  const std::vector<TileView> gamma = ctx.channelVector(ctx.constantFloats(node.input(1)));
  const TileView ones = ctx.constantTile(1.0f, DType::F32);
  const std::vector<Span> cTiles = splitRange(x.shape.back(), P);
  const float epsilon = node.attrFloat("epsilon", 1e-5f);
  const int64_t C = x.shape.back(), rows = x.freeSize;
  if (!layer && rows == 1 && x.dtype == DType::F32) {
    if (auto xs = sideBySide(x.blocks, P), gammas = sideBySide(gamma, P); xs && gammas && x.blocks.size() == gamma.size()) {
      DeviceTensor out = ctx.allocate(node.output(0), -1);  // One row: its blocks side by side too.
      kernels::emitOneRowRmsNorm(b, node.name(), *sideBySide(out.blocks, P), *xs, *gammas, ones, C, epsilon);
      ctx.define(node.output(0), out);
      return Status::success();
    }
  }
  DeviceTensor out = ctx.allocate(node.output(0), -1);
  std::vector<TileView> beta;
  if (layer)
    beta = ctx.channelVector(node.input(2) ? ctx.constantFloats(node.input(2))
                                           : std::vector<float>(static_cast<size_t>(C), 0.0f));
  for (const Span &r : splitRange(rows, bank)) {
    kernels::FeatureNormChunk chunk;
    chunk.kind = kind;
    chunk.ones = ones;
    chunk.epsilon = epsilon;
    for (const Span &c : cTiles) {
      chunk.x.push_back(x.partitions(c.start, c.count).cols(r.start, r.count));
      chunk.out.push_back(out.partitions(c.start, c.count).cols(r.start, r.count));
      chunk.gamma.push_back(gamma[static_cast<size_t>(c.start / P)]);
      if (layer) chunk.beta.push_back(beta[static_cast<size_t>(c.start / P)]);
    }
    kernels::emitNormOverFeatures(b, node.name(), chunk);
  }
  ctx.define(node.output(0), out);
  return Status::success();
}

Status emitLayerNorm(LoweringContext &ctx, const Node &node) { return emitNorm(ctx, node, kernels::NormKind::Layer); }
Status emitRmsNorm(LoweringContext &ctx, const Node &node) { return emitNorm(ctx, node, kernels::NormKind::Rms); }

}  // namespace

std::vector<OpLowering> normLowerings() {
  return {OpLowering{"tessel", "LayerNormalization", checkNorm, emitLayerNorm},
          OpLowering{"", "LayerNormalization", checkNorm, emitLayerNorm},
          OpLowering{"tessel", "RMSNormalization", checkNorm, emitRmsNorm}};
}

}  // namespace tessel::nc::compiler
