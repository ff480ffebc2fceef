// The matmul family's emit (emit.h). Buffers are rings of tiles that live for the whole kernel (TileRing) unless the
// plan says PerBlock: a stripe chunk is reloaded for the next m-block as soon as the current one's last n-tile has used
// it (the dependence analysis orders the reload after those reads), so a stripe change needs no extra SBUF and its DMA
// spreads over a whole n-tile; moving chunks rotate through plan.movingSlots tiles, loaded plan.loadAheadSteps steps
// ahead; output staging, bias rows and epilogue sums are double-buffered.
//
// Epilogue: ACT's bias operand is per partition (= per output row). A column bias is an addend (a row broadcast over
// the partitions), which DVE adds on the eviction (tensor_tensor reading PSUM costs one pass) before ACT applies the
// activation. Plain evictions to HBM staging alternate ACT and DVE.
#include "targets/nc/kernels/matmul/emit.h"

#include <algorithm>
#include <vector>

#include "targets/nc/tile/tile_ring.h"

namespace tessel::nc::kernels {
namespace {

using tile::HbmView;
using tile::KernelBuilder;
using tile::TileRing;
using tile::TileView;

/// Slots of the per-output-block tiles: one being filled while the previous one drains.
constexpr int64_t kEpilogueSlots = 2;

class MatmulEmitter {
 public:
  MatmulEmitter(KernelBuilder &b, const MatmulPlan &plan, const MatmulOperands &operands)
      : b_(b),
        plan_(plan),
        p_(plan.problem),
        ops_(operands),
        stationaryRing_(MemSpace::SBUF, operands.tilePrefix + "stationary", p_.dtype, plan.tileK,
                        {plan.chunkTiles * plan.blockCols()}, std::max<int64_t>(1, plan.stationarySlots)),
        movingRing_(MemSpace::SBUF, operands.tilePrefix + "moving", p_.dtype, plan.tileK,
                    {plan.chunkTiles * plan.panelCols()}, std::max<int64_t>(1, plan.movingSlots)),
        stagingRing_(MemSpace::SBUF, operands.tilePrefix + "out", p_.outputDtype, plan.tileM,
                     {plan.groupTiles * stagingCols()}, kEpilogueSlots),
        biasRing_(MemSpace::SBUF, operands.tilePrefix + "bias", DType::F32, plan.tileM, {stagingCols()},
                  kEpilogueSlots),
        sumRing_(MemSpace::SBUF, operands.tilePrefix + "biased", DType::F32, plan.tileM, {stagingCols()},
                 kEpilogueSlots) {}

  void emit() {
    for (int64_t mb = 0; mb < plan_.mBlocks; ++mb)
      for (int64_t nb = 0; nb < plan_.nTiles; ++nb)
        for (int64_t kc = 0; kc < plan_.kChunks; ++kc) steps_.push_back(Step{mb, nb, kc});
    const size_t blockChunks = static_cast<size_t>(plan_.mBlocks * plan_.kChunks);
    stripeLoaded_.assign(blockChunks, false);
    blockChunks_.assign(blockChunks, std::nullopt);
    movingChunks_.assign(static_cast<size_t>(plan_.mBlocks * plan_.nPanels * plan_.kChunks), std::nullopt);
    streamedChunks_.assign(steps_.size(), std::nullopt);
    biasRows_.assign(steps_.size(), std::nullopt);

    for (size_t s = 0; s < steps_.size(); ++s) {
      for (; loaded_ < std::min(steps_.size(), s + static_cast<size_t>(plan_.loadAheadSteps) + 1); ++loaded_)
        loadStep(loaded_);
      const Step &step = steps_[s];
      if (plan_.multiplyOrder == MultiplyOrder::MTileOuter) {
        if (step.kc == plan_.kChunks - 1) multiplyTileByTile(step);
        continue;
      }
      multiplyStep(s);
      // Rolling stripe change: the next m-block's chunk overwrites the one just used for the last time.
      if (plan_.stationaryBuffers == StationaryBuffers::Stripe && step.nb == plan_.nTiles - 1 &&
          step.mb + 1 < plan_.mBlocks)
        stripeChunk(step.mb + 1, step.kc);
      if (step.kc == plan_.kChunks - 1) evict(s);
    }
  }

 private:
  struct Step {
    int64_t mb = 0, nb = 0, kc = 0;
  };

  /// Columns per m-tile of the HBM staging tile and the bias rows.
  int64_t stagingCols() const { return std::min(p_.N, plan_.tileN); }

