// The matmul kernel (matmul.h), written like NKI's "fully optimized" matmul: blocked so that every
// byte loaded into SBUF feeds many matmuls, large DMAs, and the tensor engine kept streaming.
//
// Tiles come from the profile: K tiles of TK = partitions (contraction on partitions), M tiles of
// TM = PE columns (stationary free = output partitions), N tiles of TN = one PSUM bank of fp32.
// An m-block is G m-tiles (G <= PSUM banks): the G output tiles [TM, TN] of one n-tile accumulate
// in G banks over the WHOLE K, so PSUM is evicted once per output tile and no partial sums go
// through SBUF. For each (m-block, n-tile) the kernel streams K in chunks of C k-tiles:
//
//   for m-block:                       a_t stripe [K, G*TM] resident in SBUF (loaded once)
//     for n-tile:                      b chunk [C*TK, TN] streamed, C*G matmuls per chunk
//       for k-chunk: for k-tile: for m-tile: matmul(psum[m-tile], a_t[k-tile, m-tile], b[k-tile])
//       evict G banks (ACT/DVE, bias and activation fused), one store of [G*TM, TN]
//
// Buffers are rings of tiles that live for the whole kernel (TileRing): the a_t stripe is one tile
// per k-chunk, and the next m-block reloads chunk kc as soon as the current one's last n-tile has
// used it (the dependence analysis orders the reload after those reads), so a stripe change needs no
// extra SBUF and its DMA spreads over a whole n-tile. b chunks rotate through kChunkSlots buffers
// and are loaded kLoadAheadChunks chunks ahead; output staging, bias rows and epilogue temporaries
// are double-buffered. Fixed rings keep the SBUF layout static, so nothing fragments. When the
// stripe does not fit SBUF even with G halved, a_t chunks are streamed with the b chunks instead
// (reloaded per n-tile).
//
// Traffic: a_t once, b once per m-block (M / (G*TM) times), c once: 0.7 GB for 4096x8192x8192 bf16,
// well under what the DMA engines move while PE does its 5.99 ms of work. Each b chunk DMA moves
// C*TN*dsize bytes per partition, sized to about 32 KiB per DMA engine (section 5.5).
//
// Epilogue: ACT's bias operand is per partition (= per output row), but the bias here is per column,
// so a bias is added by DVE on the eviction (tensor_tensor reading PSUM costs one pass), and the
// activation runs on ACT (from PSUM directly when there is no bias). Plain evictions alternate ACT
// and DVE.
#include "targets/nc/kernels/matmul.h"

#include <algorithm>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "targets/nc/kernels/matmul_tutorial.h"
#include "targets/nc/kernels/reference.h"
#include "targets/nc/kernels/tiling.h"
#include "targets/nc/machine/cost.h"
#include "targets/nc/tile/tile_ring.h"

