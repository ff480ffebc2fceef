// Attention (tessel Attention: Y = softmax(scale * Q K^T + Mask [+ causal]) V) and ONNX Softmax on the
// accelerator, with the activations staying in SBUF.
//
// Attention is the attention family's heads form (kernels/attention/heads.h, which says how it runs):
// Q, K and V arrive with their features on partitions: after the head split (Reshape + Transpose, free
// views of a matmul's output) head h of Q is the partition slice [h * D, h * D + D) of the feature
// tiles, tokens on the free dim, i.e. Q_h^T [D, S]. Here are the node's checks and the glue from its
// activations to the kernel's operands. Keys beyond what the heads form holds in SBUF (kHeadsMaxKeys)
// go to the family's flash form (kernels/attention/flash.h), which reads Q, K and V from HBM, when
// the node has its shape (no mask, Sq = Sk, no grouped-query heads, D = Dv).
//
// Softmax runs along the free dim of a standard form whose partition axis is another axis: max (DVE),
// exp (ACT), sums, reciprocal and scaling, with per-partition scalars when each partition holds one row.
// RotaryEmbedding (the RoPE of Q and K before attention) and KvCacheUpdate (the cache written in
// place) are described at their emitters.
#include <algorithm>
#include <cmath>
#include <optional>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "targets/nc/compiler/lowering.h"
#include "targets/nc/kernels/attention/flash.h"
#include "targets/nc/kernels/attention/heads.h"
#include "targets/nc/kernels/softmax.h"
#include "targets/nc/kernels/tiling.h"
#include "targets/nc/tile/tile_ring.h"

namespace tessel::nc::compiler {
namespace {

using kernels::Span;
using kernels::splitRange;
using tile::KernelBuilder;
using tile::TileRing;
using tile::TileView;

/// Partitions of both nc profiles: D and Dv are partition counts (D the contraction of Q K^T). The
/// emitter checks the profile again; the node check has no profile.
constexpr int64_t kMaxHeadDim = 128;

std::vector<int64_t> sizesOf(const Value *value) { return value->type().shape().sizes().value_or(std::vector<int64_t>{}); }

// ---- Attention --------------------------------------------------------------------------------------

kernels::HeadsProblem describeAttention(const Node &node) {
  kernels::HeadsProblem s;
  const std::vector<int64_t> q = sizesOf(node.input(0)), k = sizesOf(node.input(1)), v = sizesOf(node.input(2));
  if (q.size() != 4 || k.size() != 4 || v.size() != 4) return s;
  s.B = q[0], s.H = q[1], s.Hkv = k[1], s.Sq = q[2], s.D = q[3], s.Sk = k[2], s.Dv = v[3];
  const float scale = node.attrFloat("scale", 0.0f);
  s.scale = scale != 0.0f ? scale : static_cast<float>(1.0 / std::sqrt(static_cast<double>(s.D)));
  s.causal = node.attrInt("causal", 0) != 0;
  if (const Value *mask = node.input(3)) {
    std::vector<int64_t> m = sizesOf(mask);
    if (m.size() <= 4) {
      s.mask.assign(4 - m.size(), 1);
      s.mask.insert(s.mask.end(), m.begin(), m.end());
    }
  }
  return s;
}

/// Why the flash form (kernels/attention/flash.h: one query per key, as many K/V heads as query heads,
/// D = Dv, no mask) cannot run the node; empty when it can.
std::string flashFormRefusal(const Node &node, const kernels::HeadsProblem &s) {
  if (node.input(3)) return "the flash form takes no mask";
  if (s.Sq != s.Sk) return fmt::format("the flash form needs as many queries as keys (got {})", s.Sq);
  if (s.Hkv != s.H) return "the flash form takes no grouped-query heads";
  if (s.D != s.Dv) return fmt::format("the flash form needs D = Dv (got {} and {})", s.D, s.Dv);
  return "";
}

/// Why tensors of `node` held head-major (each head's X features on partitions, its tokens on the
/// free dim: a block holds B * H * S values per partition at most) plus `extraBytes` of per-node
/// temporaries cannot fit SBUF together.
std::string headMajorSbufReason(const Node &node, const std::vector<const Value *> &values, int64_t extraBytes,
                                const LoweringOptions &options) {
  if (!options.profile) return "";
  int64_t bytes = extraBytes;
  for (const Value *v : values) {
    const std::vector<int64_t> sizes = sizesOf(v);
    if (sizes.size() == 4) bytes += f32BlockBytes(sizes, 3);
  }
  if (bytes <= options.profile->sbuf.bytesPerPartition) return "";
  return fmt::format("{} holds its tensors head-major, {} bytes per partition of SBUF; {} has {}", node.opType(), bytes,
                     options.profile->name, options.profile->sbuf.bytesPerPartition);
}

std::string checkAttention(const Node &node, const LoweringOptions &options) {
  const std::vector<int64_t> q = sizesOf(node.input(0)), k = sizesOf(node.input(1)), v = sizesOf(node.input(2));
  if (q.size() != 4 || k.size() != 4 || v.size() != 4) return "Q, K and V are not all of rank 4";
  const kernels::HeadsProblem s = describeAttention(node);
  if (k[0] != s.B || v[0] != s.B || s.Hkv <= 0 || s.H % s.Hkv != 0 || v[1] != s.Hkv || k[3] != s.D || v[2] != s.Sk)
    return fmt::format("Q {}, K {} and V {} do not agree", fmt::join(q, "x"), fmt::join(k, "x"), fmt::join(v, "x"));
  if (s.D > kMaxHeadDim || s.Dv > kMaxHeadDim)
    return fmt::format("head dims D = {}, Dv = {}; at most {} (they lie on partitions)", s.D, s.Dv, kMaxHeadDim);
  if (s.Sk > kernels::kHeadsMaxKeys) {
    const std::string refusal = flashFormRefusal(node, s);
    if (!refusal.empty())
      return fmt::format("{} keys, more than the heads form's {}, and {}", s.Sk, kernels::kHeadsMaxKeys, refusal);
  }
  if (s.causal && s.Sq > s.Sk) return fmt::format("causal with more queries ({}) than keys ({})", s.Sq, s.Sk);
  if (node.input(3)) {
    const std::vector<int64_t> full = {s.B, s.H, s.Sq, s.Sk};
    if (s.mask.size() != 4) return "the mask has rank above 4";
    for (size_t i = 0; i < 4; ++i)
      if (s.mask[i] != 1 && s.mask[i] != full[i])
        return fmt::format("the mask {} does not broadcast to {}", fmt::join(sizesOf(node.input(3)), "x"),
                           fmt::join(full, "x"));
  }
  // The heads form holds Q, K, V and the output head-major, and one query tile's scores and
  // probabilities (6 bytes per key). The flash form streams Q, K and V from HBM (an f32 one cast to
  // bf16 through SBUF, one at a time) and loads its output back.
  if (s.Sk > kernels::kHeadsMaxKeys) return headMajorSbufReason(node, {node.input(0), node.output(0)}, 0, options);
  return headMajorSbufReason(node, {node.input(0), node.input(1), node.input(2), node.output(0)}, 6 * s.Sk, options);
}

/// Q, K or V [B, H, S, X] as per-head matrices [X, S]: X on partitions, tokens on the free dim.
struct HeadMatrices {
  DeviceTensor tensor;