  Span mBlockCols(int64_t mb) const { return tileOf(mb, plan_.blockCols(), p_.M); }
  Span nTile(int64_t nb) const { return tileOf(nb, plan_.tileN, p_.N); }
  Span panelCols(int64_t panel) const { return tileOf(panel, plan_.panelCols(), p_.N); }
  /// The k-tiles of chunk kc: [start, start + count); all full but possibly the last of K.
  Span chunkKTiles(int64_t kc) const { return tileOf(kc, plan_.chunkTiles, plan_.kTiles); }
  int64_t kTileRows(int64_t kt) const { return std::min(plan_.tileK, p_.K - kt * plan_.tileK); }
  /// Columns between consecutive k-tiles of a stationary chunk of m-block mb.
  int64_t stationaryWidth(int64_t mb) const {
    return p_.stationaryLayout == StationaryLayout::Blocked ? mBlockCols(mb).count : plan_.blockCols();
  }

  /// Loads rows [kt0 * TK, ...) x `cols` of `src` ([K, X] row-major in HBM) into `chunk` [TK, C * width]: k-tile i of
  /// the chunk lands at columns [i * width, i * width + cols.count) of partitions [0, rows). One DMA for the full
  /// k-tiles, one for a ragged last one.
  void loadRowMajorChunk(const TileView &chunk, const HbmView &src, int64_t kc, Span cols, int64_t width) {
    const Span kts = chunkKTiles(kc);
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
      const int64_t rows = kTileRows(kts.start + full);
      b_.load(chunk.partitionSlice(0, rows).cols(full * width, cols.count),
              src.rows(k0 + full * plan_.tileK, rows).cols(cols.start, cols.count));
    }
  }

  void loadStationary(const TileView &chunk, int64_t mb, int64_t kc) {
    if (p_.stationaryLayout == StationaryLayout::RowMajor) {
      loadRowMajorChunk(chunk, ops_.stationary, kc, mBlockCols(mb), plan_.blockCols());
    } else {
      b_.load(chunk.cols(0, chunkKTiles(kc).count * stationaryWidth(mb)), ops_.stationaryChunk(mb, kc));
    }
  }

  /// Chunk kc of the resident stripe, loaded for m-block mb on first use. The stripe is one tile per chunk for the
  /// whole kernel; m-block mb + 1 reloads chunk kc once m-block mb is done with it.
  TileView stripeChunk(int64_t mb, int64_t kc) {
    if (stripe_.empty())
      for (int64_t i = 0; i < plan_.kChunks; ++i)
        stripe_.push_back(
            b_.sbuf(ops_.tilePrefix + "stationary", p_.dtype, plan_.tileK, {plan_.chunkTiles * plan_.blockCols()}));
    const TileView chunk = stripe_[static_cast<size_t>(kc)];
    auto loaded = stripeLoaded_.begin() + mb * plan_.kChunks + kc;
    if (!*loaded) {
      loadStationary(chunk, mb, kc);
      *loaded = true;
    }
    return chunk;
  }

  size_t blockChunkIndex(int64_t mb, int64_t kc) const { return static_cast<size_t>(mb * plan_.kChunks + kc); }
  size_t movingChunkIndex(int64_t mb, int64_t nb, int64_t kc) const {
    return static_cast<size_t>((mb * plan_.nPanels + nb / plan_.panelTiles) * plan_.kChunks + kc);
  }

  /// Records the loads step s needs: its stationary chunk (streamed, the first m-block's stripe, or the m-block's own
  /// tile), its moving chunk (at the first n-tile of a panel) and, at the start of an output block, the column-bias
  /// row.
  void loadStep(size_t s) {
    const Step &step = steps_[s];
    switch (plan_.stationaryBuffers) {
      case StationaryBuffers::Streamed: {
        TileView chunk = stationaryRing_.next(b_);
        loadStationary(chunk, step.mb, step.kc);
        streamedChunks_[s] = chunk;
        break;
      }
      case StationaryBuffers::Stripe:
        if (step.mb == 0) stripeChunk(step.mb, step.kc);
        break;
      case StationaryBuffers::PerBlock:
        if (step.nb == 0) {
          TileView chunk = b_.sbuf(ops_.tilePrefix + "stationary", p_.dtype, plan_.tileK,
                                   {chunkKTiles(step.kc).count * stationaryWidth(step.mb)});
          loadStationary(chunk, step.mb, step.kc);
          blockChunks_[blockChunkIndex(step.mb, step.kc)] = chunk;
        }
        break;
    }
    if (p_.moving == OperandPlace::Hbm && step.nb % plan_.panelTiles == 0) {
      TileView chunk = movingRing_.next(b_);
      loadRowMajorChunk(chunk, ops_.moving, step.kc, panelCols(step.nb / plan_.panelTiles), plan_.panelCols());
      movingChunks_[movingChunkIndex(step.mb, step.nb, step.kc)] = chunk;
    }
    if (p_.columnBias && step.kc == 0) {
      const Span n = nTile(step.nb);
      TileView row = biasRing_.next(b_).cols(0, n.count);
      b_.load(row, ops_.columnBias.reshapeDim(0, {1, p_.N}).cols(n.start, n.count).broadcast(0, plan_.tileM));
      biasRows_[s] = row;
    }
  }

