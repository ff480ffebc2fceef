// Matmuls with a constant right operand (MatMul, Gemm, tessel FusedMatMul) on the tensor engine.
//
// The activation A [..., K] arrives in standard form with K on partitions (A^T: [K, rows]), which is
// what the moving operand needs; the weights are the stationary operand, so the output comes out as
// Y^T [N, rows]: the standard form of Y with its features N on partitions, ready to be the next
// matmul's moving operand with no transpose, and with the bias per partition, which ACT adds for free
// on the PSUM eviction (epilogue.h).
//
//   for n-block (512 columns of W; its DMA moves kTiles * 512 contiguous elements per partition):
//     for n-tile (128 output features, the stationary's free dim):
//       for row chunk (<= 512 rows, one PSUM bank):
//         psum = sum over k-tiles of W[k-tile, n-tile]^T @ A^T[k-tile, rows]     (PE, fp32)
//         Y^T[n-tile, rows] = act(psum + bias + Z)                                (ACT/DVE)
//
// The weights are laid out in HBM at compile time as [n-block][k-chunk][k in tile][k-tile][column],
// so each chunk of an n-block is one DMA with a long contiguous run per partition (section 9.4: short chunks waste DMA
// time), and the whole segment's list scheduler starts these loads early, under earlier layers' work.
#include <fmt/format.h>

#include "targets/nc/compiler/epilogue.h"
#include "targets/nc/compiler/lowering.h"
#include "targets/nc/kernels/tiling.h"