namespace tessel::nc::kernels {
namespace {

using tile::HbmView;
using tile::KernelBuilder;
using tile::TileRing;
using tile::TileView;

/// Bytes one DMA should move per engine to amortise its fixed costs (section 5.5 [P:PERF]: "> 32 KiB
/// per engine recommended").
constexpr int64_t kDmaBytesPerEngineTarget = 32768;

/// An a_t chunk moves at most this many times kDmaBytesPerEngineTarget per engine.
constexpr int64_t kAChunkTargets = 4;

/// b chunks loaded ahead of the one being multiplied.
constexpr int64_t kLoadAheadChunks = 2;
/// Slots of the streamed chunk rings: the chunk in use, kLoadAheadChunks loading, one spare.
constexpr int64_t kChunkSlots = kLoadAheadChunks + 2;
/// Slots of the per-output-block tiles: one being filled while the previous one drains.
constexpr int64_t kEpilogueSlots = 2;

/// The library's own form (this file); the tutorial's forms are matmul_tutorial.h.
constexpr const char *kBlockedVariant = "blocked";

/// The epilogue applied to each output element after the optional bias.
enum class Epilogue { None, Relu, Gelu, Silu };

Expected<Epilogue> parseEpilogue(const std::string &text) {
  if (text.empty() || text == "none") return Epilogue::None;
  if (text == "relu") return Epilogue::Relu;
  if (text == "gelu") return Epilogue::Gelu;
  if (text == "silu") return Epilogue::Silu;
  return makeError(ErrorCode::InvalidArgument, "kernel 'matmul': option act={} is not one of none, relu, gelu, silu",
                   text);
}

/// A 0/1 option; `fallback` when not given.
Expected<bool> parseFlag(const KernelParams &params, const std::string &name, bool fallback) {
  const std::string text = params.option(name);
  if (text.empty()) return fallback;
  if (text == "0" || text == "1") return text == "1";
  return makeError(ErrorCode::InvalidArgument, "kernel 'matmul': option {}={} is not 0 or 1", name, text);
}

ActFunc actFunc(Epilogue epilogue) {
  switch (epilogue) {
    case Epilogue::Relu: return ActFunc::Relu;
    case Epilogue::Gelu: return ActFunc::Gelu;
    case Epilogue::Silu: return ActFunc::Silu;
    case Epilogue::None: break;
  }
  return ActFunc::Copy;
}

DType outputDtype(DType input) { return input == DType::F32 ? DType::F32 : DType::BF16; }
DType biasDtype(DType input) { return input == DType::F32 ? DType::F32 : DType::BF16; }

/// The blocking of one matmul instance.
struct MatmulPlan {
  int64_t M = 0, N = 0, K = 0;
  int64_t tileK = 0, tileM = 0, tileN = 0;  // TK (partitions), TM (PE columns), TN (PSUM bank).
  int64_t bCols = 0;        // Columns of one k-tile of a b chunk: min(N, TN).
  int64_t kTiles = 0, mTiles = 0, nTiles = 0;
  int64_t groupTiles = 0;   // G: m-tiles per m-block, one PSUM bank each.
  int64_t chunkTiles = 0;   // C: k-tiles per DMA chunk.
  int64_t kChunks = 0, mBlocks = 0;
  bool residentA = false;   // The a_t stripe of an m-block stays in SBUF across its n-tiles.
  int64_t blockCols() const { return groupTiles * tileM; }
};

/// `allowStripe` false streams a_t chunks with the b chunks (option stripe=0; for tests).
MatmulPlan planMatmul(const MachineProfile &profile, int64_t M, int64_t N, int64_t K, DType dtype, bool allowStripe) {
  MatmulPlan plan;
  plan.M = M, plan.N = N, plan.K = K;
  plan.tileK = std::min(profile.partitions, profile.pe.rows);
  plan.tileM = std::min(profile.partitions, profile.pe.cols);
  plan.tileN = profile.psum.bankFp32Elements;
  plan.kTiles = ceilDiv(K, plan.tileK);
  plan.mTiles = ceilDiv(M, plan.tileM);
  plan.nTiles = ceilDiv(N, plan.tileN);
  const int64_t elementBytes = dtypeSizeBytes(dtype);

  // G: all banks when K is long enough that one group's matmuls hide the next group's evictions;
  // half of them (so two groups alternate) when K is short.
  const int64_t banks = profile.psum.banks;
  plan.groupTiles = std::min(plan.mTiles, plan.kTiles >= banks ? banks : std::max<int64_t>(1, banks / 2));

  // Chunk: about kDmaBytesPerEngineTarget per DMA engine for a b chunk, and an a_t chunk (G times
  // wider) of at most kAChunkTargets times that.
  const int64_t bytesPerPartition = kDmaBytesPerEngineTarget / dmaPartitionsPerEngine(profile, plan.tileK);
  plan.bCols = std::min(N, plan.tileN);
  const int64_t aChunkLimit = std::max<int64_t>(
      1, kAChunkTargets * bytesPerPartition / (plan.groupTiles * plan.tileM * elementBytes));
  plan.chunkTiles =
      std::clamp<int64_t>(ceilDiv(bytesPerPartition, plan.bCols * elementBytes), 1, std::min(plan.kTiles, aChunkLimit));
  plan.kChunks = ceilDiv(plan.kTiles, plan.chunkTiles);

  // Residency of the a_t stripe: SBUF minus the rings (b chunks, output staging, bias and epilogue
  // temporaries; see MatmulBuilder).
  auto fits = [&](int64_t groupTiles) {
    const int64_t aChunk = plan.chunkTiles * groupTiles * plan.tileM * elementBytes;
    const int64_t bChunk = plan.chunkTiles * plan.bCols * elementBytes;
    const int64_t staging = kEpilogueSlots * groupTiles * plan.bCols * dtypeSizeBytes(outputDtype(dtype));
    const int64_t fp32Rows = 2 * kEpilogueSlots * plan.bCols * dtypeSizeBytes(DType::F32);
    const int64_t stripe = plan.kChunks * aChunk;
    return stripe + kChunkSlots * bChunk + staging + fp32Rows <= profile.sbuf.bytesPerPartition;
  };
  if (!allowStripe) {
    plan.residentA = false;
  } else if (fits(plan.groupTiles)) {
    plan.residentA = true;
  } else if (plan.groupTiles > 1 && fits(plan.groupTiles / 2)) {
    plan.groupTiles /= 2;
    plan.residentA = true;
  }
  plan.mBlocks = ceilDiv(plan.mTiles, plan.groupTiles);
  return plan;
}

/// Records the kernel for one plan; the state that crosses loop iterations lives here.
class MatmulBuilder {
 public:
  MatmulBuilder(KernelBuilder &b, const MatmulPlan &plan, DType dtype, bool hasBias, Epilogue epilogue)
      : b_(b), plan_(plan), dtype_(dtype), hasBias_(hasBias), epilogue_(epilogue),
        aRing_(MemSpace::SBUF, "a_t", dtype, plan.tileK, {plan.chunkTiles * plan.blockCols()}, kChunkSlots),
        bRing_(MemSpace::SBUF, "b", dtype, plan.tileK, {plan.chunkTiles * plan.bCols}, kChunkSlots),
        stagingRing_(MemSpace::SBUF, "c", outputDtype(dtype), plan.tileM, {plan.groupTiles * plan.bCols}, kEpilogueSlots),
        biasRing_(MemSpace::SBUF, "bias", DType::F32, plan.tileM, {plan.bCols}, kEpilogueSlots),
        biasedRing_(MemSpace::SBUF, "biased", DType::F32, plan.tileM, {plan.bCols}, kEpilogueSlots) {}