  TileView stationaryOf(size_t s) {
    const Step &step = steps_[s];
    switch (plan_.stationaryBuffers) {
      case StationaryBuffers::Streamed: return *streamedChunks_[s];
      case StationaryBuffers::Stripe: return stripeChunk(step.mb, step.kc);
      case StationaryBuffers::PerBlock: break;
    }
    return *blockChunks_[blockChunkIndex(step.mb, step.kc)];
  }

  /// The moving operand of k-tile kt (chunk-local index i) for step s: rows on [0, rows).
  TileView movingOf(const Step &step, int64_t i, int64_t kt, Span n) {
    if (p_.moving == OperandPlace::Sbuf) return ops_.movingTile(kt).cols(n.start, n.count);
    const TileView chunk = *movingChunks_[movingChunkIndex(step.mb, step.nb, step.kc)];
    const int64_t inPanel = n.start - panelCols(step.nb / plan_.panelTiles).start;
    return chunk.partitionSlice(0, kTileRows(kt)).cols(i * plan_.panelCols() + inPanel, n.count);
  }

  Span mTileOf(int64_t mb, int64_t j) const {
    const Span cols = mBlockCols(mb);
    const Span inBlock = tileOf(j, plan_.tileM, cols.count);
    return {cols.start + inBlock.start, inBlock.count};
  }

  void multiplyStep(size_t s) {
    const Step &step = steps_[s];
    const Span n = nTile(step.nb);
    const int64_t groupTiles = ceilDiv(mBlockCols(step.mb).count, plan_.tileM);
    if (step.kc == 0) {
      acc_.clear();
      for (int64_t j = 0; j < groupTiles; ++j) {
        const Span m = mTileOf(step.mb, j);
        // In SBUF the accumulator takes the output's partitions; the staging tile starts at 0.
        const int64_t first = p_.output == OperandPlace::Sbuf ? ops_.outputTile(m, n).partitionStart() : 0;
        acc_.push_back(b_.psum(ops_.tilePrefix + "acc", DType::F32, first + m.count, {plan_.tileN})
                           .partitionSlice(first, m.count));
      }
      if (p_.columnBias) currentBias_ = *biasRows_[s];
    }
    const TileView stationary = stationaryOf(s);
    const int64_t width = stationaryWidth(step.mb);
    const Span kts = chunkKTiles(step.kc);
    for (int64_t i = 0; i < kts.count; ++i) {
      const int64_t kt = kts.start + i, rows = kTileRows(kt);
      const TileView moving = movingOf(step, i, kt, n).partitionSlice(0, rows);
      for (int64_t j = 0; j < groupTiles; ++j) {
        const Span m = mTileOf(step.mb, j);
        const TileView weights = stationary.partitionSlice(0, rows).cols(i * width + j * plan_.tileM, m.count);
        b_.matmul(acc_[static_cast<size_t>(j)].cols(0, n.count), weights, moving, /*accumulate=*/kt > 0);
      }
    }
  }

  /// MultiplyOrder::MTileOuter (plan.h): each output tile of the step's m-block accumulates over the whole K and is
  /// evicted before the next one starts.
  void multiplyTileByTile(const Step &step) {
    const Span n = nTile(step.nb);
    const int64_t groupTiles = ceilDiv(mBlockCols(step.mb).count, plan_.tileM);
    const int64_t width = stationaryWidth(step.mb);
    for (int64_t j = 0; j < groupTiles; ++j) {
      const Span m = mTileOf(step.mb, j);
      const TileView dst = ops_.outputTile(m, n);
      // Sized to the n-tile, so that short tiles share a PSUM bank.
      const TileView acc = b_.psum(ops_.tilePrefix + "acc", DType::F32, dst.partitionStart() + m.count, {n.count})
                               .partitionSlice(dst.partitionStart(), m.count);
      for (int64_t kc = 0; kc < plan_.kChunks; ++kc) {
        const TileView stationary = *blockChunks_[blockChunkIndex(step.mb, kc)];
        const Span kts = chunkKTiles(kc);
        for (int64_t i = 0; i < kts.count; ++i) {
          const int64_t kt = kts.start + i, rows = kTileRows(kt);
          b_.matmul(acc, stationary.partitionSlice(0, rows).cols(i * width + j * plan_.tileM, m.count),
                    ops_.movingTile(kt).cols(n.start, n.count).partitionSlice(0, rows), /*accumulate=*/kt > 0);
        }
      }
      EpilogueOperands operands;
      if (ops_.partitionBias) operands.partitionBias = ops_.partitionBias(m);
      if (ops_.residual) operands.addend = ops_.residual(m, n);
      emitEpilogue(b_, dst, acc, operands, ops_.epilogue);
    }
  }

