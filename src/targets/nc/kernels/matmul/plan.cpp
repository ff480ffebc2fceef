// The matmul plan (plan.h). Every number comes from the profile but three targets from the DMA model
// (accelerator-model.md section 5.5, docs/fidelity.md): a DMA should move about 32 KiB per engine to amortise its fixed
// costs, and a contiguous run of 4 KiB per partition or more streams at the engine's full rate (0.8 of it at 2 KiB, 0.4
// at 1 KiB and below).
#include "targets/nc/kernels/matmul/plan.h"

#include <algorithm>

#include <fmt/format.h>

#include "targets/nc/kernels/tiling.h"
#include "targets/nc/machine/cost.h"

namespace tessel::nc::kernels {
namespace {

/// Bytes one DMA should move per engine (section 5.5 [P:PERF]: "> 32 KiB per engine recommended").
constexpr int64_t kDmaBytesPerEngineTarget = 32768;
/// A row-major stationary chunk moves at most this many times kDmaBytesPerEngineTarget per engine.
constexpr int64_t kStationaryChunkTargets = 4;
/// The contiguous run per partition from which a DMA streams at the full rate.
constexpr int64_t kFullRateRunBytes = 4096;
/// Bytes per partition of a blocked stationary chunk: 1.5 times the full-rate run (6 k-tiles of a 512-column bf16
/// block), so that a chunk narrower than a full m-block (one core's share of it) takes more k-tiles and stays at the
/// full rate. Longer chunks change the models' latencies by -11% to +3% depending on the model (docs/benchmarks.md): no
/// DMA rate to gain above the full-rate run, only a different weight-prefetch order.
constexpr int64_t kBlockedChunkBytes = 6144;

/// Moving chunks loaded ahead of the one being multiplied.
constexpr int64_t kLoadAheadChunks = 2;
/// With a resident moving operand: a block's weight chunks are recorded right before its multiplies; the segment's list
/// scheduler starts them as early as SBUF allows.
constexpr int64_t kResidentLoadAheadChunks = 0;
/// Slots of a streamed chunk ring: the chunk in use, kLoadAheadChunks loading, one spare.
constexpr int64_t kChunkSlots = kLoadAheadChunks + 2;
/// Slots of the per-output-block tiles (staging, bias rows, sums): one filled while one drains.
constexpr int64_t kEpilogueSlots = 2;

const char *placeName(OperandPlace place) { return place == OperandPlace::Hbm ? "hbm" : "sbuf"; }

const char *buffersName(StationaryBuffers buffers) {
  switch (buffers) {
    case StationaryBuffers::Streamed: return "streamed";
    case StationaryBuffers::Stripe: return "stripe";
    case StationaryBuffers::PerBlock: return "per-block";
  }
  return "";
}

/// The k-chunking for chunks of `chunkTiles` k-tiles at most, balanced so that the last chunk is not much shorter than
/// the others.
void setChunks(MatmulPlan &plan, int64_t chunkTiles) {
  chunkTiles = std::clamp<int64_t>(chunkTiles, 1, plan.kTiles);
  plan.kChunks = ceilDiv(plan.kTiles, chunkTiles);
  plan.chunkTiles = ceilDiv(plan.kTiles, plan.kChunks);
}

/// Per-partition SBUF bytes of the library kernel's fixed tiles (see emit.cpp's MatmulEmitter).
int64_t sbufBytes(const MatmulPlan &plan) {
  const MatmulProblem &p = plan.problem;
  const int64_t element = dtypeSizeBytes(p.dtype);
  const int64_t stationaryChunk = plan.chunkTiles * plan.blockCols() * element;
  const int64_t movingChunk = plan.chunkTiles * plan.panelCols() * element;
  int64_t bytes = plan.stationarySlots * stationaryChunk + plan.movingSlots * movingChunk;
  if (p.output == OperandPlace::Hbm)
    bytes += kEpilogueSlots * plan.groupTiles * plan.tileN * dtypeSizeBytes(p.outputDtype);
  if (p.columnBias) bytes += 2 * kEpilogueSlots * plan.tileN * dtypeSizeBytes(DType::F32);
  return bytes;
}

/// The moving-from-HBM plan with W = `panelTiles` n-tiles per DMA row and G = `groupTiles`.
MatmulPlan streamingPlan(const MachineProfile &profile, MatmulPlan plan, int64_t groupTiles, int64_t panelTiles,
                         bool stripe) {
  const int64_t element = dtypeSizeBytes(plan.problem.dtype);
  plan.groupTiles = groupTiles;
  plan.panelTiles = panelTiles;
  plan.nPanels = ceilDiv(plan.nTiles, panelTiles);
  // Chunk: about kDmaBytesPerEngineTarget per DMA engine for a moving chunk, and a stationary chunk (G * TM / (W * TN)
  // times wider) of at most kStationaryChunkTargets times that.
  const int64_t bytesPerPartition = kDmaBytesPerEngineTarget / dmaPartitionsPerEngine(profile, plan.tileK);
  const int64_t stationaryLimit =
      std::max<int64_t>(1, kStationaryChunkTargets * bytesPerPartition / (plan.blockCols() * element));
  plan.chunkTiles = std::clamp<int64_t>(ceilDiv(bytesPerPartition, plan.panelCols() * element), 1,
                                        std::min(plan.kTiles, stationaryLimit));
  plan.kChunks = ceilDiv(plan.kTiles, plan.chunkTiles);
  // W > 1: a panel's chunks stay until its last n-tile is done, plus the next ones loading ahead.
  plan.loadAheadSteps = kLoadAheadChunks;
  plan.movingSlots = panelTiles > 1 ? plan.kChunks + kLoadAheadChunks + 1 : kChunkSlots;
  plan.stationaryBuffers = stripe ? StationaryBuffers::Stripe : StationaryBuffers::Streamed;
  plan.stationarySlots = stripe ? plan.kChunks : kChunkSlots;
  plan.mBlocks = ceilDiv(plan.mTiles, plan.groupTiles);
  return plan;
}

}  // namespace

int64_t MatmulPlan::stationaryRunBytes() const {
  const int64_t element = dtypeSizeBytes(problem.dtype);
  return problem.stationaryLayout == StationaryLayout::Blocked ? chunkTiles * blockCols() * element
                                                               : blockCols() * element;
}

int64_t MatmulPlan::movingRunBytes() const {
  return problem.moving == OperandPlace::Hbm ? panelCols() * dtypeSizeBytes(problem.dtype) : 0;
}

MatmulPlan planMatmul(const MachineProfile &profile, const MatmulProblem &problem) {
  MatmulPlan plan;
  plan.problem = problem;
  plan.tileK = std::min(profile.partitions, profile.pe.rows);
  plan.tileM = problem.mTileColumns > 0 ? problem.mTileColumns : std::min(profile.partitions, profile.pe.cols);
  plan.tileN = profile.psum.bankFp32Elements;
  plan.kTiles = ceilDiv(problem.K, plan.tileK);
  plan.mTiles = ceilDiv(problem.M, plan.tileM);
  plan.nTiles = ceilDiv(problem.N, plan.tileN);
  const int64_t banks = profile.psum.banks;
  const int64_t element = dtypeSizeBytes(problem.dtype);

  if (problem.moving == OperandPlace::Sbuf) {
    // The moving operand is already in SBUF, so a wider m-block saves no traffic: two m-blocks of half the banks
    // alternate, one's matmuls hiding the other's evictions. Each stationary byte is loaded once, in chunks of
    // kBlockedChunkBytes per partition (row-major: blockCols per k-tile).
    plan.groupTiles = std::min(plan.mTiles, std::max<int64_t>(1, banks / 2));
    if (problem.maxGroupTiles > 0) plan.groupTiles = std::min(plan.groupTiles, problem.maxGroupTiles);
    plan.mBlocks = ceilDiv(plan.mTiles, plan.groupTiles);
    setChunks(plan, ceilDiv(kBlockedChunkBytes, plan.blockCols() * element));
    plan.nPanels = plan.nTiles;
    plan.stationaryBuffers = StationaryBuffers::PerBlock;
    plan.multiplyOrder = MultiplyOrder::MTileOuter;
    plan.loadAheadSteps = kResidentLoadAheadChunks;
    return plan;
  }

  // Moving from HBM: G = all banks when K is long enough that one m-block's matmuls hide the next one's evictions, half
  // of them (so two alternate) when K is short. The moving operand is read once per m-block, so G is as wide as PSUM
  // allows; its DMA rows are W n-tiles wide, W the least that reaches the full-rate run, when the panel's chunks fit
  // SBUF next to the stripe.
  const int64_t groupTiles = std::min(plan.mTiles, plan.kTiles >= banks ? banks : std::max<int64_t>(1, banks / 2));
  const int64_t sbuf = profile.sbuf.bytesPerPartition;
  const int64_t widest = std::min(plan.nTiles, ceilDiv(kFullRateRunBytes, plan.tileN * element));
  if (problem.allowStripe) {
    for (int64_t panel = widest; panel > 1; panel /= 2) {
      MatmulPlan wide = streamingPlan(profile, plan, groupTiles, panel, /*stripe=*/true);
      if (sbufBytes(wide) <= sbuf) return wide;
    }
    // One n-tile per DMA row; halving G is the last resort for keeping the stripe resident.
    MatmulPlan narrow = streamingPlan(profile, plan, groupTiles, 1, /*stripe=*/true);
    if (sbufBytes(narrow) <= sbuf) return narrow;
    if (groupTiles > 1) {
      MatmulPlan halved = streamingPlan(profile, plan, groupTiles / 2, 1, /*stripe=*/true);
      if (sbufBytes(halved) <= sbuf) return halved;
    }
  }
  return streamingPlan(profile, plan, groupTiles, 1, /*stripe=*/false);
}

std::string MatmulPlan::str() const {
  const MatmulProblem &p = problem;
  std::string text =
      fmt::format("matmul M={} N={} K={} {} -> {}\n", p.M, p.N, p.K, dtypeName(p.dtype), dtypeName(p.outputDtype));
  text += fmt::format("operands: stationary hbm {}, moving {}, output {}{}\n",
                      p.stationaryLayout == StationaryLayout::Blocked ? "blocked" : "row-major", placeName(p.moving),
                      placeName(p.output), p.columnBias ? ", column bias" : "");
  text += fmt::format("tiles: TK={} TM={} TN={}; k-tiles {}, m-tiles {}, n-tiles {}\n", tileK, tileM, tileN, kTiles,
                      mTiles, nTiles);
  text += fmt::format("m-blocks: {} of {} m-tiles ({} columns)\n", mBlocks, groupTiles, blockCols());
  text += fmt::format("k-chunks: {} of {} k-tiles, loaded {} ahead\n", kChunks, chunkTiles, loadAheadSteps);
  text += fmt::format("stationary: {}{}, {} B contiguous per partition\n", buffersName(stationaryBuffers),
                      stationarySlots > 0 ? fmt::format(" ({} tiles)", stationarySlots) : "", stationaryRunBytes());
  if (p.moving == OperandPlace::Hbm)
    text += fmt::format(
        "moving: {} panels of {} n-tiles, ring of {}, {} B "
        "contiguous per partition\n",
        nPanels, panelTiles, movingSlots, movingRunBytes());
  else
    text += "moving: resident\n";
  text += fmt::format("multiplies: {}\n", multiplyOrder == MultiplyOrder::MTileOuter
                                              ? "m-tile by m-tile over the whole K, each evicted when done"
                                              : "k-chunk by k-chunk over the m-block's banks");
  return text;
}

}  // namespace tessel::nc::kernels
