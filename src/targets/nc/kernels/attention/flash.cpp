// Variant "flash" of the attention family (flash.h): flash attention in the tile DSL, q, k, v and o
// in HBM.
//
// Rows are handled in superblocks of SB = P * R rows, R = (PSUM bank fp32 elements) / P, so that a
// superblock of keys is exactly one PSUM bank of scores per query row (512 keys on both profiles). A
// full superblock sits in SBUF "interleaved": partition p holds rows R*p .. R*p + R-1, so each DMA
// reads R*D contiguous elements per partition (512 B for D = 64) instead of one row; its tile t
// (rows R*p + t) is a set of P rows. A ragged last superblock uses the natural layout (tile t holds
// rows t*P + p). Softmax does not care about the order of keys, and queries go back to HBM through
// the same layout, so the interleaving is invisible outside the kernel; the causal mask is affine in
// (partition, column) within each key tile in both layouts, so affine_select builds it.
//
// Per head: k and v superblocks are loaded once (prefetched during the previous head), k^T [D, SB]
// is made by PE transposes (D on partitions: the contraction dim of q k^T), v stays as loaded (keys
// on partitions: the contraction dim of p v) with a ones column appended, so that p v also yields
// the row sums of p. Per query superblock, its R query tiles of P rows go through each key block
// together (stage by stage, so the engines overlap the tiles):
//   s     = q^T_tile^T @ k^T_block              PE, one matmul [P, SB] into one PSUM bank (fp32)
//   s    += I^T @ causal mask                   PE, diagonal block only (mask built by affine_select)
//  (s     -> SBUF                                ACT, where DVE and ACT share the PSUM port)
//   nm    = min(-scale * rowmax(s), nm_prev)     DVE reduce + tensor_scalar: the negated running max
//   alpha = exp(nm - nm_prev)                    ACT: the rescale factor of the previous blocks
//   p     = exp(scale * s + nm)                  ACT, bf16 out
//   p^T   = PE transposes of p (per key tile), PSUM -> SBUF copy (DVE and ACT alternate)
//   o     = o * alpha + p^T^T @ [v | 1]          PE (R matmuls accumulating in PSUM) + rescale-add
// and at the end o[:, :D] / o[:, D] goes to the output superblock, stored with one DMA. Causal: key
// blocks after the diagonal are skipped. The score matrix never leaves PSUM/SBUF.
//
// Non-causal with resident keys, each query superblock runs in two passes instead, software-
// pipelined (pass 1 of superblock i is recorded before pass 2 of superblock i - 1):
//   pass 1: s = q^T_tile^T @ k^T_block (PE), DVE takes the row max (where DVE and ACT share the PSUM
//           port, nc-v2, from a bf16 copy ACT makes in SBUF); the maxima become diagonal blocks
//           diag(max_u) [P, SB]
//   pass 2: s^T = k^T_tile^T @ q^T [keys, queries] (PE), s^T += (-1)^T @ diag(max) (PE),
//           p^T = exp(scale * s^T) (ACT, one exp per score, straight into SBUF as bf16),
//           o += p^T_u^T @ [v | 1] (PE, one accumulation group per query tile over all keys)
// so p is never transposed or evicted from PSUM and o is never rescaled. Each score is read from
// PSUM twice; on nc-v2 both reads are ACT's, the faster reader of the port it shares with DVE.
//
// PSUM tiles come from fixed rings (TileRing) sized to the banks, so which bank a block uses never
// depends on allocation history, and the ring depth is the pipelining depth between PE and ACT/DVE.
#include "targets/nc/kernels/attention/flash.h"

#include <algorithm>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "targets/nc/kernels/attention/plan.h"
#include "targets/nc/kernels/identity.h"
#include "targets/nc/kernels/tiling.h"
#include "targets/nc/tile/tile_ring.h"

namespace tessel::nc::kernels {
namespace {

using tile::HbmView;
using tile::KernelBuilder;
using tile::TileRing;
using tile::TileView;

/// Share of SBUF the resident keys of two heads (the current one and the prefetched next) may use;
/// beyond it, key blocks are reloaded per query superblock.
constexpr int64_t kResidentKeysSbufFraction = 2;

/// Where the rows of one superblock sit in SBUF: tile t, partition p holds row
/// base + t * tileStride + p * partitionStride; in score/key space its column is t * P + p.
struct RowLayout {
  int64_t base = 0, rows = 0;
  int64_t tiles = 0;
  int64_t tileStride = 0, partitionStride = 0;
  int64_t partitions = 0;