  void build() {
    aT_ = b_.input("a_t", dtype_, {plan_.K, plan_.M});
    bIn_ = b_.input("b", dtype_, {plan_.K, plan_.N});
    if (hasBias_) bias_ = b_.input("bias", biasDtype(dtype_), {plan_.N});
    c_ = b_.output("c", outputDtype(dtype_), {plan_.M, plan_.N});

    for (int64_t mb = 0; mb < plan_.mBlocks; ++mb)
      for (int64_t nb = 0; nb < plan_.nTiles; ++nb)
        for (int64_t kc = 0; kc < plan_.kChunks; ++kc) steps_.push_back(Step{mb, nb, kc});
    stripeLoaded_.assign(static_cast<size_t>(plan_.mBlocks * plan_.kChunks), false);
    bChunks_.assign(steps_.size(), std::nullopt);
    stepA_.assign(steps_.size(), std::nullopt);
    biasTiles_.assign(steps_.size(), std::nullopt);

    for (size_t s = 0; s < steps_.size(); ++s) {
      for (; loaded_ < std::min(steps_.size(), s + kLoadAheadChunks + 1); ++loaded_) loadStep(loaded_);
      const Step &step = steps_[s];
      multiplyStep(s);
      // Rolling stripe change: the next m-block's chunk overwrites the one just used for the last time.
      if (plan_.residentA && step.nb == plan_.nTiles - 1 && step.mb + 1 < plan_.mBlocks)
        stripeChunk(step.mb + 1, step.kc);
      if (step.kc == plan_.kChunks - 1) evict(s);
    }
  }

 private:
  struct Step {
    int64_t mb = 0, nb = 0, kc = 0;
  };

  Span mBlockCols(int64_t mb) const {
    int64_t start = mb * plan_.blockCols();
    return {start, std::min(plan_.blockCols(), plan_.M - start)};
  }
  Span nTile(int64_t nb) const {
    int64_t start = nb * plan_.tileN;
    return {start, std::min(plan_.tileN, plan_.N - start)};
  }
  /// The k-tiles of chunk kc: [first, first + count); all full but possibly the last of K.
  Span chunkKTiles(int64_t kc) const {
    int64_t first = kc * plan_.chunkTiles;
    return {first, std::min(plan_.chunkTiles, plan_.kTiles - first)};
  }
  int64_t kTileRows(int64_t kt) const { return std::min(plan_.tileK, plan_.K - kt * plan_.tileK); }