  /// Tokens [start, start + count) of head (b, h): an [X, count] view.
  TileView head(int64_t b, int64_t h, int64_t start, int64_t count) const {
    const std::vector<AxisPlacement> &a = tensor.axes;
    const int64_t partition = tensor.partitionBase + b * a[0].partitionStride + h * a[1].partitionStride;
    const int64_t offset = tensor.freeBase + b * a[0].freeStride + h * a[1].freeStride + start * a[2].freeStride;
    return tensor.partitions(partition, tensor.shape[3])
        .pattern(offset, {FreeDim{a[2].freeStride, static_cast<uint32_t>(count)}});
  }
};

/// True when every head of `t` [B, H, S, X] is an aligned partition slice of one block (rule T6) with
/// its tokens on the free dim: what head() reads without a relayout.
bool headsArePartitionSlices(const DeviceTensor &t, int64_t partitions) {
  if (t.rank() != 4) return false;
  const std::vector<AxisPlacement> &a = t.axes;
  const int64_t X = t.shape[3];
  if (X > 1 && (a[3].partitionStride != 1 || a[3].freeStride != 0)) return false;
  if (t.shape[2] > 1 && (a[2].partitionStride != 0 || std::abs(a[2].freeStride) > INT16_MAX)) return false;
  const int64_t align = kernels::partitionAlignment(partitions, X);
  for (int64_t b = 0; b < t.shape[0]; ++b) {
    for (int64_t h = 0; h < t.shape[1]; ++h) {
      const int64_t start = t.partitionBase + b * a[0].partitionStride + h * a[1].partitionStride;
      if (start < 0 || start + X > t.partitionExtent()) return false;
      if (start % partitions % align != 0 || start % partitions + X > partitions) return false;
    }
  }
  return true;
}

/// `value` ([B, H, S, X]) with its heads as partition slices: as recorded when it already is, else in
/// standard form with X on partitions.
Expected<DeviceTensor> headMajor(LoweringContext &ctx, const Value *value) {
  TESSEL_ASSIGN_OR_RETURN(DeviceTensor t, ctx.activation(value));
  if (headsArePartitionSlices(t, ctx.profile().partitions)) return t;
  return ctx.standard(value, 3);
}

/// A copy of `t`'s storage in `dtype`, times `scale` (the same placement, new tiles); of a tensor split
/// over the cores, this core's blocks (`core`).
DeviceTensor scaledCopy(KernelBuilder &b, const DeviceTensor &t, DType dtype, float scale, const std::string &name,
                        int core) {
  if (t.dtype == dtype && scale == 1.0f) return t;
  DeviceTensor copy = t;
  copy.dtype = dtype;
  for (size_t k = 0; k < copy.blocks.size(); ++k) {
    TileView &block = copy.blocks[k];
    TileView tile = b.sbuf(name, dtype, block.partitions(), {block.freeSize()});
    if (t.shardedCores == 1 || static_cast<int>(k) % t.shardedCores == core) {
      if (scale == 1.0f) b.copy(tile, block);
      else b.tensorScalar(tile, block, AluOp::Multiply, scale);
    }
    block = tile;
  }
  return copy;
}

/// The 128-feature tile (the producer's block) holding head h of a head-major tensor.
int64_t headTile(const DeviceTensor &t, int64_t h, int64_t partitions) {
  return (t.partitionBase + h * t.axes[1].partitionStride) / partitions;
}

/// Tensor parallelism by heads: with Q split over the cores in 128-feature tiles, this core computes the
/// heads of its tiles, when each one's output lands in a tile it owns (the packed output) and its K and V
/// heads are here (whole, or split the same way). Returns the heads' groups of `plan` to compute and
/// whether the output is split; K or V split another way is gathered first, and so is Q when its heads
/// do not line up with their outputs.
Expected<std::pair<std::vector<std::vector<int64_t>>, bool>> headsOfThisCore(LoweringContext &ctx, const Node &node,
                                                                             const kernels::HeadsProblem &problem,
                                                                             const kernels::HeadsPlan &plan,
                                                                             DeviceTensor &q, DeviceTensor &k,
                                                                             DeviceTensor &v) {
  const int64_t P = ctx.profile().partitions;
  const int core = ctx.options().core, cores = q.shardedCores;
  auto owned = [&](int64_t tile, int splitCores) { return splitCores == 1 || tile % splitCores == core; };
  bool split = cores > 1 && attentionSplitsByHeads(ctx.profile(), node, cores);
  for (int64_t h = 0; split && h < problem.H; ++h)
    split = (headTile(q, h, P) - h * problem.Dv / P) % cores == 0;
  if (!split && q.shardedCores > 1) {
    TESSEL_ASSIGN_OR_RETURN(q, ctx.unsplit(node.input(0)));
  }
  const int64_t perKv = problem.H / problem.Hkv;
  // Every core decides alike (their collectives must match): K and V are here when whole, or split
  // so that each query head's K/V head lies on the core of the query head.
  for (auto [t, input] : {std::pair{&k, 1}, std::pair{&v, 2}}) {
    bool here = t->shardedCores == 1 || (split && t->shardedCores == cores);
    for (int64_t h = 0; t->shardedCores > 1 && here && h < problem.H; ++h)
      here = headTile(q, h, P) % cores == headTile(*t, h / perKv, P) % cores;
    if (!here) {
      TESSEL_ASSIGN_OR_RETURN(*t, ctx.unsplit(node.input(static_cast<size_t>(input))));
    }
  }
  std::vector<std::vector<int64_t>> groups;
  for (const std::vector<int64_t> &group : plan.groups)
    if (!split || owned(headTile(q, group.front(), P), cores)) groups.push_back(group);
  return std::make_pair(std::move(groups), split);
}

/// `value` [B, H, S, D] row-major in HBM as bf16, the flash form's dtype: its own HBM form when that
/// is bf16, else a bf16 copy through SBUF stored to scratch.
Expected<tile::HbmView> bf16Hbm(LoweringContext &ctx, const Value *value, const std::string &name) {
  if (ctx.activationDtype() == DType::BF16) {
    TESSEL_ASSIGN_OR_RETURN(const tile::HbmView own, ctx.hbmOf(value));
    if (own.dtype() == DType::BF16) return own;  // Else a segment input fed in another dtype.
  }
  TESSEL_ASSIGN_OR_RETURN(DeviceTensor t, ctx.standardAs(value, 3, DType::BF16));
  const tile::HbmView scratch = ctx.builder().output(name, DType::BF16, t.shape);
  TESSEL_RETURN_IF_ERROR(storeToHbm(ctx, t, scratch));
  return scratch;
}

/// The node as the attention family's flash form, for keys the heads form cannot hold: Q, K and V in
/// HBM as bf16, the B * H heads one after another, the output stored to scratch and loaded back in
/// standard form with Dv on partitions.
Status emitFlashForm(LoweringContext &ctx, const Node &node, const kernels::HeadsProblem &problem) {
  KernelBuilder &b = ctx.builder();
  const std::string scratch = fmt::format("scratch/attention#{}/", b.kernel().tensors.size());
  const int64_t heads = problem.B * problem.H, S = problem.Sk, D = problem.D;
  // [B, H, S, D] row-major as [B * H, S, D].
  auto byHead = [&](const tile::HbmView &x) {
    return x.pattern(0, {FreeDim{S * D, static_cast<uint32_t>(heads)}, FreeDim{D, static_cast<uint32_t>(S)},
                         FreeDim{1, static_cast<uint32_t>(D)}});
  };
  TESSEL_ASSIGN_OR_RETURN(const tile::HbmView q, bf16Hbm(ctx, node.input(0), scratch + "q"));
  TESSEL_ASSIGN_OR_RETURN(const tile::HbmView k, bf16Hbm(ctx, node.input(1), scratch + "k"));
  TESSEL_ASSIGN_OR_RETURN(const tile::HbmView v, bf16Hbm(ctx, node.input(2), scratch + "v"));
  const std::vector<int64_t> shape = {problem.B, problem.H, S, D};
  const tile::HbmView o = b.output(scratch + "y", DType::BF16, shape);
  kernels::FlashProblem flash;
  flash.H = heads, flash.S = S, flash.D = D;
  flash.scale = problem.scale;
  flash.causal = problem.causal;
  if (Status emitted = kernels::emitFlashAttention(b, flash, {byHead(q), byHead(k), byHead(v), byHead(o)});
      !emitted.ok())
    return ctx.unsupported(node, emitted.diag().message);
  DeviceTensor y = ctx.loadStandard(node.name() + "/y", o, shape, 3, DType::BF16);
  if (ctx.activationDtype() != DType::BF16) {
    DeviceTensor cast = ctx.allocate(node.output(0), 3);
    for (size_t i = 0; i < cast.blocks.size(); ++i) b.copy(cast.blocks[i], y.blocks[i]);
    y = cast;
  }
  ctx.define(node.output(0), y);
  return Status::success();
}

/// The glue from the node's activations to the attention family's heads form (kernels/attention/
/// heads.h): Q, K, V head-major (Q scaled and K cast to the matmul dtype), the output allocated as the
/// plan groups the heads: packed, the standard form of [B, Sq, H * Dv] with the features on
/// partitions seen as [B, H, Sq, Dv], so the Transpose + Reshape after it are free views; else
/// [B, H, Sq, Dv] with Dv on partitions.
Status emitAttention(LoweringContext &ctx, const Node &node) {
  const MachineProfile &profile = ctx.profile();
  const kernels::HeadsProblem problem = describeAttention(node);
  const int64_t maxDim = std::min({profile.partitions, profile.pe.rows, profile.pe.cols});
  if (problem.D > maxDim || problem.Dv > maxDim)
    return ctx.unsupported(node, fmt::format("head dims D = {}, Dv = {}; at most {} on {}", problem.D, problem.Dv,
                                             maxDim, profile.name));
  if (problem.Sk > kernels::kHeadsMaxKeys) return emitFlashForm(ctx, node, problem);
  KernelBuilder &b = ctx.builder();
  const DType mm = ctx.matmulDtype();
  auto name = [&](const std::string &what) { return node.name() + "/" + what; };
  TESSEL_ASSIGN_OR_RETURN(DeviceTensor q, headMajor(ctx, node.input(0)));
  TESSEL_ASSIGN_OR_RETURN(DeviceTensor k, headMajor(ctx, node.input(1)));
  TESSEL_ASSIGN_OR_RETURN(DeviceTensor v, headMajor(ctx, node.input(2)));
  kernels::HeadsPlan plan = kernels::planHeads(profile, problem, mm, v.dtype);
  TESSEL_ASSIGN_OR_RETURN(auto heads, headsOfThisCore(ctx, node, problem, plan, q, k, v));
  plan.groups = std::move(heads.first);
  // The scale rides on Q's cast to the matmul dtype, so the mask adds to the scaled scores in PSUM.
  const int core = ctx.options().core;
  const HeadMatrices qHeads{scaledCopy(b, q, mm, problem.scale, name("q"), core)};
  const HeadMatrices kHeads{scaledCopy(b, k, mm, 1.0f, name("k"), core)};
  const HeadMatrices vHeads{v};  // Transposed per head by PE, which casts on the eviction.
  kernels::HeadsOperands operands;
  if (node.input(3)) {
    TESSEL_ASSIGN_OR_RETURN(operands.mask, ctx.hbmOf(node.input(3)));
  }
  const int64_t B = problem.B, H = problem.H, Sq = problem.Sq, Dv = problem.Dv;
  DeviceTensor output, storage;
  if (plan.packedOutput) {
    storage = allocateStandard(b, name("y"), {B, Sq, H * Dv}, ctx.activationDtype(), 2);
    output = transposeView(*reshapeView(storage, {B, Sq, H, Dv}), {0, 2, 1, 3});
  } else {
    storage = output = allocateStandard(b, name("y"), {B, H, Sq, Dv}, ctx.activationDtype(), 3);
  }
  auto headsOf = [](const HeadMatrices &m) {
    return [&m](int64_t batch, int64_t h, int64_t start, int64_t count) { return m.head(batch, h, start, count); };
  };
  operands.q = headsOf(qHeads);
  operands.k = headsOf(kHeads);
  operands.v = headsOf(vHeads);
  operands.output = [&](int64_t batch, size_t g) {
    const std::vector<int64_t> &group = plan.groups[g];
    const int64_t rows = static_cast<int64_t>(group.size()) * Dv;
    return plan.packedOutput ? storage.partitions(group.front() * Dv, rows).cols(batch * Sq, Sq)
                             : storage.partitions(0, rows).cols((batch * H + group.front()) * Sq, Sq);
  };
  operands.ones = [&] { return ctx.constantTile(1.0f, mm); };
  operands.tilePrefix = node.name() + "/";
  kernels::emitHeadsAttention(b, problem, plan, operands);
  if (heads.second) output.shardedCores = q.shardedCores;
  ctx.define(node.output(0), output);
  return Status::success();
}

}  // namespace

bool attentionSplitsByHeads(const MachineProfile &profile, const Node &node, int cores, int input, int64_t offset) {
  const kernels::HeadsProblem s = describeAttention(node);
  const int64_t P = profile.partitions;
  if (cores < 2 || s.H <= 0 || s.Hkv <= 0 || s.D != s.Dv || s.Sk > kernels::kHeadsMaxKeys ||
      !kernels::headsPackIntoBlocks(P, s.H, s.Dv) || !checkAttention(node, {}).empty() || offset % s.D != 0)
    return false;
  // Query head h's output is in tile h * Dv / P; the head of this input that it reads, at `offset`.
  for (int64_t h = 0; h < s.H; ++h) {
    const int64_t head = input == 0 ? h : h / (s.H / s.Hkv);
    if ((offset + head * s.D) / P % cores != h * s.Dv / P % cores) return false;
  }
  return true;
}

namespace {

// ---- RotaryEmbedding --------------------------------------------------------------------------------
//
// Y = X * Cos + rotate_half(X) * Sin with X [B, H, S, D] in head-major form (each head a D-partition
// slice, tokens on the free dim, as Q and K come out of their projections). rotate_half moves
// features across partitions, which only PE does: rotate_half(X) = R^T @ X with R the block-diagonal
// [P, P] matrix of one signed permutation per D-partition head slot (R[k, p] = -1 where k = p + D/2,
// +1 where k = p - D/2, within a slot), made once per node from the identity's columns. Per batch
// and run of heads on consecutive partitions of one block: one matmul into PSUM (fp32 operands: the
// rotation is exact), then X * Cos, (R^T X) * Sin and their sum on DVE. Cos and Sin are loaded once
// per batch as [D, S] transposes, one DMA per head slot, so every slot sees its features' rows.

/// X's shape and the tables' padded to rank 4 ([Bt, 1, St, D], Bt in {1, B}, St in {1, S}).
struct RotaryShape {
  int64_t B = 0, H = 0, S = 0, D = 0;
  std::vector<int64_t> table;
};

RotaryShape describeRotary(const Node &node) {
  RotaryShape r;
  const std::vector<int64_t> x = sizesOf(node.input(0)), t = sizesOf(node.input(1));
  if (x.size() != 4 || t.size() > 4 || t.empty()) return r;
  r.B = x[0], r.H = x[1], r.S = x[2], r.D = x[3];
  r.table.assign(4 - t.size(), 1);
  r.table.insert(r.table.end(), t.begin(), t.end());
  return r;
}

std::string checkRotaryEmbedding(const Node &node, const LoweringOptions &options) {
  const std::vector<int64_t> x = sizesOf(node.input(0));
  if (x.size() != 4) return "X is not of rank 4 ([B, H, S, D])";
  if (sizesOf(node.input(1)) != sizesOf(node.input(2))) return "Cos and Sin differ in shape";
  const RotaryShape r = describeRotary(node);
  if (r.table.size() != 4) return "the tables have rank above 4";
  if (r.D % 2 != 0 || r.D > kMaxHeadDim || kMaxHeadDim % r.D != 0)
    return fmt::format("head dim {}; it must be even and divide {} (heads lie on partitions)", r.D, kMaxHeadDim);
  if (r.table[3] != r.D || r.table[1] != 1 || (r.table[0] != 1 && r.table[0] != r.B) ||
      (r.table[2] != 1 && r.table[2] != r.S))
    return fmt::format("tables of {}; expected [B or 1, 1, S or 1, {}]", fmt::join(sizesOf(node.input(1)), "x"), r.D);
  // Cos and Sin load as [D, S] transposes.
  return headMajorSbufReason(node, {node.input(0), node.output(0)}, 2 * r.S * dtypeSizeBytes(DType::F32), options);
}

Status emitRotaryEmbedding(LoweringContext &ctx, const Node &node) {
  KernelBuilder &b = ctx.builder();
  const RotaryShape r = describeRotary(node);
  const int64_t P = ctx.profile().partitions, half = r.D / 2;
  if (P % r.D != 0) return ctx.unsupported(node, fmt::format("head dim {} does not divide {} partitions", r.D, P));
  auto name = [&](const std::string &what) { return node.name() + "/" + what; };
  TESSEL_ASSIGN_OR_RETURN(DeviceTensor x, headMajor(ctx, node.input(0)));
  TESSEL_ASSIGN_OR_RETURN(tile::HbmView cosines, ctx.hbmOf(node.input(1)));
  TESSEL_ASSIGN_OR_RETURN(tile::HbmView sines, ctx.hbmOf(node.input(2)));
  DeviceTensor y = x;  // X's placement, new tiles.
  for (TileView &block : y.blocks) block = b.sbuf(name("y"), x.dtype, block.partitions(), {block.freeSize()});

  // Runs of heads on consecutive partitions of one block, at one free offset, per batch.
  const std::vector<AxisPlacement> &a = x.axes;
  struct HeadRun {
    int64_t batch, start, rows, offset;
  };
  std::vector<HeadRun> runs;
  int64_t slots = 1;  // Head slots the tables and the rotation cover: up to the highest run's end.
  for (int64_t bb = 0; bb < r.B; ++bb) {
    auto partitionOf = [&](int64_t h) {
      return x.partitionBase + bb * a[0].partitionStride + h * a[1].partitionStride;
    };
    auto offsetOf = [&](int64_t h) { return x.freeBase + bb * a[0].freeStride + h * a[1].freeStride; };
    for (int64_t h0 = 0; h0 < r.H;) {
      const int64_t start = partitionOf(h0);
      int64_t count = 1;
      while (h0 + count < r.H && partitionOf(h0 + count) == start + count * r.D &&
             offsetOf(h0 + count) == offsetOf(h0) && start % P + (count + 1) * r.D <= P)
        ++count;
      runs.push_back(HeadRun{bb, start, count * r.D, offsetOf(h0)});
      slots = std::max(slots, (start % P) / r.D + count);
      h0 += count;
    }
  }

  const TileView identity = ctx.identity(x.dtype);
  TileView rotation = b.sbuf(name("rotate_half"), x.dtype, P, {slots * r.D});
  for (int64_t j = 0; j < slots; ++j) {
    b.tensorScalar(rotation.cols(j * r.D, half), identity.cols(j * r.D + half, half), AluOp::Multiply, -1.0f);
    b.copy(rotation.cols(j * r.D + half, half), identity.cols(j * r.D, half));
  }
  const int64_t tokenStride = a[2].freeStride;
  const int64_t chunk = std::min(ctx.profile().psum.bankFp32Elements, r.S);
  TileRing rotated(MemSpace::PSUM, name("rotated"), DType::F32, P, std::vector<int64_t>{chunk}, 2);
  TileRing products(MemSpace::SBUF, name("rotated_sin"), DType::F32, P, std::vector<int64_t>{chunk}, 2);
  auto loadTable = [&](const tile::HbmView &table, int64_t batch, const std::string &what) {
    TileView t = b.sbuf(name(what), DType::F32, slots * r.D, {r.S});
    const int64_t offset = r.table[0] > 1 ? batch * r.table[2] * r.D : 0;
    const FreeDim tokens{r.table[2] > 1 ? r.D : 0, static_cast<uint32_t>(r.S)};
    for (int64_t j = 0; j < slots; ++j)
      b.load(t.partitionSlice(j * r.D, r.D), table.pattern(offset, {FreeDim{1, static_cast<uint32_t>(r.D)}, tokens}));
    return t;
  };
  std::optional<TileView> cosT, sinT;
  int64_t tablesBatch = -1;
  for (const HeadRun &run : runs) {
    // X split over the cores by 128-feature tiles (Q heads for an attention split by heads): this core's.
    if (x.shardedCores > 1 && run.start / P % x.shardedCores != ctx.options().core) continue;
    if (!cosT || (r.table[0] > 1 && run.batch != tablesBatch)) {
      cosT = loadTable(cosines, run.batch, "cos");
      sinT = loadTable(sines, run.batch, "sin");
      tablesBatch = run.batch;
    }
    const int64_t local = run.start % P;
    for (const Span &tokens : splitRange(r.S, chunk)) {
      const std::vector<FreeDim> pattern = {FreeDim{tokenStride, static_cast<uint32_t>(tokens.count)}};
      const int64_t offset = run.offset + tokens.start * tokenStride;
      const TileView xv = x.partitions(run.start, run.rows).pattern(offset, pattern);
      const TileView yv = y.partitions(run.start, run.rows).pattern(offset, pattern);
      const TileView ps = rotated.next(b).partitionSlice(local, run.rows).cols(0, tokens.count);
      const TileView product = products.next(b).partitionSlice(local, run.rows).cols(0, tokens.count);
      b.matmul(ps, rotation.partitionSlice(local, run.rows).cols(local, run.rows), xv, /*accumulate=*/false);
      b.tensorTensor(yv, xv, cosT->partitionSlice(local, run.rows).cols(tokens.start, tokens.count), AluOp::Multiply);
      b.tensorTensor(product, ps, sinT->partitionSlice(local, run.rows).cols(tokens.start, tokens.count),
                     AluOp::Multiply);
      b.tensorTensor(yv, yv, product, AluOp::Add);
    }
  }
  ctx.define(node.output(0), y);
  return Status::success();
}

// ---- Softmax ----------------------------------------------------------------------------------------

/// The normalised axis, when opset 13's single axis (default -1) and the older coercion to 2-D at
/// `axis` (default 1) pick the same elements: every other dim of the coerced row is 1. The node does
/// not carry its opset.
std::optional<int64_t> softmaxAxis(const Node &node) {
  const std::vector<int64_t> x = sizesOf(node.input(0));
  const int64_t rank = static_cast<int64_t>(x.size());
  if (rank < 2) return std::nullopt;
  const int64_t axis = normalizeAxis(node.attrInt("axis", -1), rank);
  const int64_t coercedFrom = normalizeAxis(node.attrInt("axis", 1), rank);
  if (axis < 0 || axis >= rank || coercedFrom < 0 || coercedFrom > axis) return std::nullopt;
  for (int64_t d = coercedFrom; d < rank; ++d)
    if (d != axis && x[static_cast<size_t>(d)] != 1) return std::nullopt;
  return axis;
}

std::string checkSoftmax(const Node &node, const LoweringOptions &) {
  const std::vector<int64_t> x = sizesOf(node.input(0));
  if (x.size() < 2) return "Softmax of a tensor of rank below 2";
  const std::optional<int64_t> axis = softmaxAxis(node);
  if (!axis)
    return "Softmax over an axis followed by dims above 1: its meaning depends on the opset (coerced to 2-D before "
           "opset 13), which the node does not carry";
  if (x[static_cast<size_t>(*axis)] > kernels::kSoftmaxChunkElements)
    return fmt::format("Softmax over {} elements; at most {}", x[static_cast<size_t>(*axis)],
                       kernels::kSoftmaxChunkElements);
  return "";
}

Status emitSoftmax(LoweringContext &ctx, const Node &node) {
  KernelBuilder &b = ctx.builder();
  const std::vector<int64_t> shape = sizesOf(node.input(0));
  const int64_t rank = static_cast<int64_t>(shape.size());
  const int64_t axis = *softmaxAxis(node);
  // Another axis on partitions: the one already there, else the largest.
  TESSEL_ASSIGN_OR_RETURN(DeviceTensor recorded, ctx.activation(node.input(0)));
  int64_t partitionAxis = recorded.partitionAxis();
  if (partitionAxis == axis || partitionAxis < 0 || !recorded.isStandard(partitionAxis)) {
    partitionAxis = axis == 0 ? 1 : 0;
    for (int64_t d = 0; d < rank; ++d)
      if (d != axis && shape[static_cast<size_t>(d)] > shape[static_cast<size_t>(partitionAxis)]) partitionAxis = d;
  }
  TESSEL_ASSIGN_OR_RETURN(DeviceTensor x, ctx.standard(node.input(0), partitionAxis));
  DeviceTensor y = ctx.allocate(node.output(0), partitionAxis);
  // The softmax axis is the innermost free axis with size above 1 (the ones after it are 1): rows of
  // `length` contiguous elements.
  const int64_t length = shape[static_cast<size_t>(axis)];
  const int64_t rows = x.freeSize / length;
  const int64_t rowsPerChunk = std::max<int64_t>(1, kernels::kSoftmaxChunkElements / length);
  for (size_t blk = 0; blk < x.blocks.size(); ++blk) {
    for (const Span &chunk : splitRange(rows, rowsPerChunk)) {
      const TileView src = x.blocks[blk].cols(chunk.start * length, chunk.count * length);
      const TileView dst = y.blocks[blk].cols(chunk.start * length, chunk.count * length);
      kernels::emitSoftmaxRows(b, node.name(), dst, src, chunk.count, length);
    }
  }
  ctx.define(node.output(0), y);
  return Status::success();
}

}  // namespace

// KvCacheUpdate: the cache is the program's input buffer, updated in place, so the output stores
// nothing more. The new rows of each head ([D, N] on partitions, as attention reads them) turn to
// [N, D] by PE transposes side by side in one PSUM bank, then one DMA per group of heads writes them
// at positions [position, position + N) of the heads' rows in HBM: the launch register (the
// position the host passes when it starts the program) places the DMA's HBM window.
std::string checkKvCacheUpdate(const Node &node, const LoweringOptions &) {
  const Value *cache = node.input(0), *out = node.output(0);
  if (!cache->isGraphInput() || cache->hasInitializer())
    return "the cache is not a graph input; only a fed buffer is written in place";
  const std::vector<Value *> &outputs = node.graph()->outputs();
  if (!out->uses().empty() || std::find(outputs.begin(), outputs.end(), out) == outputs.end())
    return "the updated cache is read inside the graph; only a cache that is a graph output is written in place";
  const std::vector<int64_t> c = sizesOf(cache), n = sizesOf(node.input(1));
  if (c.size() != 4 || n.size() != 4 || c[0] != n[0] || c[1] != n[1] || c[3] != n[3] || n[2] > c[2])
    return fmt::format("Cache {} and New {} do not form [B,H,C,D] and [B,H,N,D] with N <= C", fmt::join(c, "x"),
                       fmt::join(n, "x"));
  if (c[3] > kMaxHeadDim) return fmt::format("head dim {}; at most {} (heads lie on partitions)", c[3], kMaxHeadDim);
  return "";
}

Status emitKvCacheUpdate(LoweringContext &ctx, const Node &node) {
  KernelBuilder &b = ctx.builder();
  const std::vector<int64_t> c = sizesOf(node.input(0));
  const int64_t B = c[0], H = c[1], C = c[2], D = c[3], N = sizesOf(node.input(1))[2];
  const int64_t P = ctx.profile().partitions, bankColumns = ctx.profile().psum.bankFp32Elements;
  const int reg = ctx.launchRegister(node.input(2));
  if (reg < 0) return ctx.unsupported(node, "the position is not a launch register");
  // The cache is a graph input (checkKvCacheUpdate): its HBM form is the buffer as fed.
  TESSEL_ASSIGN_OR_RETURN(const tile::HbmView cache, ctx.hbmOf(node.input(0)));
  TESSEL_ASSIGN_OR_RETURN(DeviceTensor added, headMajor(ctx, node.input(1)));
  const HeadMatrices heads{added};
  const int64_t group = std::max<int64_t>(1, bankColumns / D);  // Heads per PSUM bank.
  const std::string name = node.name() + "/rows";
  for (int64_t first = 0; first < B * H; first += group) {
    const int64_t count = std::min(group, B * H - first);
    for (const kernels::Span &n : kernels::splitRange(N, P)) {
      TileView psum = b.psum(name, added.dtype, n.count, {count * D});
      for (int64_t i = 0; i < count; ++i) {
        const int64_t head = first + i;
        b.transpose(psum.cols(i * D, D), heads.head(head / H, head % H, n.start, n.count));
      }
      TileView rows = b.sbuf(name, added.dtype, n.count, {count * D});
      b.copy(rows, psum);
      // Row n of head `head` goes to element (head * C + position + n) * D of the cache.
      const tile::HbmView window =
          cache.pattern((first * C + n.start) * D, {FreeDim{D, static_cast<uint32_t>(n.count)},
                                                      FreeDim{C * D, static_cast<uint32_t>(count)},
                                                      FreeDim{1, static_cast<uint32_t>(D)}});
      b.storeAt(window, rows, reg, D, C - N);
    }
  }
  ctx.writeInPlace(node.output(0), node.input(0));
  return Status::success();
}

std::vector<OpLowering> attentionLowerings() {
  return {OpLowering{"tessel", "Attention", checkAttention, emitAttention},
          OpLowering{"tessel", "RotaryEmbedding", checkRotaryEmbedding, emitRotaryEmbedding},
          OpLowering{"tessel", "KvCacheUpdate", checkKvCacheUpdate, emitKvCacheUpdate, /*launchInput=*/2,
                     /*inPlaceInput=*/0},
          OpLowering{"", "Softmax", checkSoftmax, emitSoftmax}};
}

}  // namespace tessel::nc::compiler