  bool interleaved() const { return partitionStride > 1; }
  /// Rows (partitions) in tile t.
  int64_t count(int64_t t) const {
    return interleaved() ? partitions : std::min(partitions, rows - t * partitions);
  }
  /// Columns t * P + p in use: all tiles but the last are full.
  int64_t width() const { return (tiles - 1) * partitions + count(tiles - 1); }
};

/// Sizes of one attention instance.
struct AttentionShape {
  int64_t H = 0, S = 0, D = 0;
  int64_t partitions = 0;       // P.
  int64_t rowsPerPartition = 0;  // R.
  int64_t superRows = 0;        // SB = P * R.
  int64_t superBlocks = 0;
  int64_t bankColumns = 0;      // fp32 elements of one PSUM bank.
  float scale = 1;
  bool causal = false;

  RowLayout layout(int64_t sb) const {
    RowLayout layout;
    layout.base = sb * superRows;
    layout.rows = std::min(superRows, S - layout.base);
    layout.partitions = partitions;
    if (layout.rows == superRows && rowsPerPartition > 1) {
      layout.tiles = rowsPerPartition;
      layout.tileStride = 1;
      layout.partitionStride = rowsPerPartition;
    } else {
      layout.tiles = ceilDiv(layout.rows, partitions);
      layout.tileStride = partitions;
      layout.partitionStride = 1;
    }
    return layout;
  }
};

/// One key superblock ready for use: k^T [D, width] and v [P, tiles * (D + 1)]: tile t at columns
/// t * (D + 1), its last column all ones so that p v also yields the row sums of p.
struct KeyBlock {
  TileView kT, v;
};

/// Slots of the PSUM rings: scores (one bank each), p^T and q^T/k^T transposes (bf16, half a bank
/// at 512 columns), and p v outputs, as many as fit the banks.
struct PsumSlots {
  int64_t scores = 0, probsT = 0, outputs = 0, transposes = 0;
};

/// `tiles`: the query tiles that go through a key block together.
PsumSlots planPsum(const MachineProfile &profile, int64_t tiles, int64_t headDim, bool twoPass) {
  const int64_t bankBytes = profile.psum.bytesPerPartition / profile.psum.banks;
  const int64_t halfBank = profile.psum.bankFp32Elements * dtypeSizeBytes(DType::BF16);
  const int64_t outputBytes = (headDim + 1) * dtypeSizeBytes(DType::F32);
  auto banksFor = [&](int64_t count, int64_t bytes) {
    const int64_t perBank = std::max<int64_t>(1, bankBytes / bytes);
    return ceilDiv(count, perBank);
  };
  // Two passes: probsT counts the transposed score banks (f32, a bank each).
  PsumSlots slots = twoPass ? PsumSlots{2, 2, tiles, 2} : PsumSlots{tiles, tiles, tiles, 2};
  auto banks = [&] {
    if (twoPass) return slots.scores + slots.probsT + banksFor(slots.outputs, outputBytes) + banksFor(slots.transposes, halfBank);
    return slots.scores + banksFor(slots.probsT, halfBank) + banksFor(slots.outputs, outputBytes) +
           banksFor(slots.transposes, halfBank);
  };
  while (banks() > profile.psum.banks) {
    if (slots.transposes > 1) --slots.transposes;
    else if (slots.probsT > 2) --slots.probsT;
    else if (slots.outputs > 2) --slots.outputs;
    else if (slots.scores > 2) --slots.scores;
    else break;
  }
  return slots;
}

/// Online-softmax state of a query superblock: per-row values as [rows, tiles] (column u for query
/// tile u) and the running outputs per tile.
struct BlockState {
  TileView negMax;                  // -scale * running max.
  std::optional<TileView> alpha;    // This block's rescale factor (none for the first block).
  std::vector<TileView> out;        // Running unnormalised output per tile in PSUM, [nq, D + 1] fp32;
                                    // column D is the running sum of exp (from v's ones column).
};

/// Whether the keys of two heads (the current one and the prefetched next) fit the share of SBUF
/// they may use: v rows and k^T per superblock.
bool keysStayResident(const AttentionShape &shape, const MachineProfile &profile) {
  const int64_t perHead =
      shape.superBlocks * shape.rowsPerPartition * (shape.D + 1 + shape.partitions) * dtypeSizeBytes(DType::BF16);
  return 2 * perHead <= profile.sbuf.bytesPerPartition / kResidentKeysSbufFraction;
}

class AttentionBuilder {
 public:
  /// `allowResident` false reloads key blocks per query superblock even when a head's keys fit SBUF.
  AttentionBuilder(KernelBuilder &b, const AttentionShape &shape, bool allowResident)
      : b_(b), shape_(shape), allowResident_(allowResident), engines_(planEngines(b.profile())),
        resident_(allowResident && keysStayResident(shape, b.profile())), twoPass_(resident_ && !shape.causal),
        psumSlots_(planPsum(b.profile(), shape.rowsPerPartition, shape.D, twoPass_)),
        scoresRing_(MemSpace::PSUM, "scores", DType::F32, shape.partitions, {shape.bankColumns}, psumSlots_.scores),
        probsTRing_(MemSpace::PSUM, twoPass_ ? "s_t_ps" : "p_t_ps", twoPass_ ? DType::F32 : DType::BF16,
                    shape.partitions, {shape.superRows}, psumSlots_.probsT),
        outputRing_(MemSpace::PSUM, "o_ps", DType::F32, shape.partitions, {shape.D + 1}, psumSlots_.outputs),
        transposeRing_(MemSpace::PSUM, "x_t_ps", DType::BF16, shape.D, {shape.superRows}, psumSlots_.transposes) {}

