// Layer normalization over the last axis (tessel LayerNormalization, ONNX LayerNormalization) and
// RMS normalization (tessel RMSNormalization) with the features on partitions, the layout the
// matmuls around them produce and consume.
//
// The statistics reduce over partitions, which DVE and ACT cannot do; the tensor engine can: an
// all-ones stationary [C-tile, 128] times the moving x [C-tile, rows] gives, on every one of 128
// output partitions, the column sums over the features. So the sums of x and of x^2 arrive in PSUM
// already broadcast to all partitions, accumulated over the feature tiles in fp32:
//   s1, s2   = ones^T @ x, ones^T @ x^2            PE (fp32 operands: the statistics need the bits)
//   mean     = s1 / C, rstd = (s2 / C - mean^2 + eps)^-0.5            DVE, [128, rows]
//   y        = ((x - mean) * rstd) * gamma + beta   DVE twice, then ACT with per-partition scale and bias
// per feature tile; a one-row RMSNorm whose tiles lie side by side in one tile (a decode step) takes
// each step in one instruction over all of them.
#include <fmt/format.h>

#include "targets/nc/compiler/lowering.h"
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

/// Rows `r` of x, per feature tile, in fp32 (the statistics need the bits) and squared.
void loadWithSquares(tile::KernelBuilder &b, const Node &node, const DeviceTensor &x, const std::vector<Span> &cTiles,
                     const Span &r, std::vector<TileView> &xs, std::vector<TileView> &squares) {
  for (const Span &c : cTiles) {
    TileView xc = x.partitions(c.start, c.count).cols(r.start, r.count);
    if (x.dtype != DType::F32) {
      TileView wide = b.sbuf(node.name() + "/x32", DType::F32, c.count, {r.count});
      b.copy(wide, xc);
      xc = wide;
    }
    TileView sq = b.sbuf(node.name() + "/x2", DType::F32, c.count, {r.count});
    b.activation(sq, xc, ActFunc::Square);
    xs.push_back(xc);
    squares.push_back(sq);
  }
}

/// What both normalizations start from: x with the features on partitions, the scale per
/// partition, the all-ones stationary for the sums, the feature tiles and epsilon.
struct NormOperands {
  DeviceTensor x;
  std::vector<TileView> gamma;
  TileView ones;
  std::vector<Span> cTiles;
  float epsilon = 1e-5f;
};

Expected<NormOperands> normOperands(LoweringContext &ctx, const Node &node) {
  NormOperands n;
  TESSEL_ASSIGN_OR_RETURN(n.x, ctx.standard(node.input(0), -1));
  n.gamma = ctx.channelVector(ctx.constantFloats(node.input(1)));
  n.ones = ctx.constantTile(1.0f, DType::F32);
  n.cTiles = splitRange(n.x.shape.back(), ctx.profile().partitions);
  n.epsilon = node.attrFloat("epsilon", 1e-5f);
  return n;
}

/// dst = ones^T @ values over the feature tiles: the sums over the features, on every partition.
void sumOverFeatures(tile::KernelBuilder &b, const TileView &dst, const NormOperands &n,
                     const std::vector<TileView> &values) {
  for (size_t t = 0; t < n.cTiles.size(); ++t)
    b.matmul(dst, n.ones.partitionSlice(0, n.cTiles[t].count), values[t], /*accumulate=*/t > 0);
}

Status emitLayerNorm(LoweringContext &ctx, const Node &node) {
  tile::KernelBuilder &b = ctx.builder();
  const int64_t P = ctx.profile().partitions;
  const int64_t bank = ctx.profile().psum.bankFp32Elements;
  TESSEL_ASSIGN_OR_RETURN(NormOperands n, normOperands(ctx, node));
  const auto &[x, gamma, ones, cTiles, eps] = n;
  const int64_t C = x.shape.back(), rows = x.freeSize;
  DeviceTensor out = ctx.allocate(node.output(0), -1);
  std::vector<float> betaValues =
      node.input(2) ? ctx.constantFloats(node.input(2)) : std::vector<float>(static_cast<size_t>(C), 0.0f);
  std::vector<TileView> beta = ctx.channelVector(betaValues);

  for (const Span &r : splitRange(rows, bank)) {
    std::vector<TileView> xs, squares;
    loadWithSquares(b, node, x, cTiles, r, xs, squares);
    TileView s1 = b.psum(node.name() + "/sum", DType::F32, P, {r.count});
    TileView s2 = b.psum(node.name() + "/sumsq", DType::F32, P, {r.count});
    sumOverFeatures(b, s1, n, xs);
    sumOverFeatures(b, s2, n, squares);

    const float invC = 1.0f / static_cast<float>(C);
    TileView mean = b.sbuf(node.name() + "/mean", DType::F32, P, {r.count});
    TileView rstd = b.sbuf(node.name() + "/rstd", DType::F32, P, {r.count});
    TileView meanSq = b.sbuf(node.name() + "/mean2", DType::F32, P, {r.count});
    b.tensorScalar(mean, s1, AluOp::Multiply, invC);
    b.tensorScalar(rstd, s2, AluOp::Multiply, invC);
    b.tensorTensor(meanSq, mean, mean, AluOp::Multiply);
    b.tensorTensor(rstd, rstd, meanSq, AluOp::Subtract);
    b.tensorScalar(rstd, rstd, AluOp::Add, eps, AluOp::Power, -0.5f, Engine::DVE);

    for (size_t t = 0; t < cTiles.size(); ++t) {
      const Span &c = cTiles[t];
      TileView centered = b.sbuf(node.name() + "/xc", DType::F32, c.count, {r.count});
      b.tensorTensor(centered, xs[t], mean.partitionSlice(0, c.count), AluOp::Subtract);
      b.tensorTensor(centered, centered, rstd.partitionSlice(0, c.count), AluOp::Multiply);
      tile::ActivationArgs args;
      args.scale = gamma[static_cast<size_t>(c.start / P)];
      args.bias = tile::ScalarOperand(beta[static_cast<size_t>(c.start / P)]);
      b.activation(out.partitions(c.start, c.count).cols(r.start, r.count), centered, ActFunc::Copy, args);
    }
  }
  ctx.define(node.output(0), out);
  return Status::success();
}

