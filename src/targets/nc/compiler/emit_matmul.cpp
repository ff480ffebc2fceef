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
#include <functional>

#include <fmt/format.h>

#include "targets/nc/compiler/epilogue.h"
#include "targets/nc/compiler/lowering.h"
#include "targets/nc/kernels/tiling.h"
#include "targets/nc/machine/cost.h"

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

/// Sharding across cores: the smallest part of a 128-partition tile a core may own (a 32-partition
/// operand is the finest alignment, section 4.2).
constexpr int64_t kMinShardPartitions = 32;

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

/// The row-parallel matmul: A is split over the cores by its features (K), so each core multiplies
/// its K rows of W (loaded onto the same partitions as its part of A) into partial sums of the whole
/// output, an all_reduce adds them up, and the epilogue (bias, residual, activation) runs after it.
Status emitRowParallel(LoweringContext &ctx, const Node &node, const MatmulNode &m, const DeviceTensor &a,
                       const std::function<float(int64_t, int64_t)> &wAt, int64_t K, int64_t N) {
  tile::KernelBuilder &b = ctx.builder();
  const int64_t P = ctx.profile().partitions;
  const int64_t bank = ctx.profile().psum.bankFp32Elements;
  const int cores = a.shardedCores;
  const int64_t rows = a.freeSize;
  const DType dtype = ctx.matmulDtype();
  const Value *y = node.output(0);
  const std::vector<int64_t> yShape = staticShape(y);
  TileView storage;
  DeviceTensor out = allocateStandardInOneTile(b, y->name(), yShape, DType::F32, -1, &storage);
  // The k-tiles of A this core holds: every cores-th one, as the producer split its output.
  std::vector<int64_t> ownedK;
  for (int64_t t = ctx.options().core; t < K / P; t += cores) ownedK.push_back(t);
  const int64_t kt = static_cast<int64_t>(ownedK.size());

  for (const Span &nb : splitRange(N, kWeightBlockColumns)) {
    std::vector<TileView> wTiles(static_cast<size_t>(kt));
    for (const Span &chunk : splitRange(kt, kWeightChunkTiles)) {
      std::vector<float> block(static_cast<size_t>(P * chunk.count * nb.count));
      for (int64_t p = 0; p < P; ++p)
        for (int64_t t = 0; t < chunk.count; ++t)
          for (int64_t c = 0; c < nb.count; ++c)
            block[static_cast<size_t>((p * chunk.count + t) * nb.count + c)] =
                wAt(ownedK[static_cast<size_t>(chunk.start + t)] * P + p, nb.start + c);
      tile::HbmView wHbm =
          ctx.constantHbm(fmt::format("{}/w{}.{}", node.name(), nb.start / kWeightBlockColumns, chunk.start), dtype,
                          {P, chunk.count * nb.count}, std::move(block));
      TileView wTile = b.sbuf(node.name() + "/w", dtype, P, {chunk.count * nb.count});
      b.load(wTile, wHbm);
      for (int64_t t = 0; t < chunk.count; ++t)
        wTiles[static_cast<size_t>(chunk.start + t)] = wTile.cols(t * nb.count, nb.count);
    }
    for (const Span &nt : splitRange(nb.count, P)) {
      const int64_t n0 = nb.start + nt.start;
      for (const Span &r : splitRange(rows, bank)) {
        TileView dst = out.partitions(n0, nt.count).cols(r.start, r.count);
        if (kt == 0) {  // More cores than k-tiles: this one adds nothing.
          b.memset(dst, 0.0f);
          continue;
        }
        TileView acc = b.psum(node.name() + "/acc", DType::F32, nt.count, {r.count});
        for (int64_t t = 0; t < kt; ++t)
          b.matmul(acc, wTiles[static_cast<size_t>(t)].cols(nt.start, nt.count),
                   a.partitions(ownedK[static_cast<size_t>(t)] * P, P).cols(r.start, r.count), /*accumulate=*/t > 0);
        b.copy(dst, acc);
      }
    }
  }
  b.allReduce(storage, AluOp::Add, cores);

  std::vector<TileView> bias;
  if (m.bias) {
    std::vector<float> values = ctx.constantFloats(m.bias);
    for (float &v : values) v *= m.beta;
    bias = ctx.channelVector(values);
  }
  std::optional<DeviceTensor> residual;
  if (m.residual) {
    TESSEL_ASSIGN_OR_RETURN(DeviceTensor z, ctx.standard(m.residual, -1));
    residual = z;
  }
  DeviceTensor result = ctx.allocate(y, -1);
  for (size_t k = 0; k < out.blocks.size(); ++k) {
    const int64_t n0 = static_cast<int64_t>(k) * P, count = out.blocks[k].partitions();
    for (const Span &r : splitRange(rows, bank)) {
      std::optional<TileView> biasTile;
      if (!bias.empty()) biasTile = bias[k].partitionSlice(0, count);
      std::optional<TileView> residualTile;
      if (residual) residualTile = residual->partitions(n0, count).cols(r.start, r.count);
      emitEpilogue(ctx, result.partitions(n0, count).cols(r.start, r.count), out.partitions(n0, count).cols(r.start, r.count),
                   biasTile, residualTile, node.opType() == "FusedMatMul" ? epilogueOf(node) : Epilogue{});
    }
  }
  ctx.define(y, result);
  return Status::success();
}