namespace tessel::nc::compiler {
namespace {

using kernels::Span;
using kernels::splitRange;
using tile::TileView;

/// Columns of W per n-block, and k-tiles per weight DMA: a weight tile is at most 6 x 512 elements
/// per partition (6 KiB in bf16), a long contiguous DMA run that still leaves SBUF room to prefetch
/// several layers ahead without fragmenting it.
constexpr int64_t kWeightBlockColumns = 512;
constexpr int64_t kWeightChunkTiles = 6;

struct MatmulNode {
  const Value *a = nullptr;
  const Value *w = nullptr;
  const Value *bias = nullptr;      // Constant [N], or null.
  const Value *residual = nullptr;  // Activation shaped like Y, or null.
  bool transB = false;
  float alpha = 1.0f, beta = 1.0f;
};

MatmulNode describeNode(const Node &node) {
  MatmulNode m;
  m.a = node.input(0);
  m.w = node.input(1);
  if (node.opType() == "Gemm") {
    m.transB = node.attrInt("transB", 0) != 0;
    m.alpha = node.attrFloat("alpha", 1.0f);
    m.beta = node.attrFloat("beta", 1.0f);
    m.bias = node.input(2);
  } else if (node.opType() == "FusedMatMul") {
    m.bias = node.input(2);
    m.residual = node.input(3);
  }
  return m;
}

std::string checkMatmul(const Node &node, const LoweringOptions &) {
  const MatmulNode m = describeNode(node);
  if (!m.w->hasInitializer()) return "the right operand is not a constant (activation x activation matmul)";
  if (m.w->type().shape().rank() != 2) return "the right operand is not 2-D";
  if (m.a->type().shape().rank() < 1) return "the left operand is a scalar";
  if (node.opType() == "MatMul" && m.a->type().shape().rank() < 2) return "the left operand is 1-D";
  if (node.opType() == "Gemm" && node.attrInt("transA", 0) != 0) return "Gemm with transA=1";
  if (m.bias) {
    if (!m.bias->hasInitializer()) return "the bias is not a constant";
    const int64_t n = m.w->type().shape().dims()[m.transB ? 0 : 1].size;
    if (m.bias->initializer().numel() != n) return "the bias is not one value per output column";
  }
  if (node.opType() == "FusedMatMul") return epilogueUnsupportedReason(node);
  return "";
}

Status emitMatmul(LoweringContext &ctx, const Node &node) {
  tile::KernelBuilder &b = ctx.builder();
  const MatmulNode m = describeNode(node);
  const Value *y = node.output(0);
  const int64_t P = ctx.profile().partitions;
  const int64_t bank = ctx.profile().psum.bankFp32Elements;

  // W as [K, N], scaled by alpha (Gemm).
  const std::vector<int64_t> wShape = {m.w->initializer().size(0), m.w->initializer().size(1)};
  const int64_t K = m.transB ? wShape[1] : wShape[0];
  const int64_t N = m.transB ? wShape[0] : wShape[1];
  const std::vector<float> raw = ctx.constantFloats(m.w);
  auto wAt = [&](int64_t k, int64_t n) {
    return m.alpha * raw[static_cast<size_t>(m.transB ? n * K + k : k * N + n)];
  };

  const std::vector<Span> kTiles = splitRange(K, P);
  const std::vector<Span> nBlocks = splitRange(N, kWeightBlockColumns);
  const int64_t kt = static_cast<int64_t>(kTiles.size());
  const DType dtype = ctx.matmulDtype();

  TESSEL_ASSIGN_OR_RETURN(DeviceTensor a, ctx.standardAs(m.a, -1, dtype));
  if (a.shape.back() != K) return ctx.unsupported(node, fmt::format("K differs: A has {}, W has {}", a.shape.back(), K));
  const int64_t rows = a.freeSize;
  DeviceTensor out = ctx.allocate(y, -1);
  std::optional<DeviceTensor> residual;
  if (m.residual) {
    TESSEL_ASSIGN_OR_RETURN(DeviceTensor z, ctx.standard(m.residual, -1));
    residual = z;
  }
  std::vector<TileView> bias;
  if (m.bias) {
    std::vector<float> values = ctx.constantFloats(m.bias);
    for (float &v : values) v *= m.beta;
    bias = ctx.channelVector(node.name() + "/bias", values);
  }

  for (const Span &nb : nBlocks) {
    // This n-block of W as chunks of k-tiles, each in HBM as [k in tile][k-tile][column] (zero rows
    // past K): one DMA per chunk, and equal-sized SBUF tiles that reuse each other's space.
    std::vector<TileView> wTiles(static_cast<size_t>(kt));
    for (const Span &chunk : splitRange(kt, kWeightChunkTiles)) {
      std::vector<float> block(static_cast<size_t>(P * chunk.count * nb.count), 0.0f);
      for (int64_t t = 0; t < chunk.count; ++t) {
        const Span &k = kTiles[static_cast<size_t>(chunk.start + t)];
        for (int64_t p = 0; p < k.count; ++p)
          for (int64_t c = 0; c < nb.count; ++c)
            block[static_cast<size_t>((p * chunk.count + t) * nb.count + c)] = wAt(k.start + p, nb.start + c);
      }
      tile::HbmView wHbm =
          ctx.constantHbm(fmt::format("{}/w{}.{}", node.name(), nb.start / kWeightBlockColumns, chunk.start), dtype,
                          {P, chunk.count * nb.count}, std::move(block));
      TileView wTile = b.sbuf(node.name() + "/w", dtype, P, {chunk.count * nb.count});
      b.load(wTile, wHbm);
      for (int64_t t = 0; t < chunk.count; ++t)
        wTiles[static_cast<size_t>(chunk.start + t)] = wTile.cols(t * nb.count, nb.count);
    }

    for (const Span &nt : splitRange(nb.count, P)) {
      const int64_t n0 = nb.start + nt.start;  // Global output feature = global output partition.
      for (const Span &r : splitRange(rows, bank)) {
        TileView acc = b.psum(node.name() + "/acc", DType::F32, nt.count, {r.count});
        for (int64_t t = 0; t < kt; ++t) {
          TileView stationary = wTiles[static_cast<size_t>(t)].partitionSlice(0, kTiles[t].count).cols(nt.start, nt.count);
          TileView moving = a.partitions(kTiles[t].start, kTiles[t].count).cols(r.start, r.count);
          b.matmul(acc, stationary, moving, /*accumulate=*/t > 0);
        }
        std::optional<TileView> biasTile;
        if (!bias.empty()) biasTile = bias[static_cast<size_t>(n0 / P)].partitionSlice(n0 % P, nt.count);
        std::optional<TileView> residualTile;
        if (residual) residualTile = residual->partitions(n0, nt.count).cols(r.start, r.count);
        emitEpilogue(ctx, out.partitions(n0, nt.count).cols(r.start, r.count), acc, biasTile, residualTile,
                     node.opType() == "FusedMatMul" ? epilogueOf(node) : Epilogue{});
      }
    }
  }
  ctx.define(y, out);
  return Status::success();
}

}  // namespace

std::vector<OpLowering> matmulLowerings() {
  std::vector<OpLowering> v;
  for (auto [domain, op] : {std::pair{"", "MatMul"}, std::pair{"", "Gemm"}, std::pair{"tessel", "FusedMatMul"}})
    v.push_back(OpLowering{domain, op, checkMatmul, emitMatmul});
  return v;
}

}  // namespace tessel::nc::compiler