  /// PSUM -> SBUF with the epilogue; with the output in HBM, then the stores of the output block.
  void evict(size_t s) {
    const Step &step = steps_[s];
    const Span n = nTile(step.nb);
    const Span cols = mBlockCols(step.mb);
    const int64_t groupTiles = static_cast<int64_t>(acc_.size());
    if (p_.output == OperandPlace::Sbuf) {
      for (int64_t j = 0; j < groupTiles; ++j) {
        const Span m = mTileOf(step.mb, j);
        EpilogueOperands operands;
        if (ops_.partitionBias) operands.partitionBias = ops_.partitionBias(m);
        if (ops_.residual) operands.addend = ops_.residual(m, n);
        emitEpilogue(b_, ops_.outputTile(m, n), acc_[static_cast<size_t>(j)].cols(0, n.count), operands, ops_.epilogue);
      }
      return;
    }
    const TileView staging = stagingRing_.next(b_);
    for (int64_t j = 0; j < groupTiles; ++j) {
      const Span m = mTileOf(step.mb, j);
      EpilogueOperands operands;
      if (p_.columnBias) {
        operands.addend = currentBias_.partitionSlice(0, m.count);
        if (!ops_.epilogue.activation.empty())
          operands.sumScratch = sumRing_.next(b_).partitionSlice(0, m.count).cols(0, n.count);
      }
      operands.copyEngine = j % 2 == 0 ? Engine::ACT : Engine::DVE;
      emitEpilogue(b_, staging.partitionSlice(0, m.count).cols(j * stagingCols(), n.count),
                   acc_[static_cast<size_t>(j)].cols(0, n.count), operands, ops_.epilogue);
    }
    // Full m-tiles leave in one DMA ([TM, G, n] -> rows of out); a ragged last m-tile in its own.
    const int64_t full = cols.count / plan_.tileM;
    if (full > 0) {
      TileView src = staging.reshapeFree({plan_.groupTiles, stagingCols()}).slice(0, 0, full).slice(1, 0, n.count);
      b_.store(ops_.output.rows(cols.start, full * plan_.tileM)
                   .cols(n.start, n.count)
                   .reshapeDim(0, {full, plan_.tileM})
                   .transpose(0, 1),
               src);
    }
    if (full < groupTiles) {
      const int64_t m = cols.count - full * plan_.tileM;
      b_.store(ops_.output.rows(cols.start + full * plan_.tileM, m).cols(n.start, n.count),
               staging.partitionSlice(0, m).cols(full * stagingCols(), n.count));
    }
  }

  KernelBuilder &b_;
  const MatmulPlan &plan_;
  const MatmulProblem &p_;
  const MatmulOperands &ops_;
  TileRing stationaryRing_, movingRing_, stagingRing_, biasRing_, sumRing_;
  std::vector<Step> steps_;
  size_t loaded_ = 0;                                    // Steps whose loads are recorded.
  std::vector<TileView> stripe_;                         // The resident stripe, one tile per chunk.
  std::vector<bool> stripeLoaded_;                       // By (m-block, chunk).
  std::vector<std::optional<TileView>> blockChunks_;     // PerBlock chunks by (m-block, chunk).
  std::vector<std::optional<TileView>> streamedChunks_;  // Streamed stationary chunks by step.
  std::vector<std::optional<TileView>> movingChunks_;    // By (m-block, panel, chunk).
  std::vector<std::optional<TileView>> biasRows_;        // By step (first chunk of an output block).
  std::vector<TileView> acc_;                            // PSUM accumulators of the current output block.
  TileView currentBias_;
};

}  // namespace

void emitMatmul(KernelBuilder &builder, const MatmulPlan &plan, const MatmulOperands &operands) {
  MatmulEmitter(builder, plan, operands).emit();
}

}  // namespace tessel::nc::kernels