/// Whether a matmul's output features split over `cores` in equal parts a core can own (the
/// finest operand alignment is 32 partitions, section 4.2).
bool splits(const MachineProfile &profile, int cores, int64_t K, int64_t N) {
  const int64_t P = profile.partitions;
  return cores > 1 && N % P == 0 && K % P == 0 && P % cores == 0 && P / cores >= kMinShardPartitions;
}

/// The DMA time of `bytes` at the rate of all the core's DMA engines, and the time of a collective
/// over `bytes` per core: sharding pays when the weight bytes it saves take longer to load than the
/// collective it adds (both from the profile, as the simulator charges them).
double dmaNs(const MachineProfile &profile, double bytes) {
  return bytes / (profile.dma.bytesPerNsPerEngine * static_cast<double>(profile.dma.enginesPerCore));
}

bool shardable(const MachineProfile &profile, int cores, int64_t K, int64_t N, int64_t rows, DType dtype) {
  if (!splits(profile, cores, K, N)) return false;
  const double saved = dmaNs(profile, static_cast<double>(K * N * dtypeSizeBytes(dtype)) * (cores - 1) / cores);
  return saved > costCollectiveNs(profile, rows * N * 4, cores);
}

/// Whether `y` may stay split over the cores: every reader is a matmul on the device that takes it
/// as its left operand with a constant weight it will split by rows (the row-parallel half of a
/// column-parallel / row-parallel pair, which needs one all_reduce instead of two gathers). Returns
/// the readers' weight elements and their widest output, or nullopt.
std::optional<std::pair<int64_t, int64_t>> readersTakeSharded(const LoweringContext &ctx, const Value *y) {
  if (y->uses().empty()) return std::nullopt;
  int64_t weights = 0, widest = 0;
  for (const Value *out : y->graph()->outputs())
    if (out == y) return std::nullopt;
  for (const Use &use : y->uses()) {
    const Node *reader = use.user;
    if (!reader || use.inputIndex != 0) return std::nullopt;
    const std::string &op = reader->opType();
    if (op != "MatMul" && op != "FusedMatMul") return std::nullopt;
    if (!deviceUnsupportedReason(*reader, ctx.options()).empty()) return std::nullopt;
    const Value *w = reader->input(1);
    if (w->initializer().rank() != 2) return std::nullopt;
    const int64_t k = w->initializer().size(0), n = w->initializer().size(1);
    if (!splits(ctx.profile(), ctx.options().cores, k, n)) return std::nullopt;
    weights += k * n;
    widest = std::max(widest, n);
  }
  return std::make_pair(weights, widest);
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
  // Column-parallel sharding over the chip's cores: each core computes an equal, aligned part of
  // every 128-feature output tile from its own slice of W (so each core loads 1/cores of the weights)
  // and one all_gather completes the output on every core, unless the readers take it split.
  const int cores = ctx.options().cores;
  const int64_t part = P / std::max(cores, 1);
  if (a.shardedCores > 1) return emitRowParallel(ctx, node, m, a, wAt, K, N);
  // A column-parallel matmul whose readers take its output split pays for one all_reduce (theirs)
  // instead of an all_gather; it is worth splitting when the two matmuls' saved weight DMA beats it.
  bool keepSharded = false;
  if (splits(ctx.profile(), cores, K, N)) {
    if (auto readers = readersTakeSharded(ctx, y)) {
      const double saved = dmaNs(ctx.profile(), static_cast<double>((K * N + readers->first) * dtypeSizeBytes(dtype)) *
                                                    (cores - 1) / cores);
      keepSharded = saved > costCollectiveNs(ctx.profile(), rows * readers->second * 4, cores);
    }
  }
  const bool shard = keepSharded || shardable(ctx.profile(), cores, K, N, rows, dtype);
  const int64_t partStart = shard && !keepSharded ? ctx.options().core * part : 0;
  TileView storage;
  const std::vector<int64_t> yShape = staticShape(y);
  DeviceTensor out = shard ? allocateStandardInOneTile(b, y->name(), yShape, ctx.activationDtype(), -1, &storage)
                           : ctx.allocate(y, -1);
  std::optional<DeviceTensor> residual;
  if (m.residual) {
    TESSEL_ASSIGN_OR_RETURN(DeviceTensor z, ctx.standard(m.residual, -1));
    residual = z;
  }
  std::vector<TileView> bias;
  if (m.bias) {
    std::vector<float> values = ctx.constantFloats(m.bias);
    for (float &v : values) v *= m.beta;
    bias = ctx.channelVector(values);
  }

  for (const Span &nb : nBlocks) {
    // The output features of this n-block this core computes: per 128-feature tile, all of it, or
    // its part when sharded.
    std::vector<Span> owned;
    for (const Span &nt : splitRange(nb.count, P)) {
      if (keepSharded) {  // Whole tiles, every cores-th one: the readers split their K the same way.
        if (((nb.start + nt.start) / P) % cores == ctx.options().core) owned.push_back(nt);
      } else {
        owned.push_back(shard ? Span{nt.start + partStart, part} : nt);
      }
    }
    if (owned.empty()) continue;
    int64_t columns = 0;
    for (const Span &o : owned) columns += o.count;
    auto columnOf = [&](int64_t c) {  // Column c of this core's weight tile -> column of the n-block.
      for (const Span &o : owned) {
        if (c < o.count) return o.start + c;
        c -= o.count;
      }
      return int64_t{0};
    };

    // This core's columns of the n-block as chunks of k-tiles, each in HBM as [k in tile][k-tile]
    // [column] (zero rows past K): one DMA per chunk, and equal-sized SBUF tiles that reuse each
    // other's space.
    std::vector<TileView> wTiles(static_cast<size_t>(kt));
    for (const Span &chunk : splitRange(kt, kWeightChunkTiles)) {
      std::vector<float> block(static_cast<size_t>(P * chunk.count * columns), 0.0f);
      for (int64_t t = 0; t < chunk.count; ++t) {
        const Span &k = kTiles[static_cast<size_t>(chunk.start + t)];
        for (int64_t p = 0; p < k.count; ++p)
          for (int64_t c = 0; c < columns; ++c)
            block[static_cast<size_t>((p * chunk.count + t) * columns + c)] = wAt(k.start + p, nb.start + columnOf(c));
      }
      tile::HbmView wHbm =
          ctx.constantHbm(fmt::format("{}/w{}.{}", node.name(), nb.start / kWeightBlockColumns, chunk.start), dtype,
                          {P, chunk.count * columns}, std::move(block));
      TileView wTile = b.sbuf(node.name() + "/w", dtype, P, {chunk.count * columns});
      b.load(wTile, wHbm);
      for (int64_t t = 0; t < chunk.count; ++t)
        wTiles[static_cast<size_t>(chunk.start + t)] = wTile.cols(t * columns, columns);
    }

    int64_t column = 0;
    for (const Span &o : owned) {
      const int64_t n0 = nb.start + o.start;  // Global output feature = global output partition.
      for (const Span &r : splitRange(rows, bank)) {
        // The accumulator sits on the output's partitions, so the eviction moves nothing across.
        TileView acc = b.psum(node.name() + "/acc", DType::F32, (n0 % P) + o.count, {r.count})
                           .partitionSlice(n0 % P, o.count);
        for (int64_t t = 0; t < kt; ++t) {
          TileView stationary = wTiles[static_cast<size_t>(t)].partitionSlice(0, kTiles[t].count).cols(column, o.count);
          TileView moving = a.partitions(kTiles[t].start, kTiles[t].count).cols(r.start, r.count);
          b.matmul(acc, stationary, moving, /*accumulate=*/t > 0);
        }
        std::optional<TileView> biasTile;
        if (!bias.empty()) biasTile = bias[static_cast<size_t>(n0 / P)].partitionSlice(n0 % P, o.count);
        std::optional<TileView> residualTile;
        if (residual) residualTile = residual->partitions(n0, o.count).cols(r.start, r.count);
        emitEpilogue(ctx, out.partitions(n0, o.count).cols(r.start, r.count), acc, biasTile, residualTile,
                     node.opType() == "FusedMatMul" ? epilogueOf(node) : Epilogue{});
      }
      column += o.count;
    }
  }
  if (keepSharded) {
    out.shardedCores = cores;
  } else if (shard) {
    b.allGather(storage, cores);
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