  void build(const FlashOperands &operands) {
    q_ = operands.q, k_ = operands.k, v_ = operands.v, o_ = operands.o;

    std::vector<std::pair<int64_t, int64_t>> items;  // (head, query superblock).
    for (int64_t h = 0; h < shape_.H; ++h)
      for (int64_t qsb = 0; qsb < shape_.superBlocks; ++qsb) items.push_back({h, qsb});
    std::vector<TileView> nextKRows, nextVRows;
    // With several key superblocks the first head's k goes first, then q, then v: the first scores
    // need k and q only (pass 1 needs no v at all). With one, k and v of it come before q.
    const bool kFirst = twoPass_ || shape_.superBlocks > 1;
    if (resident_) loadKeyRows(0, &nextKRows, kFirst ? nullptr : &nextVRows);
    std::optional<TileView> nextQ = loadRows(q_, 0, shape_.layout(0), "q", D());
    if (resident_ && kFirst) loadKeyRows(0, nullptr, &nextVRows);
    std::optional<FirstPass> pending;
    for (size_t i = 0; i < items.size(); ++i) {
      const auto [h, qsb] = items[i];
      if (resident_ && qsb == 0) {
        keys_.clear();
        for (int64_t sb = 0; sb < shape_.superBlocks; ++sb)
          keys_.push_back(KeyBlock{transposeRows(nextKRows[static_cast<size_t>(sb)], shape_.layout(sb), "k_t"),
                                   nextVRows[static_cast<size_t>(sb)]});
        nextKRows.clear(), nextVRows.clear();
        if (h + 1 < shape_.H) loadKeyRows(h + 1, &nextKRows, &nextVRows);
      }
      TileView qRows = *nextQ;
      if (i + 1 < items.size()) nextQ = loadRows(q_, items[i + 1].first, shape_.layout(items[i + 1].second), "q", D());
      if (!twoPass_) {
        querySuperblock(h, qsb, qRows);
        continue;
      }
      // Software pipelining: superblock i's maxima are recorded before superblock i - 1's
      // exponentials, so DVE works on the next while ACT and PE finish the previous.
      FirstPass first = firstPass(h, qsb, qRows);
      if (pending) secondPass(*pending);
      pending = std::move(first);
    }
    if (pending) secondPass(*pending);
  }

 private:
  int64_t P() const { return shape_.partitions; }
  int64_t D() const { return shape_.D; }

  HbmView headRows(const HbmView &x, int64_t h, int64_t start, int64_t count) const {
    return x.slice(0, h, 1).slice(1, start, count);  // [1, count, D]
  }

  /// Loads the rows of `layout` of head h of x into a [P, tiles * slot] tile: tile t at columns
  /// [t * slot, t * slot + D). With slot = D + 1 the last column of each tile is set to ones.
  TileView loadRows(const HbmView &x, int64_t h, const RowLayout &layout, const std::string &name, int64_t slot) {
    TileView rows = b_.sbuf(name, DType::BF16, P(), {layout.tiles * slot});
    auto slots = [&](const TileView &view) { return view.reshapeFree({layout.tiles, slot}); };
    if (layout.interleaved()) {
      b_.load(slots(rows).slice(1, 0, D()), headRows(x, h, layout.base, layout.rows)
                                              .reshapeDim(1, {P(), shape_.rowsPerPartition})
                                              .transpose(0, 1));  // [P, 1, R, D]
    } else {
      for (int64_t t = 0; t < layout.tiles; ++t)
        b_.load(rows.partitionSlice(0, layout.count(t)).cols(t * slot, D()),
                headRows(x, h, layout.base + t * P(), layout.count(t)).transpose(0, 1));  // [n, 1, D]
    }
    if (slot > D()) b_.memset(slots(rows).slice(1, D(), slot - D()), 1.0f);
    return rows;
  }

