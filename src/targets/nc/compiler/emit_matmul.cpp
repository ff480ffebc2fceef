// Matmuls with a constant right operand (MatMul, Gemm, tessel FusedMatMul) on the tensor engine, through the matmul
// family's plan and emit (kernels/matmul/plan.h, emit.h).
//
// The activation A [..., K] arrives in standard form with K on partitions (A^T: [K, rows]), which is what the moving
// operand needs, so it is the family's SBUF-resident moving operand; the weights are the stationary operand, so the
// output comes out as Y^T [N, rows]: the standard form of Y with its features N on partitions, ready to be the next
// matmul's moving operand with no transpose, and with the bias per partition, which ACT adds for free on the PSUM
// eviction (epilogue.h). The output's features are the family's M, the rows its N.
//
// The weights are laid out in HBM at compile time as the plan's blocked stationary layout, one [k in
// tile][k-tile][column] tensor per (m-block, k-chunk), so each chunk is one DMA with one long contiguous run per
// partition, and the whole segment's list scheduler starts these loads early, under earlier layers' work (the plan's
// per-block stationary buffers).
#include <algorithm>
#include <functional>
#include <set>

#include <fmt/format.h>

#include "targets/nc/compiler/epilogue.h"
#include "targets/nc/compiler/lowering.h"
#include "targets/nc/kernels/matmul/emit.h"
#include "targets/nc/kernels/matmul/plan.h"
#include "targets/nc/kernels/tiling.h"
#include "targets/nc/machine/cost.h"