  /// Loads rows [kt0 * TK, ...) x `cols` of `src` ([K, X] in HBM) into `chunk` [TK, C * width]:
  /// k-tile i of the chunk lands at columns [i * width, i * width + cols.count) of partitions
  /// [0, rows). One DMA for the full k-tiles, one for a ragged last one.
  void loadChunk(const TileView &chunk, const HbmView &src, int64_t kc, Span cols, int64_t width) {
    Span kts = chunkKTiles(kc);
    int64_t full = kts.count;
    if (kTileRows(kts.start + kts.count - 1) < plan_.tileK) --full;
    const int64_t k0 = kts.start * plan_.tileK;
    if (full > 0) {
      TileView dst = chunk.reshapeFree({plan_.chunkTiles, width}).slice(0, 0, full).slice(1, 0, cols.count);
      b_.load(dst, src.rows(k0, full * plan_.tileK)
                       .cols(cols.start, cols.count)
                       .reshapeDim(0, {full, plan_.tileK})
                       .transpose(0, 1));
    }
    if (full < kts.count) {
      int64_t rows = kTileRows(kts.start + full);
      b_.load(chunk.partitionSlice(0, rows).cols(full * width, cols.count),
              src.rows(k0 + full * plan_.tileK, rows).cols(cols.start, cols.count));
    }
  }

  /// Chunk kc of the resident a_t stripe, loaded for m-block mb on first use. The stripe is one
  /// tile per chunk for the whole kernel; m-block mb + 1 reloads chunk kc once m-block mb is done
  /// with it.
  TileView stripeChunk(int64_t mb, int64_t kc) {
    if (stripe_.empty())
      for (int64_t i = 0; i < plan_.kChunks; ++i)
        stripe_.push_back(b_.sbuf("a_t", dtype_, plan_.tileK, {plan_.chunkTiles * plan_.blockCols()}));
    const TileView chunk = stripe_[static_cast<size_t>(kc)];
    auto loaded = stripeLoaded_.begin() + mb * plan_.kChunks + kc;
    if (!*loaded) {
      loadChunk(chunk, aT_, kc, mBlockCols(mb), plan_.blockCols());
      *loaded = true;
    }
    return chunk;
  }

  /// Emits the loads step s needs: its b chunk, its a_t chunk (streamed, or the first m-block's
  /// stripe) and, at the start of an output block, the bias row.
  void loadStep(size_t s) {
    const Step &step = steps_[s];
    if (!plan_.residentA) {
      TileView a = aRing_.next(b_);
      loadChunk(a, aT_, step.kc, mBlockCols(step.mb), plan_.blockCols());
      stepA_[s] = a;
    } else if (step.mb == 0) {
      stripeChunk(step.mb, step.kc);
    }
    TileView bChunk = bRing_.next(b_);
    loadChunk(bChunk, bIn_, step.kc, nTile(step.nb), plan_.bCols);
    bChunks_[s] = bChunk;
    if (hasBias_ && step.kc == 0) {
      Span n = nTile(step.nb);
      TileView row = biasRing_.next(b_).cols(0, n.count);
      b_.load(row, bias_.reshapeDim(0, {1, plan_.N}).cols(n.start, n.count).broadcast(0, plan_.tileM));
      biasTiles_[s] = row;
    }
  }