/// One row (a decode step) whose feature blocks lie side by side in one tile, as do the scale's: each
/// step is one instruction over all blocks, not one per block (66 instructions at 2048 features):
///   partial = sum over the blocks of x^2 (DVE), s2 = ones^T @ partial (PE), rstd (DVE),
///   y = (x * rstd) * gamma (DVE twice), into an output whose blocks lie side by side too.
Status emitOneRowRmsNorm(LoweringContext &ctx, const Node &node, const NormOperands &n, const TileView &xs,
                         const TileView &gammas) {
  tile::KernelBuilder &b = ctx.builder();
  const int64_t P = ctx.profile().partitions, blocks = xs.freeSize();
  TileView squares = b.sbuf(node.name() + "/x2", DType::F32, P, {blocks});
  TileView partial = b.sbuf(node.name() + "/partial", DType::F32, P, {1});
  b.tensorTensor(squares, xs, xs, AluOp::Multiply);
  b.reduce(partial, squares, AluOp::Add);
  TileView s2 = b.psum(node.name() + "/sumsq", DType::F32, P, {1});
  b.matmul(s2, n.ones, partial, /*accumulate=*/false);
  TileView rstd = b.sbuf(node.name() + "/rstd", DType::F32, P, {1});
  b.tensorScalar(rstd, s2, AluOp::Multiply, 1.0f / static_cast<float>(n.x.shape.back()));
  b.tensorScalar(rstd, rstd, AluOp::Add, n.epsilon, AluOp::Power, -0.5f, Engine::DVE);
  DeviceTensor out = ctx.allocate(node.output(0), -1);  // One row: its blocks side by side too.
  TileView scaled = b.sbuf(node.name() + "/xs", DType::F32, P, {blocks});
  b.tensorScalar(scaled, xs, AluOp::Multiply, rstd);
  b.tensorTensor(*sideBySide(out.blocks, P), scaled, gammas, AluOp::Multiply);
  ctx.define(node.output(0), out);
  return Status::success();
}

/// RMS normalization: layer normalization's layout and sums without the mean,
///   s2 = ones^T @ x^2 (PE), rstd = (s2 / C + eps)^-0.5 (DVE), y = (x * rstd) * gamma (DVE, ACT).
Status emitRmsNorm(LoweringContext &ctx, const Node &node) {
  tile::KernelBuilder &b = ctx.builder();
  const int64_t P = ctx.profile().partitions;
  const int64_t bank = ctx.profile().psum.bankFp32Elements;
  TESSEL_ASSIGN_OR_RETURN(NormOperands n, normOperands(ctx, node));
  const auto &[x, gamma, ones, cTiles, eps] = n;
  const int64_t C = x.shape.back(), rows = x.freeSize;
  if (rows == 1 && x.dtype == DType::F32) {
    if (auto xs = sideBySide(x.blocks, P), gammas = sideBySide(gamma, P); xs && gammas && x.blocks.size() == gamma.size())
      return emitOneRowRmsNorm(ctx, node, n, *xs, *gammas);
  }
  DeviceTensor out = ctx.allocate(node.output(0), -1);

  for (const Span &r : splitRange(rows, bank)) {
    std::vector<TileView> xs, squares;
    loadWithSquares(b, node, x, cTiles, r, xs, squares);
    TileView s2 = b.psum(node.name() + "/sumsq", DType::F32, P, {r.count});
    sumOverFeatures(b, s2, n, squares);
    TileView rstd = b.sbuf(node.name() + "/rstd", DType::F32, P, {r.count});
    b.tensorScalar(rstd, s2, AluOp::Multiply, 1.0f / static_cast<float>(C));
    b.tensorScalar(rstd, rstd, AluOp::Add, eps, AluOp::Power, -0.5f, Engine::DVE);
    for (size_t t = 0; t < cTiles.size(); ++t) {
      const Span &c = cTiles[t];
      TileView scaled = b.sbuf(node.name() + "/xs", DType::F32, c.count, {r.count});
      b.tensorTensor(scaled, xs[t], rstd.partitionSlice(0, c.count), AluOp::Multiply);
      tile::ActivationArgs args;
      args.scale = gamma[static_cast<size_t>(c.start / P)];
      b.activation(out.partitions(c.start, c.count).cols(r.start, r.count), scaled, ActFunc::Copy, args);
    }
  }
  ctx.define(node.output(0), out);
  return Status::success();
}

}  // namespace

std::vector<OpLowering> normLowerings() {
  return {OpLowering{"tessel", "LayerNormalization", checkNorm, emitLayerNorm},
          OpLowering{"", "LayerNormalization", checkNorm, emitLayerNorm},
          OpLowering{"tessel", "RMSNormalization", checkNorm, emitRmsNorm}};
}

}  // namespace tessel::nc::compiler