namespace tessel::nc::compiler {
namespace {

using kernels::Span;
using kernels::splitRange;
using tile::TileView;

uint64_t hashValues(const std::vector<int64_t> &values) {
  uint64_t hash = 1469598103934665603ull;
  for (int64_t v : values) hash = (hash ^ static_cast<uint64_t>(v)) * 1099511628211ull;
  return hash;
}

/// What the weight blocks of a matmul are made from, for the constant cache: the weights' storage
/// (the compiles of one model's buckets share it), their size, a sample of their values (so a reused
/// address cannot pass for other weights), and how they are read (alpha, transB).
std::string weightsRecipe(const Tensor &w, float alpha, bool transB) {
  std::vector<int64_t> sample;
  const int64_t n = w.numel();
  for (int64_t i = 0; i < n; i += std::max<int64_t>(1, n / 61)) sample.push_back(static_cast<int64_t>(w.scalarAsDouble(i) * 1e9));
  return fmt::format("{}:{}:{:016x}|{}|{}", w.rawData(), fmt::join(w.sizes(), "x"), hashValues(sample), alpha, transB);
}

/// Sharding across cores: the smallest part of a 128-partition tile a core may own (a 32-partition operand is the
/// finest alignment, section 4.2).
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

/// A node's matmul on the family: out[f, rows] for the `problem.M` output features this core computes (local column c
/// is global feature featureOf(c), features of one m-tile contiguous), from the k-tiles of W and A starting at global
/// rows kTileStarts, with the epilogue on the eviction.
void lowerOnFamily(LoweringContext &ctx, const Node &node, const kernels::MatmulProblem &problem,
                   const std::function<int64_t(int64_t)> &featureOf, const std::vector<int64_t> &kTileStarts,
                   const std::string &weights, const std::function<float(int64_t, int64_t)> &wAt,
                   const DeviceTensor &a, const DeviceTensor &out,
                   const std::vector<TileView> &bias, const std::optional<DeviceTensor> &residual,
                   const Epilogue &epilogue) {
  const int64_t P = ctx.profile().partitions;
  const kernels::MatmulPlan plan = kernels::planMatmul(ctx.profile(), problem);
  auto rowsOf = [&](int64_t kt) { return std::min(plan.tileK, problem.K - kt * plan.tileK); };
  kernels::MatmulOperands operands;
  operands.stationaryChunk = [&](int64_t mb, int64_t kc) {
    const Span cols{mb * plan.blockCols(), std::min(plan.blockCols(), problem.M - mb * plan.blockCols())};
    const Span kts{kc * plan.chunkTiles, std::min(plan.chunkTiles, plan.kTiles - kc * plan.chunkTiles)};
    // The block's bytes follow from the weights and which of their rows and columns it holds.
    std::vector<int64_t> rowsAndColumns;
    for (int64_t t = 0; t < kts.count; ++t)
      rowsAndColumns.push_back(kTileStarts[static_cast<size_t>(kts.start + t)]), rowsAndColumns.push_back(rowsOf(kts.start + t));
    for (int64_t c = 0; c < cols.count; ++c) rowsAndColumns.push_back(featureOf(cols.start + c));
    const std::string recipe = fmt::format("{}|{:016x}", weights, hashValues(rowsAndColumns));
    return ctx.constantHbm(fmt::format("{}/w{}.{}", node.name(), mb, kc), problem.dtype, {P, kts.count * cols.count},
                           recipe, [&] {
                             std::vector<float> block(static_cast<size_t>(P * kts.count * cols.count), 0.0f);
                             for (int64_t t = 0; t < kts.count; ++t) {
                               const int64_t kt = kts.start + t;
                               for (int64_t p = 0; p < rowsOf(kt); ++p)
                                 for (int64_t c = 0; c < cols.count; ++c)
                                   block[static_cast<size_t>((p * kts.count + t) * cols.count + c)] =
                                       wAt(kTileStarts[static_cast<size_t>(kt)] + p, featureOf(cols.start + c));
                             }
                             return block;
                           });
  };
  operands.movingTile = [&](int64_t kt) { return a.partitions(kTileStarts[static_cast<size_t>(kt)], rowsOf(kt)); };
  operands.outputTile = [&](Span m, Span n) {
    return out.partitions(featureOf(m.start), m.count).cols(n.start, n.count);
  };
  if (!bias.empty())
    operands.partitionBias = [&](Span m) -> std::optional<TileView> {
      const int64_t f = featureOf(m.start);
      return bias[static_cast<size_t>(f / P)].partitionSlice(f % P, m.count);
    };
  if (residual)
    operands.residual = [&](Span m, Span n) -> std::optional<TileView> {
      return residual->partitions(featureOf(m.start), m.count).cols(n.start, n.count);
    };
  operands.epilogue = epilogue;
  operands.tilePrefix = node.name() + "/";
  kernels::emitMatmul(ctx.builder(), plan, operands);
}

/// The family problem of a node's matmul: W stationary in the blocked layout, A resident, Y in SBUF.
kernels::MatmulProblem loweringProblem(int64_t M, int64_t rows, int64_t K, DType dtype, DType outputDtype,
                                       int64_t mTileColumns) {
  kernels::MatmulProblem problem;
  problem.M = M, problem.N = rows, problem.K = K;
  problem.dtype = dtype;
  problem.outputDtype = outputDtype;
  problem.stationaryLayout = kernels::StationaryLayout::Blocked;
  problem.moving = kernels::OperandPlace::Sbuf;
  problem.output = kernels::OperandPlace::Sbuf;
  problem.mTileColumns = mTileColumns;
  return problem;
}

/// The row-parallel matmul: A is split over the cores by its features (K), so each core multiplies its K rows of W
/// (loaded onto the same partitions as its part of A) into partial sums of the whole output, an all_reduce adds them
/// up, and the epilogue (bias, residual, activation) runs after it.
Status emitRowParallel(LoweringContext &ctx, const Node &node, const MatmulNode &m, const DeviceTensor &a,
                       const std::string &weights, const std::function<float(int64_t, int64_t)> &wAt, int64_t K,
                       int64_t N) {
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
  std::vector<int64_t> ownedRows;
  for (int64_t t = ctx.options().core; t < K / P; t += cores) ownedRows.push_back(t * P);
  const int64_t kt = static_cast<int64_t>(ownedRows.size());
  if (kt == 0) {  // More cores than k-tiles: this core adds nothing.
    for (size_t k = 0; k < out.blocks.size(); ++k) b.memset(out.blocks[k], 0.0f);
  } else {
    lowerOnFamily(
        ctx, node, loweringProblem(N, rows, kt * P, dtype, DType::F32, 0), [](int64_t c) { return c; }, ownedRows, weights, wAt,
        a, out, {}, std::nullopt, Epilogue{});
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
      emitEpilogue(ctx, result.partitions(n0, count).cols(r.start, r.count),
                   out.partitions(n0, count).cols(r.start, r.count), biasTile, residualTile,
                   node.opType() == "FusedMatMul" ? epilogueOf(node) : Epilogue{});
    }
  }
  ctx.define(y, result);
  return Status::success();
}

/// Whether a matmul's output features split over `cores` in equal parts of every 128-feature tile, part c on core c
/// (the finest operand alignment is 32 partitions, section 4.2, so at most 4 cores).
bool splitsTileParts(const MachineProfile &profile, int cores, int64_t K, int64_t N) {
  const int64_t P = profile.partitions;
  return cores > 1 && N % P == 0 && K % P == 0 && P % cores == 0 && P / cores >= kMinShardPartitions;
}

/// Whether they split in whole 128-feature tiles, every cores-th tile on a core: the split a row-parallel reader takes,
/// for any number of cores (with fewer tiles than cores, the cores past the last tile hold none: a grouped-query
/// attention's 4 KV-head tiles on 8 cores).
bool splitsWholeTiles(const MachineProfile &profile, int cores, int64_t K, int64_t N) {
  const int64_t P = profile.partitions;
  return cores > 1 && N % P == 0 && K % P == 0 && N / P >= 2;
}

/// The DMA time of `bytes` at the rate of all the core's DMA engines: sharding pays when the weight bytes it saves take
/// longer to load than the collective it adds (both from the profile, as the simulator charges them).
double dmaNs(const MachineProfile &profile, double bytes) {
  return bytes / (profile.dma.bytesPerNsPerEngine * static_cast<double>(profile.dma.enginesPerCore));
}

/// How a matmul's output features split over the chip's cores.
enum class OutputSplit {
  None,
  TileParts,        // Part c of every tile on core c, then an all_gather (up to 4 cores).
  WholeTilesKept,   // Tile t on core t % cores, left split for row-parallel readers (their all_reduce joins it).
  WholeTilesSummed  // Tile t on core t % cores, zeros elsewhere, then an all_reduce (any number of cores).
};

/// The split of an output every core needs whole, if one pays: when the weight DMA it saves a core takes longer than the
/// collective it adds. Tile parts where the cores are few enough (each core's stationary is narrower, which shortens a
/// few-row matmul's LoadStationary-bound PE work too; measured 23% faster than whole tiles on a 32-token Llama prefill
/// on 2 cores), whole tiles beyond.
OutputSplit gatheredSplit(const MachineProfile &profile, int cores, int64_t K, int64_t N, int64_t rows, DType dtype) {
  const double weightBytes = static_cast<double>(K * N * dtypeSizeBytes(dtype));
  const int64_t outputBytes = rows * N * 4;
  if (splitsTileParts(profile, cores, K, N))
    return dmaNs(profile, weightBytes * (cores - 1) / cores) >
                   costCollectiveNs(profile, Collective::AllGather, outputBytes, cores)
               ? OutputSplit::TileParts
               : OutputSplit::None;
  if (splitsWholeTiles(profile, cores, K, N)) {
    const int64_t P = profile.partitions;
    const double share = static_cast<double>(kernels::ceilDiv(N / P, cores) * P) / static_cast<double>(N);
    if (dmaNs(profile, weightBytes * (1 - share)) > costCollectiveNs(profile, Collective::AllReduce, outputBytes, cores))
      return OutputSplit::WholeTilesSummed;
  }
  return OutputSplit::None;
}

/// Elementwise ops a split tensor passes through: each core computes its own tiles (emit_elementwise.cpp).
bool isElementwiseOnSplit(const Node &node) {
  static const std::set<std::string> kOps = {"Add", "Sub", "Mul", "Relu", "Sigmoid", "Tanh", "Gelu", "FusedElementwise"};
  return kOps.count(node.opType()) > 0;
}

/// Ops whose output is a view of their input's storage (emit_shape.cpp), so a split tensor stays split through them.
bool isViewOnSplit(const Node &node) {
  static const std::set<std::string> kOps = {"Reshape", "Transpose", "Split", "Squeeze", "Unsqueeze", "Flatten",
                                             "Identity"};
  return node.domain().empty() && kOps.count(node.opType()) > 0;
}

/// The first feature (last axis) a Slice of constant bounds and step 1 keeps of a value of `shape`: 0 when it slices
/// other axes only; nullopt for other bounds.
std::optional<int64_t> featureSliceStart(const Node &slice, const std::vector<int64_t> &shape) {
  auto ints = [&](size_t i) -> std::optional<std::vector<int64_t>> {
    const Value *v = slice.input(i);
    if (!v) return std::vector<int64_t>{};
    if (!v->hasInitializer()) return std::nullopt;
    std::vector<int64_t> values;
    for (int64_t k = 0; k < v->initializer().numel(); ++k) values.push_back(v->initializer().scalarAsInt64(k));
    return values;
  };
  const auto starts = ints(1), axes = ints(3), steps = ints(4);
  if (slice.inputs().size() < 3 || !starts || !axes || !steps) return std::nullopt;
  for (int64_t step : *steps)
    if (step != 1) return std::nullopt;
  const int64_t rank = static_cast<int64_t>(shape.size());
  for (size_t i = 0; i < starts->size(); ++i) {
    const int64_t axis = axes->empty() ? static_cast<int64_t>(i) : normalizeAxis((*axes)[i], rank);
    if (axis != rank - 1) continue;
    const int64_t start = (*starts)[i] < 0 ? (*starts)[i] + shape.back() : (*starts)[i];
    return std::clamp<int64_t>(start, 0, shape.back());
  }
  return 0;
}

/// Whether `y` may stay split over the cores: every reader is a matmul on the device that takes it as its left operand
/// with a constant weight it will split by rows (the row-parallel half of a column-parallel / row-parallel pair, which
/// needs one all_reduce instead of two gathers); an elementwise op of same-shaped activations and one-value
/// constants (an MLP's activation or SwiGLU between the pair), a view (the head split, a Split or Slice of the
/// features) or a rotary embedding whose own readers take its output split; or attention's Q, K or V when it computes
/// this core's heads only (attentionSplitsByHeads) and its output's readers take it split (the attention block's
/// projections). Returns what the split readers are, or nullopt.
struct SplitReaders {
  int64_t weights = 0;     // The row-parallel readers' weight elements, each reader once.
  int64_t widest = 0;      // Their widest output.
  bool attention = false;  // Attention reads it, computing this core's heads only.
};

/// readersTakeSharded below `y`, adding to `found`; `counted` holds the row-parallel readers already counted (a
/// fused QKV reaches its output projection through Q, K and V alike).
bool collectSplitReaders(const LoweringContext &ctx, const Value *y, int depth, int64_t offset, SplitReaders &found,
                         std::set<const Node *> &counted) {
  if (y->uses().empty() || ctx.isStageOutput(y)) return false;
  for (const Value *out : y->graph()->outputs())
    if (out == y) return false;
  for (const Use &use : y->uses()) {
    const Node *reader = use.user;
    if (!reader || !deviceUnsupportedReason(*reader, ctx.options()).empty()) return false;
    const std::string &op = reader->opType();
    if ((op == "MatMul" || op == "FusedMatMul") && use.inputIndex == 0) {
      const Value *w = reader->input(1);
      if (!w->hasInitializer() || w->initializer().rank() != 2) return false;
      const int64_t k = w->initializer().size(0), n = w->initializer().size(1);
      // Its rows split in the producer's whole tiles, tile t of them on core t % cores.
      if (k % ctx.profile().partitions != 0 || offset != 0) return false;
      if (counted.insert(reader).second) found.weights += k * n;
      found.widest = std::max(found.widest, n);
      continue;
    }
    if (depth >= 8) return false;
    // What the reader passes on, with the feature offset of y's features in it (a Split of the
    // features moves it; the head split's views keep it: head h of a part at `offset` is at offset + h * D).
    std::vector<std::pair<const Value *, int64_t>> passedOn;
    if (isViewOnSplit(*reader)) {
      const int64_t last = static_cast<int64_t>(staticShape(y).size()) - 1;
      const bool features = reader->opType() == "Split" && normalizeAxis(reader->attrInt("axis", 0), last + 1) == last;
      int64_t start = offset;
      for (const Value *out : reader->outputs()) {
        if (!out) continue;
        passedOn.emplace_back(out, start);
        if (features) start += staticShape(out).back();
      }
    } else if (op == "Slice" && reader->domain().empty()) {
      // A Slice of constant bounds (torch's in_proj split): of the features, it moves the offset.
      std::optional<int64_t> start = featureSliceStart(*reader, staticShape(y));
      if (!start) return false;
      passedOn.emplace_back(reader->output(0), offset + *start);
    } else if (reader->domain() == "tessel" && reader->opType() == "RotaryEmbedding" && use.inputIndex == 0) {
      passedOn.emplace_back(reader->output(0), offset);  // Per head, on each head's partitions (emit_attention.cpp).
    } else if (reader->domain() == "tessel" && reader->opType() == "Attention" && use.inputIndex <= 2) {
      if (!attentionSplitsByHeads(ctx.profile(), *reader, ctx.options().cores, static_cast<int>(use.inputIndex), offset))
        return false;
      found.attention = true;
      passedOn.emplace_back(reader->output(0), 0);
    } else {
      if (!isElementwiseOnSplit(*reader) || reader->outputs().size() != 1) return false;
      for (const Value *in : reader->inputs()) {
        if (!in) return false;
        if (in->hasInitializer() ? in->initializer().numel() != 1 : staticShape(in) != staticShape(y)) return false;
      }
      passedOn.emplace_back(reader->output(0), offset);
    }
    for (const auto &[out, at] : passedOn)
      if (!collectSplitReaders(ctx, out, depth + 1, at, found, counted)) return false;
  }
  return true;
}

std::optional<SplitReaders> readersTakeSharded(const LoweringContext &ctx, const Value *y) {
  SplitReaders found;
  std::set<const Node *> counted;
  if (!collectSplitReaders(ctx, y, 0, 0, found, counted)) return std::nullopt;
  return found;
}

Status lowerMatmul(LoweringContext &ctx, const Node &node) {
  tile::KernelBuilder &b = ctx.builder();
  const MatmulNode m = describeNode(node);
  const Value *y = node.output(0);
  const int64_t P = ctx.profile().partitions;

  // W as [K, N], scaled by alpha (Gemm).
  const std::vector<int64_t> wShape = {m.w->initializer().size(0), m.w->initializer().size(1)};
  const int64_t K = m.transB ? wShape[1] : wShape[0];
  const int64_t N = m.transB ? wShape[0] : wShape[1];
  // Read only when a weight block is made (not when the constant cache has them all).
  std::optional<std::vector<float>> raw;
  auto wAt = [&](int64_t k, int64_t n) {
    if (!raw) raw = ctx.constantFloats(m.w);
    return m.alpha * (*raw)[static_cast<size_t>(m.transB ? n * K + k : k * N + n)];
  };
  const std::string weights = weightsRecipe(m.w->initializer(), m.alpha, m.transB);

  const DType dtype = ctx.matmulDtype();

  TESSEL_ASSIGN_OR_RETURN(DeviceTensor a, ctx.standardAs(m.a, -1, dtype));
  if (a.shape.back() != K)
    return ctx.unsupported(node, fmt::format("K differs: A has {}, W has {}", a.shape.back(), K));
  const int64_t rows = a.freeSize;
  // Column-parallel sharding over the chip's cores: each core computes a part of the output features from its own
  // slice of W (so each core loads 1/cores of the weights), and one collective completes the output on every core,
  // unless the readers take it split.
  const int cores = ctx.options().cores;
  const int core = ctx.options().core;
  if (a.shardedCores > 1) return emitRowParallel(ctx, node, m, a, weights, wAt, K, N);
  // A column-parallel matmul whose readers take its output split pays for one all_reduce (theirs) instead of a
  // collective of its own; it is worth splitting when the two matmuls' saved weight DMA beats it. Through an
  // attention (a Q, K or V projection) it always is: the heads' work splits too, and the output projection would
  // need a collective of its own anyway; so every projection of one attention decides alike.
  OutputSplit split = OutputSplit::None;
  if (splitsWholeTiles(ctx.profile(), cores, K, N)) {
    if (auto readers = readersTakeSharded(ctx, y)) {
      const double saved = dmaNs(
          ctx.profile(), static_cast<double>((K * N + readers->weights) * dtypeSizeBytes(dtype)) * (cores - 1) / cores);
      if (readers->attention ||
          saved > costCollectiveNs(ctx.profile(), Collective::AllReduce, rows * readers->widest * 4, cores))
        split = OutputSplit::WholeTilesKept;
    }
  }
  if (split == OutputSplit::None) split = gatheredSplit(ctx.profile(), cores, K, N, rows, dtype);
  const bool wholeTiles = split == OutputSplit::WholeTilesKept || split == OutputSplit::WholeTilesSummed;
  const int64_t part = P / std::max(cores, 1);
  const int64_t partStart = split == OutputSplit::TileParts ? core * part : 0;
  TileView storage;
  const std::vector<int64_t> yShape = staticShape(y);
  DeviceTensor out = split == OutputSplit::TileParts || split == OutputSplit::WholeTilesSummed
                         ? allocateStandardInOneTile(b, y->name(), yShape, ctx.activationDtype(), -1, &storage)
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

  // This core's output features as local columns of the family's M: all of them; when split in whole tiles, every
  // cores-th 128-feature tile (a row-parallel reader splits its K the same way); when split in tile parts, its part of
  // every tile.
  std::vector<int64_t> ownedTiles;
  for (int64_t t = 0; t < kernels::ceilDiv(N, P); ++t)
    if (!wholeTiles || t % cores == core) ownedTiles.push_back(t);
  std::function<int64_t(int64_t)> featureOf = [](int64_t c) { return c; };
  int64_t columns = N, mTileColumns = 0;
  if (wholeTiles) {
    columns = static_cast<int64_t>(ownedTiles.size()) * P;
    featureOf = [&](int64_t c) { return ownedTiles[static_cast<size_t>(c / P)] * P + c % P; };
  } else if (split == OutputSplit::TileParts) {
    columns = N / P * part;
    mTileColumns = part;
    featureOf = [&](int64_t c) { return c / part * P + partStart + c % part; };
  }
  std::vector<int64_t> kTileStarts;
  for (const Span &k : splitRange(K, P)) kTileStarts.push_back(k.start);
  kernels::MatmulProblem problem = loweringProblem(columns, rows, K, dtype, out.dtype, mTileColumns);
  // A split output's m-block takes this core's tiles among the features an unsplit m-block covers,
  // so the cores walk the weights in step (wider blocks measured up to 2.6% slower on GPT-2).
  if (wholeTiles) problem.maxGroupTiles = std::max<int64_t>(1, ctx.profile().psum.banks / 2 / cores);
  // The other cores' tiles are zeros here, so the all_reduce's sum over the cores is the whole output on each: one
  // memset of the storage, which this core's tiles then overwrite.
  if (split == OutputSplit::WholeTilesSummed) b.memset(storage, 0.0f);
  if (columns > 0)
    lowerOnFamily(ctx, node, problem, featureOf, kTileStarts, weights, wAt, a, out, bias, residual,
                  node.opType() == "FusedMatMul" ? epilogueOf(node) : Epilogue{});
  switch (split) {
    case OutputSplit::None: break;
    case OutputSplit::TileParts: b.allGather(storage, cores); break;
    case OutputSplit::WholeTilesKept: out.shardedCores = cores; break;
    case OutputSplit::WholeTilesSummed: b.allReduce(storage, AluOp::Add, cores); break;
  }
  ctx.define(y, out);
  return Status::success();
}

}  // namespace

std::vector<OpLowering> matmulLowerings() {
  std::vector<OpLowering> v;
  for (auto [domain, op] : {std::pair{"", "MatMul"}, std::pair{"", "Gemm"}, std::pair{"tessel", "FusedMatMul"}})
    v.push_back(OpLowering{domain, op, checkMatmul, lowerMatmul});
  return v;
}

}  // namespace tessel::nc::compiler