  void multiplyStep(size_t s) {
    const Step &step = steps_[s];
    const Span n = nTile(step.nb);
    const Span cols = mBlockCols(step.mb);
    const int64_t groupTiles = ceilDiv(cols.count, plan_.tileM);
    if (step.kc == 0) {
      acc_.clear();
      for (int64_t j = 0; j < groupTiles; ++j) acc_.push_back(b_.psum("acc", DType::F32, plan_.tileM, {plan_.tileN}));
      if (hasBias_) currentBias_ = *biasTiles_[s];
    }
    const TileView a = plan_.residentA ? stripeChunk(step.mb, step.kc) : *stepA_[s];
    const TileView bChunk = *bChunks_[s];
    const Span kts = chunkKTiles(step.kc);
    for (int64_t i = 0; i < kts.count; ++i) {
      const int64_t kt = kts.start + i, rows = kTileRows(kt);
      TileView moving = bChunk.partitionSlice(0, rows).cols(i * plan_.bCols, n.count);
      for (int64_t j = 0; j < groupTiles; ++j) {
        const int64_t m = std::min(plan_.tileM, cols.count - j * plan_.tileM);
        TileView stationary = a.partitionSlice(0, rows).cols(i * plan_.blockCols() + j * plan_.tileM, m);
        b_.matmul(acc_[static_cast<size_t>(j)].partitionSlice(0, m).cols(0, n.count), stationary, moving,
                  /*accumulate=*/kt > 0);
      }
    }
  }

  /// PSUM -> SBUF with the epilogue, then the stores of the output block.
  void evict(size_t s) {
    const Step &step = steps_[s];
    const Span n = nTile(step.nb);
    const Span cols = mBlockCols(step.mb);
    const int64_t groupTiles = static_cast<int64_t>(acc_.size());
    TileView staging = stagingRing_.next(b_);
    for (int64_t j = 0; j < groupTiles; ++j) {
      const int64_t m = std::min(plan_.tileM, cols.count - j * plan_.tileM);
      TileView src = acc_[static_cast<size_t>(j)].partitionSlice(0, m).cols(0, n.count);
      TileView dst = staging.partitionSlice(0, m).cols(j * plan_.bCols, n.count);
      if (hasBias_) {
        TileView bias = currentBias_.partitionSlice(0, m);
        if (epilogue_ == Epilogue::None) {
          b_.tensorTensor(dst, src, bias, AluOp::Add, Engine::DVE);
        } else {
          TileView sum = biasedRing_.next(b_).partitionSlice(0, m).cols(0, n.count);
          b_.tensorTensor(sum, src, bias, AluOp::Add, Engine::DVE);
          b_.activation(dst, sum, actFunc(epilogue_));
        }
      } else if (epilogue_ != Epilogue::None) {
        b_.activation(dst, src, actFunc(epilogue_));
      } else {
        b_.copy(dst, src, j % 2 == 0 ? Engine::ACT : Engine::DVE);
      }
    }
    // Full m-tiles leave in one DMA ([TM, G, n] -> rows of c); a ragged last m-tile in its own.
    const int64_t full = cols.count / plan_.tileM;
    if (full > 0) {
      TileView src = staging.reshapeFree({plan_.groupTiles, plan_.bCols}).slice(0, 0, full).slice(1, 0, n.count);
      b_.store(c_.rows(cols.start, full * plan_.tileM)
                   .cols(n.start, n.count)
                   .reshapeDim(0, {full, plan_.tileM})
                   .transpose(0, 1),
               src);
    }
    if (full < groupTiles) {
      const int64_t m = cols.count - full * plan_.tileM;
      b_.store(c_.rows(cols.start + full * plan_.tileM, m).cols(n.start, n.count),
               staging.partitionSlice(0, m).cols(full * plan_.bCols, n.count));
    }
  }