  void storeRows(const HbmView &x, int64_t h, const RowLayout &layout, const TileView &rows) {
    if (layout.interleaved()) {
      b_.store(headRows(x, h, layout.base, layout.rows).reshapeDim(1, {P(), shape_.rowsPerPartition}).transpose(0, 1),
               rows);
      return;
    }
    for (int64_t t = 0; t < layout.tiles; ++t)
      b_.store(headRows(x, h, layout.base + t * P(), layout.count(t)).transpose(0, 1),
               rows.partitionSlice(0, layout.count(t)).cols(t * D(), D()));
  }

  /// Loads head h's k rows (into `kRows`) and v rows (into `vRows`), superblock by superblock;
  /// either may be null.
  void loadKeyRows(int64_t h, std::vector<TileView> *kRows, std::vector<TileView> *vRows) {
    for (int64_t sb = 0; sb < shape_.superBlocks; ++sb) {
      if (kRows) kRows->push_back(loadRows(k_, h, shape_.layout(sb), "k", D()));
      if (vRows) vRows->push_back(loadRows(v_, h, shape_.layout(sb), "v", D() + 1));
    }
  }

  /// x^T [D, width] in SBUF from rows [P, tiles * D]: one PE transpose per tile, one PSUM eviction.
  TileView transposeRows(const TileView &rows, const RowLayout &layout, const std::string &name) {
    TileView ps = transposeRing_.next(b_);
    for (int64_t t = 0; t < layout.tiles; ++t)
      b_.transpose(ps.cols(t * P(), layout.count(t)), rows.partitionSlice(0, layout.count(t)).cols(t * D(), D()));
    TileView out = b_.sbuf(name, DType::BF16, D(), {layout.tiles * P()});
    // Two passes keep DVE's PSUM time for the maxima; ACT reads PSUM faster where they share the port.
    if (twoPass_)
      b_.copy(out.cols(0, layout.width()), ps.cols(0, layout.width()), Engine::ACT);
    else
      b_.copy(out.cols(0, layout.width()), ps.cols(0, layout.width()));
    return out;
  }

  KeyBlock keyBlock(int64_t h, int64_t kb) {
    if (resident_) return keys_[static_cast<size_t>(kb)];
    const RowLayout layout = shape_.layout(kb);
    TileView kRows = loadRows(k_, h, layout, "k", D());
    TileView vRows = loadRows(v_, h, layout, "v", D() + 1);
    return KeyBlock{transposeRows(kRows, layout, "k_t"), vRows};
  }

  /// The causal mask of query tile u against the keys of the same superblock, bf16: 0 where key row
  /// <= query row, kMaskedScore elsewhere. Query row u*ts + p*ps, key row t*ts + j*ps (ts, ps: the
  /// layout's strides), so each key tile's condition is affine in (p, j).
  TileView diagonalMask(const RowLayout &layout, int64_t u) {
    const std::pair<int64_t, int64_t> key{layout.rows, u};
    if (auto it = masks_.find(key); it != masks_.end()) return it->second;
    TileView mask = b_.sbuf("causal_mask", DType::BF16, P(), {shape_.bankColumns});
    b_.memset(mask.cols(0, layout.width()), 0.0f, Engine::POOL);
    const float ps = static_cast<float>(layout.partitionStride), ts = static_cast<float>(layout.tileStride);
    for (int64_t t = 0; t < layout.tiles; ++t) {
      TileView keys = mask.cols(t * P(), layout.count(t));
      b_.affineSelect(keys, keys, /*partitionMultiplier=*/ps, /*freeMultiplier=*/-ps,
                      /*offset=*/static_cast<float>(u - t) * ts, kMaskedScore);
    }
    masks_.emplace(key, mask);
    return mask;
  }

  /// The [P, P] fp32 identity: PE feeds the running output back into PSUM as identity^T @ o.
  TileView identityF32() {
    if (!identityF32_) {
      identityF32_ = b_.sbuf("identity_f32", DType::F32, P(), {P()});
      b_.copy(*identityF32_, identity(), Engine::POOL);
    }
    return *identityF32_;
  }

  /// The [P, P] bf16 identity: PE adds a mask to scores in PSUM as identity^T @ mask.
  TileView identity() {
    if (!identity_) identity_ = makeIdentity(b_, "identity", DType::BF16);
    return *identity_;
  }

