// The library kernel `attention` (kernel.h): its two variants, the reference they are both checked
// against, and variant "heads"'s adapter from HBM to the heads form the model compiler runs.
//
// The adapter: per group of heads sharing a block of P partitions (the plan's grouping, as a model's
// projections lay heads out), q, k and v come in as token tiles [tokens, heads * D] (one DMA each)
// and PE transposes them to [heads * D, tokens]; q's eviction applies the scale, as the model
// compiler's cast copy of Q does. The output goes back the same way: PE transposes per token tile,
// one DMA each.
#include "targets/nc/kernels/attention/kernel.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "targets/nc/kernels/attention/flash.h"
#include "targets/nc/kernels/attention/heads.h"
#include "targets/nc/kernels/kernel_options.h"
#include "targets/nc/kernels/reference.h"
#include "targets/nc/kernels/tiling.h"
#include "targets/nc/tile/tile_ring.h"

namespace tessel::nc::kernels {
namespace {

using tile::HbmView;
using tile::KernelBuilder;
using tile::TileRing;
using tile::TileView;

const std::vector<std::string> kAttentionVariants = {"flash", "heads"};

/// x [H, S, D] in HBM as head-major blocks, one per group of heads: block g holds head
/// groups[g][i] at partitions [i * D, i * D + D), tokens on the free dim, times `scale`.
std::vector<TileView> loadHeadMajor(KernelBuilder &b, const HbmView &x, const std::vector<std::vector<int64_t>> &groups,
                                    int64_t S, int64_t D, float scale, const std::string &name) {
  const int64_t P = b.profile().partitions;
  // bf16 transposes: a PSUM bank holds twice its fp32 columns.
  const int64_t tilesPerBank = std::max<int64_t>(1, 2 * b.profile().psum.bankFp32Elements / P);
  TileRing transposes(MemSpace::PSUM, name + "_t_ps", DType::BF16, P, {tilesPerBank * P}, 2);
  const std::vector<Span> tokenTiles = splitRange(S, P);
  const int64_t n = static_cast<int64_t>(tokenTiles.size());
  std::vector<TileView> blocks;
  for (const std::vector<int64_t> &group : groups) {
    const int64_t heads = static_cast<int64_t>(group.size()), rows = heads * D;
    TileView block = b.sbuf(name, DType::BF16, rows, {S});
    for (int64_t first = 0; first < n; first += tilesPerBank) {
      const int64_t count = std::min(tilesPerBank, n - first);
      TileView ps = transposes.next(b).partitionSlice(0, rows);
      for (int64_t t = first; t < first + count; ++t) {
        const Span &tokens = tokenTiles[static_cast<size_t>(t)];
        TileView tokenRows = b.sbuf(name + "_rows", DType::BF16, P, {rows}).partitionSlice(0, tokens.count);
        b.load(tokenRows.reshapeFree({heads, D}),
               x.slice(0, group.front(), heads).slice(1, tokens.start, tokens.count).transpose(0, 1));
        b.transpose(ps.cols((t - first) * P, tokens.count), tokenRows);
      }
      const int64_t start = tokenTiles[static_cast<size_t>(first)].start;
      const Span &last = tokenTiles[static_cast<size_t>(first + count - 1)];
      const int64_t width = last.start + last.count - start;
      if (scale == 1.0f) b.copy(block.cols(start, width), ps.cols(0, width));
      else b.tensorScalar(block.cols(start, width), ps.cols(0, width), AluOp::Multiply, scale);
    }
    blocks.push_back(block);
  }
  return blocks;
}

/// Stores head-major blocks (loadHeadMajor's form) to o [H, S, D]: per token tile a PE transpose to
/// [tokens, heads * D] and one DMA.
void storeHeadMajor(KernelBuilder &b, const HbmView &o, const std::vector<std::vector<int64_t>> &groups,
                    const std::vector<TileView> &blocks, int64_t S, int64_t D) {
  const int64_t P = b.profile().partitions;
  TileRing transposes(MemSpace::PSUM, "o_t_ps", DType::BF16, P, {P}, 2);
  for (size_t g = 0; g < groups.size(); ++g) {
    const int64_t heads = static_cast<int64_t>(groups[g].size()), rows = heads * D;
    for (const Span &tokens : splitRange(S, P)) {
      TileView ps = transposes.next(b).partitionSlice(0, tokens.count).cols(0, rows);
      b.transpose(ps, blocks[g].cols(tokens.start, tokens.count));
      TileView tokenRows = b.sbuf("o_rows", DType::BF16, P, {rows}).partitionSlice(0, tokens.count);
      b.copy(tokenRows, ps);
      b.store(o.slice(0, groups[g].front(), heads).slice(1, tokens.start, tokens.count).transpose(0, 1),
              tokenRows.reshapeFree({heads, D}));
    }
  }
}

Status buildHeadsAttention(KernelBuilder &b, const KernelParams &params, const HbmView &q, const HbmView &k,
                           const HbmView &v, const HbmView &o) {
  const MachineProfile &profile = b.profile();
  HeadsProblem problem;
  problem.B = 1, problem.H = problem.Hkv = params.dim("H");
  problem.Sq = problem.Sk = params.dim("S");
  problem.D = problem.Dv = params.dim("D");
  problem.scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(problem.D)));
  TESSEL_ASSIGN_OR_RETURN(problem.causal, flagOption(params, "causal", false));
  const int64_t maxD = std::min({profile.partitions, profile.pe.rows, profile.pe.cols});
  if (problem.D > maxD)
    return makeError(ErrorCode::InvalidArgument, "D = {} must be at most {} (the head dims lie on partitions)",
                     problem.D, maxD);
  if (problem.Sk > kHeadsMaxKeys)
    return makeError(ErrorCode::InvalidArgument, "variant heads: S = {}; at most {} keys", problem.Sk, kHeadsMaxKeys);
  const HeadsPlan plan = planHeads(profile, problem, DType::BF16, DType::BF16);
  // Inputs and output share the plan's grouping of heads (D = Dv).
  const std::vector<TileView> qBlocks = loadHeadMajor(b, q, plan.groups, problem.Sq, problem.D, problem.scale, "q");
  const std::vector<TileView> kBlocks = loadHeadMajor(b, k, plan.groups, problem.Sk, problem.D, 1.0f, "k");
  const std::vector<TileView> vBlocks = loadHeadMajor(b, v, plan.groups, problem.Sk, problem.D, 1.0f, "v");
  std::vector<TileView> oBlocks;
  std::vector<std::pair<size_t, int64_t>> placeOf(static_cast<size_t>(problem.H));  // Head -> (block, partition).
  for (size_t g = 0; g < plan.groups.size(); ++g) {
    oBlocks.push_back(b.sbuf("o", DType::BF16, static_cast<int64_t>(plan.groups[g].size()) * problem.Dv, {problem.Sq}));
    for (size_t i = 0; i < plan.groups[g].size(); ++i)
      placeOf[static_cast<size_t>(plan.groups[g][i])] = {g, static_cast<int64_t>(i) * problem.D};
  }
  auto headsOf = [&](const std::vector<TileView> &blocks) {
    return [&](int64_t, int64_t h, int64_t start, int64_t count) {
      const auto [block, partition] = placeOf[static_cast<size_t>(h)];
      return blocks[block].partitionSlice(partition, problem.D).cols(start, count);
    };
  };
  std::optional<TileView> ones;
  HeadsOperands operands;
  operands.q = headsOf(qBlocks);
  operands.k = headsOf(kBlocks);
  operands.v = headsOf(vBlocks);
  operands.output = [&](int64_t, size_t g) { return oBlocks[g]; };
  operands.ones = [&] {
    if (!ones) {
      ones = b.sbuf("ones", DType::BF16, profile.partitions, {profile.partitions});
      b.memset(*ones, 1.0f);
    }
    return *ones;
  };
  emitHeadsAttention(b, problem, plan, operands);
  storeHeadMajor(b, o, plan.groups, oBlocks, problem.Sq, problem.Dv);
  return Status::success();
}