  KernelBuilder &b_;
  const MatmulPlan &plan_;
  DType dtype_;
  bool hasBias_;
  Epilogue epilogue_;
  HbmView aT_, bIn_, bias_, c_;
  TileRing aRing_, bRing_, stagingRing_, biasRing_, biasedRing_;
  std::vector<TileView> stripe_;                      // The resident a_t stripe, one tile per chunk.
  std::vector<bool> stripeLoaded_;                    // By (m-block, chunk).
  std::vector<Step> steps_;
  size_t loaded_ = 0;                                 // Steps whose loads are emitted.
  std::vector<std::optional<TileView>> stepA_;        // Streamed a_t chunks by step.
  std::vector<std::optional<TileView>> bChunks_;      // By step.
  std::vector<std::optional<TileView>> biasTiles_;    // By step (first chunk of an output block).
  std::vector<TileView> acc_;                         // PSUM accumulators of the current output block.
  TileView currentBias_;
};

Status buildMatmul(KernelBuilder &b, const KernelParams &params) {
  if (!params.variant.empty() && params.variant != kBlockedVariant) return buildMatmulTutorial(b, params);
  const int64_t M = params.dim("M"), N = params.dim("N"), K = params.dim("K");
  TESSEL_ASSIGN_OR_RETURN(bool hasBias, parseFlag(params, "bias", false));
  TESSEL_ASSIGN_OR_RETURN(bool allowStripe, parseFlag(params, "stripe", true));
  TESSEL_ASSIGN_OR_RETURN(Epilogue epilogue, parseEpilogue(params.option("act")));
  const MatmulPlan plan = planMatmul(b.profile(), M, N, K, params.dtype, allowStripe);
  MatmulBuilder(b, plan, params.dtype, hasBias, epilogue).build();
  return Status::success();
}

std::string epilogueIr(Epilogue epilogue, const std::string &x) {
  switch (epilogue) {
    case Epilogue::None: return fmt::format("  %c = Identity({})\n", x);
    case Epilogue::Relu: return fmt::format("  %c = Relu({})\n", x);
    case Epilogue::Silu: return fmt::format("  %sig = Sigmoid({0})\n  %c = Mul({0}, %sig)\n", x);
    case Epilogue::Gelu:
      // Gelu (exact): 0.5 * x * (1 + erf(x / sqrt(2))); opset 17 has no Gelu op.
      return fmt::format(
          "  const %inv_sqrt2 = dense<f32[]: 0.70710678118654752>\n"
          "  const %one = dense<f32[]: 1>\n"
          "  const %half = dense<f32[]: 0.5>\n"
          "  %scaled = Mul({0}, %inv_sqrt2)\n"
          "  %erf = Erf(%scaled)\n"
          "  %erf1 = Add(%erf, %one)\n"
          "  %xe = Mul({0}, %erf1)\n"
          "  %c = Mul(%xe, %half)\n",
          x);
  }
  return "";
}

Expected<std::vector<HostTensor>> referenceMatmul(const KernelParams &params, const std::vector<HostTensor> &inputs) {
  TESSEL_ASSIGN_OR_RETURN(bool hasBias, parseFlag(params, "bias", false));
  TESSEL_ASSIGN_OR_RETURN(Epilogue epilogue, parseEpilogue(params.option("act")));
  std::string body = "  %a = Transpose(%a_t) {perm = [1, 0]}\n  %mm = MatMul(%a, %b)\n";
  std::string x = "%mm";
  if (hasBias) {
    body += "  %biased = Add(%mm, %bias)\n";
    x = "%biased";
  }
  body += epilogueIr(epilogue, x);
  return runReference(irModel(inputs, body, "%c"), inputs);
}

// Inputs are exact in their dtype and PE accumulates in fp32, so the error is the fp32 summation
// order plus one rounding of the output (bf16 for bf16/fp8 inputs: 2^-9 relative) and the ACT
// function approximation.
double matmulAbsTolerance(DType dtype) {
  switch (dtype) {
    case DType::F32: return 1e-3;
    case DType::BF16: return 2e-2;
    default: return 5e-2;
  }
}
double matmulRelTolerance(DType dtype) { return matmulAbsTolerance(dtype); }

double matmulFlops(const KernelParams &params) {
  return 2.0 * static_cast<double>(params.dim("M")) * static_cast<double>(params.dim("N")) *
         static_cast<double>(params.dim("K"));
}

std::vector<std::string> matmulVariants() {
  std::vector<std::string> variants = {kBlockedVariant};
  for (const std::string &variant : matmulTutorialVariants()) variants.push_back(variant);
  return variants;
}

}  // namespace

std::vector<KernelDef> matmulKernels() {
  return {KernelDef{"matmul",
                    "c[M, N] = a_t[K, M]^T @ b[K, N] (+ bias[N], act=none|relu|gelu|silu); blocked, fp32 PSUM "
                    "accumulation over K",
                    {"M", "N", "K"},
                    {{"M", 512}, {"N", 512}, {"K", 512}},
                    {DType::BF16, DType::F8E4M3, DType::F32},
                    buildMatmul,
                    referenceMatmul,
                    matmulAbsTolerance,
                    matmulRelTolerance,
                    matmulFlops,
                    matmulVariants()}};
}

}  // namespace tessel::nc::kernels