  /// An fp32 [rows, columns] tile of per-row values (one column per query tile).
  TileView rowValues(const std::string &name, int64_t rows, int64_t columns) {
    return b_.sbuf(name, DType::F32, P(), {columns}).partitionSlice(0, rows);
  }

  /// Scores of every query tile against one key block: one matmul per tile into its own PSUM bank,
  /// then (stageScores) an ACT copy to SBUF, and the causal mask on the diagonal block.
  std::vector<TileView> scoreBlock(const TileView &qT, const RowLayout &queries, const KeyBlock &key,
                                   const RowLayout &keys, bool diagonal) {
    std::vector<TileView> scores;
    const int64_t width = keys.width();
    for (int64_t u = 0; u < queries.tiles; ++u) {
      const int64_t nq = queries.count(u);
      TileView s = scoresRing_.next(b_).partitionSlice(0, nq).cols(0, width);
      b_.matmul(s, qT.cols(u * P(), nq), key.kT.cols(0, width), /*accumulate=*/false);
      // The diagonal block's mask is added by PE into the same accumulation (PE has time to spare;
      // DVE and ACT do not).
      if (diagonal)
        b_.matmul(s, identity().partitionSlice(0, nq).cols(0, nq),
                  diagonalMask(keys, u).partitionSlice(0, nq).cols(0, width), /*accumulate=*/true);
      if (engines_.stageScores) {
        TileView staged =
            b_.sbuf("scores_sb", DType::F32, P(), {shape_.bankColumns}).partitionSlice(0, nq).cols(0, width);
        b_.copy(staged, s, Engine::ACT);
        s = staged;
      }
      scores.push_back(s);
    }
    return scores;
  }

  /// The online-softmax update of every query tile for one key block, one short chain per tile: its
  /// row max, the running max (kept negated and scaled: the exponential's bias), the rescale factor
  /// alpha of the previous blocks, and the exponentials into `probs`. The row sums come out of the
  /// p v matmul (v's ones column), so ACT accumulates nothing here.
  void softmaxStep(BlockState &state, const RowLayout &queries, const std::vector<TileView> &scores,
                   const std::vector<TileView> &probs, bool first) {
    const int64_t tiles = queries.tiles, rows = queries.count(0);
    auto col = [&](const TileView &values, int64_t u) { return values.partitionSlice(0, queries.count(u)).cols(u, 1); };
    TileView blockMax = rowValues("block_max", rows, tiles);
    TileView negMax = rowValues("neg_max", rows, tiles);
    std::optional<TileView> alpha;
    if (!first) alpha = rowValues("alpha", rows, tiles);
    for (int64_t u = 0; u < tiles; ++u) {
      const TileView &s = scores[static_cast<size_t>(u)];
      b_.reduce(col(blockMax, u), s, AluOp::Maximum);
      if (first) {
        b_.tensorScalar(col(negMax, u), col(blockMax, u), AluOp::Multiply, -shape_.scale, AluOp::None, 0.0f,
                        engines_.smallOps);
      } else {
        // negMax = min(-scale * blockMax, previous negMax); alpha = exp(negMax - previous negMax).
        b_.tensorScalar(col(negMax, u), col(blockMax, u), AluOp::Multiply, -shape_.scale, AluOp::Minimum,
                        col(state.negMax, u), engines_.smallOps);
        b_.activation(col(*alpha, u), col(state.negMax, u), ActFunc::Exp, activationArgs(-1.0f, col(negMax, u)));
      }
      b_.activation(probs[static_cast<size_t>(u)], s, ActFunc::Exp, activationArgs(shape_.scale, col(negMax, u)));
    }
    state.alpha = alpha;
    state.negMax = negMax;
  }

  /// p^T in SBUF: per key tile t, rows [0, count(t)) at columns [t * P, t * P + nq).
  TileView transposeProbs(const TileView &probs, const RowLayout &keys, int64_t nq, Engine engine) {
    TileView ps = probsTRing_.next(b_);
    for (int64_t t = 0; t < keys.tiles; ++t)
      b_.transpose(ps.partitionSlice(0, keys.count(t)).cols(t * P(), nq),
                   probs.partitionSlice(0, nq).cols(t * P(), keys.count(t)));
    TileView pT = b_.sbuf("p_t", DType::BF16, P(), {keys.tiles * P()});
    const int64_t fullTiles = keys.count(keys.tiles - 1) == P() ? keys.tiles : keys.tiles - 1;
    auto tilesView = [&](const TileView &view, int64_t first, int64_t count, int64_t rows) {
      return view.partitionSlice(0, rows)
          .cols(0, keys.tiles * P())
          .reshapeFree({keys.tiles, P()})
          .slice(0, first, count)
          .slice(1, 0, nq);
    };
    if (fullTiles > 0) b_.copy(tilesView(pT, 0, fullTiles, P()), tilesView(ps, 0, fullTiles, P()), engine);
    if (fullTiles < keys.tiles) {
      const int64_t rows = keys.count(keys.tiles - 1);
      b_.copy(tilesView(pT, fullTiles, 1, rows), tilesView(ps, fullTiles, 1, rows), engine);
    }
    return pT;
  }