Status buildAttention(KernelBuilder &b, const KernelParams &params) {
  const std::vector<int64_t> dims = {params.dim("H"), params.dim("S"), params.dim("D")};
  const HbmView q = b.input("q", DType::BF16, dims);
  const HbmView k = b.input("k", DType::BF16, dims);
  const HbmView v = b.input("v", DType::BF16, dims);
  const HbmView o = b.output("o", DType::BF16, dims);
  if (params.variant == "heads") return buildHeadsAttention(b, params, q, k, v, o);
  FlashProblem problem;
  problem.H = dims[0], problem.S = dims[1], problem.D = dims[2];
  problem.scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(problem.D)));
  TESSEL_ASSIGN_OR_RETURN(problem.causal, flagOption(params, "causal", false));
  TESSEL_ASSIGN_OR_RETURN(problem.allowResident, flagOption(params, "resident", true));
  return emitFlashAttention(b, problem, FlashOperands{q, k, v, o});
}

Expected<std::vector<HostTensor>> referenceAttention(const KernelParams &params,
                                                     const std::vector<HostTensor> &inputs) {
  TESSEL_ASSIGN_OR_RETURN(bool causal, flagOption(params, "causal", false));
  const int64_t S = params.dim("S"), D = params.dim("D");
  std::string body = fmt::format(
      "  %k_t = Transpose(%k) {{perm = [0, 2, 1]}}\n"
      "  %s = MatMul(%q, %k_t)\n"
      "  const %scale = dense<f32[]: {:.9g}>\n"
      "  %scaled = Mul(%s, %scale)\n",
      1.0 / std::sqrt(static_cast<double>(D)));
  std::string logits = "%scaled";
  if (causal) {
    body += fmt::format(
        "  const %mask_shape = dense<i64[2]: {0}, {0}>\n"
        "  %neg_inf = ConstantOfShape(%mask_shape) {{value = dense<f32[1]: -inf>}}\n"
        "  const %above = dense<i64[]: 1>\n"
        "  %mask = Trilu(%neg_inf, %above) {{upper = 1}}\n"
        "  %masked = Add(%scaled, %mask)\n",
        S);
    logits = "%masked";
  }
  body += fmt::format("  %p = Softmax({}) {{axis = -1}}\n  %o = MatMul(%p, %v)\n", logits);
  return runReference(irModel(inputs, body, "%o"), inputs);
}

// Scores and sums are fp32; the probabilities feeding p v and the output are rounded to bf16.
double attentionAbsTolerance(DType) { return 2e-2; }
double attentionRelTolerance(DType) { return 2e-2; }

double attentionFlops(const KernelParams &params) {
  const double H = static_cast<double>(params.dim("H")), S = static_cast<double>(params.dim("S")),
               D = static_cast<double>(params.dim("D"));
  // q k^T and p v: 2 * D FLOPs each per (query, visible key) pair.
  const double pairs = params.option("causal") == "1" ? S * (S + 1) / 2 : S * S;
  return 4.0 * D * H * pairs;
}

}  // namespace

std::vector<KernelDef> attentionKernels() {
  return {KernelDef{"attention",
                    "o[H, S, D] = softmax(q k^T / sqrt(D) [causal]) v, fused: scores never leave SBUF/PSUM (variants "
                    "flash, heads: the form models run)",
                    {"H", "S", "D"},
                    {{"H", 1}, {"S", 512}, {"D", 64}},
                    {DType::BF16},
                    buildAttention,
                    referenceAttention,
                    attentionAbsTolerance,
                    attentionRelTolerance,
                    attentionFlops,
                    kAttentionVariants}};
}

}  // namespace tessel::nc::kernels