  /// o = o * alpha + p [v | 1] for query tile u, accumulated in PSUM: the previous block's output is
  /// evicted scaled by alpha (one small instruction) and fed back to PE as identity^T @ (alpha o),
  /// which opens the accumulation group that the block's p v matmuls add to. PE has time to spare;
  /// this keeps the rescale-and-add off DVE.
  void accumulateOutput(BlockState &state, int64_t u, const TileView &pT, const KeyBlock &key, const RowLayout &keys,
                        int64_t nq) {
    TileView ps = outputRing_.next(b_).partitionSlice(0, nq);
    TileView &previous = state.out[static_cast<size_t>(u)];
    if (state.alpha) {
      TileView scaled = b_.sbuf("o_scaled", DType::F32, P(), {D() + 1}).partitionSlice(0, nq);
      const TileView alpha = state.alpha->partitionSlice(0, nq).cols(u, 1);
      if (engines_.outputEvictions == Engine::ACT)
        b_.activation(scaled, previous, ActFunc::Copy, activationArgs(alpha));
      else
        b_.tensorScalar(scaled, previous, AluOp::Multiply, alpha, AluOp::None, 0.0f, engines_.outputEvictions);
      b_.matmul(ps, identityF32().partitionSlice(0, nq).cols(0, nq), scaled, /*accumulate=*/false);
    }
    for (int64_t t = 0; t < keys.tiles; ++t) {
      const int64_t rows = keys.count(t);
      b_.matmul(ps, pT.partitionSlice(0, rows).cols(t * P(), nq),
                key.v.partitionSlice(0, rows).cols(t * (D() + 1), D() + 1),
                /*accumulate=*/state.alpha.has_value() || t > 0);
    }
    previous = ps;
  }

  /// One query superblock against all its key blocks; o / l goes to HBM.
  void querySuperblock(int64_t h, int64_t qsb, const TileView &qRows) {
    const RowLayout queries = shape_.layout(qsb);
    const TileView qT = transposeRows(qRows, queries, "q_t");
    BlockState state;
    state.out.resize(static_cast<size_t>(queries.tiles));
    const int64_t lastKeyBlock = shape_.causal ? qsb : shape_.superBlocks - 1;
    for (int64_t kb = 0; kb <= lastKeyBlock; ++kb) {
      const KeyBlock key = keyBlock(h, kb);
      const RowLayout keys = shape_.layout(kb);
      // Stage by stage over the query tiles, so that each engine has independent work queued.
      std::vector<TileView> scores = scoreBlock(qT, queries, key, keys, shape_.causal && kb == qsb);
      std::vector<TileView> probs;
      for (int64_t u = 0; u < queries.tiles; ++u)
        probs.push_back(b_.sbuf("probs", DType::BF16, P(), {shape_.bankColumns})
                            .partitionSlice(0, queries.count(u))
                            .cols(0, keys.width()));
      softmaxStep(state, queries, scores, probs, /*first=*/kb == 0);
      // Half the p^T evictions run on DVE, half on ACT: that balances the two on both profiles.
      std::vector<TileView> pTs;
      for (int64_t u = 0; u < queries.tiles; ++u)
        pTs.push_back(transposeProbs(probs[static_cast<size_t>(u)], keys, queries.count(u),
                                     2 * u < queries.tiles ? Engine::DVE : Engine::ACT));
      for (int64_t u = 0; u < queries.tiles; ++u)
        accumulateOutput(state, u, pTs[static_cast<size_t>(u)], key, keys, queries.count(u));
    }
    // o / l: column D of the running output holds the row sums.
    TileView outRows = b_.sbuf("o", DType::BF16, P(), {queries.tiles * D()});
    for (int64_t u = 0; u < queries.tiles; ++u) {
      const int64_t nq = queries.count(u);
      const TileView &out = state.out[static_cast<size_t>(u)];
      TileView inverse = rowValues("inv_sum", nq, 1);
      b_.tensorScalar(inverse, out.cols(D(), 1), AluOp::Reciprocal, 0.0f, AluOp::None, 0.0f, Engine::DVE);
      b_.tensorScalar(outRows.partitionSlice(0, nq).cols(u * D(), D()), out.cols(0, D()), AluOp::Multiply, inverse,
                      AluOp::None, 0.0f, engines_.outputEvictions);
    }
    storeRows(o_, h, queries, outRows);
  }

  /// [P, P] bf16 of -1: the stationary operand that subtracts the row maxima from s^T on PE.
  TileView negOnes() {
    if (!negOnes_) {
      negOnes_ = b_.sbuf("neg_ones", DType::BF16, P(), {P()});
      b_.memset(*negOnes_, -1.0f, Engine::POOL);
    }
    return *negOnes_;
  }

  /// What pass 1 of a query superblock leaves for pass 2.
  struct FirstPass {
    int64_t h = 0;
    RowLayout queries;
    TileView qT;                  // [D, width].
    TileView maxDiagonal;         // [P, width]: block u = diag(row max of query tile u).
    std::vector<KeyBlock> keys;   // The head's key blocks.
  };

  /// Pass 1: q^T, and each query row's max over all keys (of the bf16-rounded scores), laid out as
  /// diagonal blocks: (-1)^T @ diag(max) adds -max_q to column q of s^T on PE, with no transpose of
  /// the maxima and no PSUM read.
  FirstPass firstPass(int64_t h, int64_t qsb, const TileView &qRows) {
    FirstPass pass;
    pass.h = h;
    pass.queries = shape_.layout(qsb);
    const RowLayout &queries = pass.queries;
    pass.qT = transposeRows(qRows, queries, "q_t").cols(0, queries.width());
    const int64_t tiles = queries.tiles, blocks = shape_.superBlocks;
    // bf16 maxima: the reduce runs at twice the rate from bf16 in SBUF.
    TileView blockMax = b_.sbuf("block_max", DType::BF16, P(), {tiles * blocks});
    for (int64_t kb = 0; kb < blocks; ++kb) {
      pass.keys.push_back(keyBlock(h, kb));
      const int64_t width = shape_.layout(kb).width();
      for (int64_t u = 0; u < tiles; ++u) {
        const int64_t nq = queries.count(u);
        TileView s = scoresRing_.next(b_).partitionSlice(0, nq).cols(0, width);
        b_.matmul(s, pass.qT.cols(u * P(), nq), pass.keys.back().kT.cols(0, width), /*accumulate=*/false);
        // Where DVE and ACT share the PSUM port, ACT (the faster reader) moves the scores to SBUF as
        // bf16 and DVE finds the max there, off the port, so every PSUM read is ACT's.
        if (engines_.stageScores) {
          TileView staged =
              b_.sbuf("scores_bf16", DType::BF16, P(), {shape_.bankColumns}).partitionSlice(0, nq).cols(0, width);
          b_.copy(staged, s, Engine::ACT);
          s = staged;
        }
        b_.reduce(blockMax.partitionSlice(0, nq).cols(u * blocks + kb, 1), s, AluOp::Maximum);
      }
    }
    TileView rowMax = rowValues("row_max", queries.count(0), tiles);
    TileView diagonal = b_.sbuf("max_diagonal", DType::BF16, P(), {tiles * P()});
    // Rows past a ragged tile's queries must add nothing.
    if (queries.count(tiles - 1) < P()) b_.memset(diagonal, 0.0f, Engine::POOL);
    for (int64_t u = 0; u < tiles; ++u) {
      const int64_t nq = queries.count(u);
      TileView column = rowMax.partitionSlice(0, nq).cols(u, 1);
      b_.reduce(column, blockMax.partitionSlice(0, nq).cols(u * blocks, blocks), AluOp::Maximum);
      // A bf16 max is a shift within one rounding of the true max: exp stays <= ~1, and p v and the
      // row sums share it, so o / l is unchanged.
      b_.tensorScalar(diagonal.partitionSlice(0, nq).cols(u * P(), nq), identity().partitionSlice(0, nq).cols(0, nq),
                      AluOp::Multiply, column, AluOp::None, 0.0f, Engine::DVE);
    }
    pass.maxDiagonal = diagonal.cols(0, queries.width());
    return pass;
  }

  /// Pass 2 of a query superblock (non-causal, keys resident): the scores transposed, s^T [keys,
  /// queries] = k^T_tile^T @ q^T, minus the row maxima (accumulated on PE), and ACT's one exp per
  /// score writes p^T straight into SBUF, the stationary operand of p v: no transposes of p, no PSUM
  /// evictions of p^T, and with the final max known no rescaling of o. DVE (pass 1) and ACT each
  /// read every score once from PSUM, where on nc-v2 they share one port.
  void secondPass(const FirstPass &pass) {
    const RowLayout &queries = pass.queries;
    const int64_t width = queries.width();
    std::vector<TileView> out;
    for (int64_t u = 0; u < queries.tiles; ++u) out.push_back(outputRing_.next(b_).partitionSlice(0, queries.count(u)));
    for (int64_t kb = 0; kb < shape_.superBlocks; ++kb) {
      const KeyBlock &key = pass.keys[static_cast<size_t>(kb)];
      const RowLayout keys = shape_.layout(kb);
      for (int64_t t = 0; t < keys.tiles; ++t) {
        const int64_t kc = keys.count(t);
        TileView sT = probsTRing_.next(b_).partitionSlice(0, kc).cols(0, width);
        b_.matmul(sT, key.kT.cols(t * P(), kc), pass.qT, /*accumulate=*/false);
        b_.matmul(sT, negOnes().cols(0, kc), pass.maxDiagonal, /*accumulate=*/true);
        TileView pT = b_.sbuf("p_t", DType::BF16, P(), {shape_.superRows}).partitionSlice(0, kc).cols(0, width);
        b_.activation(pT, sT, ActFunc::Exp, activationArgs(shape_.scale));
        for (int64_t u = 0; u < queries.tiles; ++u)
          b_.matmul(out[static_cast<size_t>(u)], pT.cols(u * P(), queries.count(u)),
                    key.v.partitionSlice(0, kc).cols(t * (D() + 1), D() + 1),
                    /*accumulate=*/kb > 0 || t > 0);
      }
    }
    // o / l: column D of the output holds the row sums.
    TileView outRows = b_.sbuf("o", DType::BF16, P(), {queries.tiles * D()});
    for (int64_t u = 0; u < queries.tiles; ++u) {
      const int64_t nq = queries.count(u);
      const TileView &o = out[static_cast<size_t>(u)];
      TileView inverse = rowValues("inv_sum", nq, 1);
      b_.tensorScalar(inverse, o.cols(D(), 1), AluOp::Reciprocal, 0.0f, AluOp::None, 0.0f, Engine::DVE);
      b_.tensorScalar(outRows.partitionSlice(0, nq).cols(u * D(), D()), o.cols(0, D()), AluOp::Multiply, inverse,
                      AluOp::None, 0.0f, Engine::ACT);
    }
    storeRows(o_, pass.h, queries, outRows);
  }

  KernelBuilder &b_;
  const AttentionShape &shape_;
  const bool allowResident_;
  const EnginePlan engines_;
  const bool resident_;  // A head's keys stay in SBUF (else they are reloaded per query superblock).
  const bool twoPass_;  // Non-causal with resident keys: the row max first, then one exp per score.
  const PsumSlots psumSlots_;
  TileRing scoresRing_, probsTRing_, outputRing_, transposeRing_;
  HbmView q_, k_, v_, o_;
  std::vector<KeyBlock> keys_;                               // The current head's, when resident.
  std::map<std::pair<int64_t, int64_t>, TileView> masks_;    // By (superblock rows, query tile).
  std::optional<TileView> identity_, identityF32_, negOnes_;
};

}  // namespace

Status emitFlashAttention(KernelBuilder &b, const FlashProblem &problem, const FlashOperands &operands) {
  const MachineProfile &profile = b.profile();
  const int64_t maxD = std::min({profile.partitions, profile.pe.rows, profile.pe.cols});
  if (problem.D > maxD)
    return makeError(ErrorCode::InvalidArgument,
                     "kernel 'attention': D = {} must be at most {} (the head dim is the contraction of q k^T on "
                     "partitions)",
                     problem.D, maxD);
  AttentionShape shape;
  shape.H = problem.H, shape.S = problem.S, shape.D = problem.D;
  shape.causal = problem.causal;
  shape.partitions = maxD;
  shape.bankColumns = profile.psum.bankFp32Elements;
  shape.rowsPerPartition = std::max<int64_t>(1, shape.bankColumns / shape.partitions);
  shape.superRows = shape.partitions * shape.rowsPerPartition;
  shape.superBlocks = ceilDiv(shape.S, shape.superRows);
  shape.scale = problem.scale;
  AttentionBuilder(b, shape, problem.allowResident).build(operands);
  return Status::success();
}

}  // namespace tessel::nc::kernels
