// The heads form of attention (heads.h): one emitter object per attention, holding the PSUM rings,
// the identity and the bias tiles shared across heads and batches.
#include "targets/nc/kernels/attention/heads.h"

#include <algorithm>
#include <map>
#include <tuple>
#include <vector>

#include "targets/nc/kernels/identity.h"
#include "targets/nc/kernels/tiling.h"
#include "targets/nc/tile/tile_ring.h"

namespace tessel::nc::kernels {
namespace {

using tile::KernelBuilder;
using tile::TileRing;
using tile::TileView;

class HeadsEmitter {
 public:
  HeadsEmitter(KernelBuilder &b, const HeadsProblem &problem, const HeadsPlan &plan, const HeadsOperands &operands)
      : b_(b), s_(problem), plan_(plan), in_(operands), P_(b.profile().partitions),
        bankColumns_(b.profile().psum.bankFp32Elements), mm_(plan.matmulDtype),
        scoresRing_(MemSpace::PSUM, name("scores"), DType::F32, P_, {plan.scoreColumns}, 3),
        probsTRing_(MemSpace::PSUM, name("p_t_ps"), mm_, P_, {plan.probsTColumns}, 3),
        valuesRing_(MemSpace::PSUM, name("v_ps"), plan.valuesDtype, P_, {plan.valuesColumns}, 2),
        outRing_(MemSpace::PSUM, name("o_ps"), DType::F32, P_, {plan.outputColumns}, 2) {}

  void emit() {
    for (int64_t b = 0; b < s_.B; ++b) {
      // V_h [keys, Dv] per K/V head, made once and read by every query head of its group.
      std::map<int64_t, TileView> values;
      for (size_t g = 0; g < plan_.groups.size(); ++g) {
        const std::vector<int64_t> &group = plan_.groups[g];
        for (int64_t h : group)
          if (!values.count(kvHead(h))) values[kvHead(h)] = keysOnPartitions(b, kvHead(h));
        for (const Span &qt : splitRange(s_.Sq, P_)) {
          TileView out = outRing_.next(b_);
          for (int64_t h : group) head(b, h, qt, values.at(kvHead(h)), out);
          normalize(b, g, qt, out);
        }
      }
    }
  }

 private:
  std::string name(const std::string &what) const { return in_.tilePrefix + what; }

  /// The K/V head query head h reads (grouped-query attention; h itself when Hkv = H).
  int64_t kvHead(int64_t h) const { return h / (s_.H / s_.Hkv); }

  /// The partition of head h's rows in its group's PSUM tile and output block.
  int64_t headPartition(int64_t h) const { return plan_.packedOutput ? h * s_.Dv % P_ : 0; }

  /// V of K/V head h as [keys, Dv] in the matmul dtype: key tile t at columns [t * Dv, t * Dv + Dv),
  /// rows [0, keys in t).
  TileView keysOnPartitions(int64_t b, int64_t h) {
    const std::vector<Span> tiles = splitRange(s_.Sk, P_);
    const int64_t n = static_cast<int64_t>(tiles.size());
    TileView values = b_.sbuf(name("v"), mm_, std::min(P_, s_.Sk), {n * s_.Dv});
    for (int64_t first = 0; first < n; first += plan_.valuesChunk) {
      const int64_t count = std::min(plan_.valuesChunk, n - first);
      TileView ps = valuesRing_.next(b_);
      for (int64_t t = first; t < first + count; ++t) {
        const Span &keys = tiles[static_cast<size_t>(t)];
        b_.transpose(ps.partitionSlice(0, keys.count).cols((t - first) * s_.Dv, s_.Dv),
                     in_.v(b, h, keys.start, keys.count));
      }
      evictTiles(values.cols(first * s_.Dv, count * s_.Dv), ps.cols(0, count * s_.Dv), tiles, first, count, s_.Dv);
    }
    return values;
  }

  /// Copies `count` key tiles of `width` columns each from PSUM to SBUF: the full ones in one
  /// instruction, a ragged last one (fewer rows) in another.
  void evictTiles(const TileView &dst, const TileView &src, const std::vector<Span> &tiles, int64_t first,
                  int64_t count, int64_t width) {
    const int64_t last = first + count - 1;
    const int64_t full = tiles[static_cast<size_t>(last)].count == P_ ? count : count - 1;
    if (full > 0) b_.copy(dst.cols(0, full * width), src.cols(0, full * width));
    if (full < count) {
      const int64_t rows = tiles[static_cast<size_t>(last)].count;
      b_.copy(dst.partitionSlice(0, rows).cols(full * width, width),
              src.partitionSlice(0, rows).cols(full * width, width));
    }
  }

  /// The [P, P] identity in the matmul dtype: PE adds the mask to the scores as identity^T @ bias. One
  /// per attention: one tile live across a whole transformer moved its allocation and cost BERT-base
  /// 2% on nc-v2 and GPT-2 3% on nc-v3.
  TileView identity() {
    if (!identity_) identity_ = makeIdentity(b_, name("identity"), mm_);
    return *identity_;
  }

  /// Keys query tile `qt` sees: all, or with causal those up to its last row's diagonal.
  int64_t visibleKeys(const Span &qt) const {
    return s_.causal ? std::min(s_.Sk, qt.start + qt.count + s_.Sk - s_.Sq) : s_.Sk;
  }

  /// The additive scores [rows of qt, visible keys] of head (b, h) in the matmul dtype: the mask
  /// (clamped to kMaskedScore) and the causal kMaskedScore entries; none without either. Shared by the
  /// heads and batches the mask broadcasts over.
  std::optional<TileView> biasTile(int64_t b, int64_t h, const Span &qt) {
    const bool masked = in_.mask.has_value();
    if (!masked && !s_.causal) return std::nullopt;
    const std::vector<int64_t> &m = s_.mask;
    const bool perBatch = masked && m[0] > 1, perHead = masked && m[1] > 1;
    const auto key = std::make_tuple(perBatch ? b : 0, perHead ? h : 0, qt.start);
    if (auto it = biases_.find(key); it != biases_.end()) return it->second;
    const int64_t keys = visibleKeys(qt);
    TileView bias = b_.sbuf(name("bias"), mm_, qt.count, {keys});
    if (masked) {
      // Row-major strides of the padded mask; broadcast dims read with stride 0.
      const int64_t rowStride = m[3], headStride = m[2] * m[3], batchStride = m[1] * m[2] * m[3];
      const int64_t offset = (perBatch ? b * batchStride : 0) + (perHead ? h * headStride : 0) +
                             (m[2] > 1 ? qt.start * rowStride : 0);
      TileView raw = b_.sbuf(name("mask"), DType::F32, qt.count, {keys});
      b_.load(raw, in_.mask->pattern(offset, {FreeDim{m[2] > 1 ? rowStride : 0, static_cast<uint32_t>(qt.count)},
                                              FreeDim{m[3] > 1 ? 1 : 0, static_cast<uint32_t>(keys)}}));
      b_.tensorScalar(bias, raw, AluOp::Maximum, kMaskedScore);
    } else {
      b_.memset(bias, 0.0f, Engine::POOL);
    }
    // Key j is visible from query row i when j <= i + Sk - Sq.
    if (s_.causal)
      b_.affineSelect(bias, bias, /*partitionMultiplier=*/1, /*freeMultiplier=*/-1,
                      /*offset=*/static_cast<float>(qt.start + s_.Sk - s_.Sq), kMaskedScore);
    biases_.emplace(key, bias);
    return bias;
  }

  /// One head for one query tile: O^T and L of head h into its partitions of `out`.
  void head(int64_t b, int64_t h, const Span &qt, const TileView &values, const TileView &out) {
    const int64_t nq = qt.count, keys = visibleKeys(qt);
    const std::optional<TileView> bias = biasTile(b, h, qt);
    const TileView qT = in_.q(b, h, qt.start, nq);
    const bool stage = plan_.engines.stageScores || keys > bankColumns_;

    // Scores, per key block of one PSUM bank; negated into SBUF when staged.
    std::optional<TileView> staged;
    if (stage) staged = b_.sbuf(name("scores_sb"), DType::F32, nq, {keys});
    TileView scores;
    for (const Span &kb : splitRange(keys, bankColumns_)) {
      TileView ps = scoresRing_.next(b_).partitionSlice(0, nq).cols(0, kb.count);
      b_.matmul(ps, qT, in_.k(b, kvHead(h), kb.start, kb.count), /*accumulate=*/false);
      if (bias) b_.matmul(ps, identity().partitionSlice(0, nq).cols(0, nq), bias->cols(kb.start, kb.count), true);
      if (stage) b_.activation(staged->cols(kb.start, kb.count), ps, ActFunc::Copy, activationArgs(-1.0f));
      scores = ps;
    }
    TileView negMax = b_.sbuf(name("neg_max"), DType::F32, nq, {1});
    if (stage) {
      b_.reduce(negMax, *staged, AluOp::Minimum);
      scores = *staged;
    } else {
      TileView rowMax = b_.sbuf(name("row_max"), DType::F32, nq, {1});
      b_.reduce(rowMax, scores, AluOp::Maximum);
      b_.tensorScalar(negMax, rowMax, AluOp::Multiply, -1.0f, AluOp::None, 0.0f, plan_.engines.smallOps);
    }
    TileView probs = b_.sbuf(name("probs"), mm_, nq, {keys});
    b_.activation(probs, scores, ActFunc::Exp, activationArgs(stage ? -1.0f : 1.0f, negMax));

    // p^T: key tile t at columns [t * nq, t * nq + nq), rows [0, keys in t).
    const std::vector<Span> tiles = splitRange(keys, P_);
    const int64_t n = static_cast<int64_t>(tiles.size());
    TileView probsT = b_.sbuf(name("p_t"), mm_, std::min(P_, keys), {n * nq});
    for (int64_t first = 0; first < n; first += plan_.probsChunk) {
      const int64_t count = std::min(plan_.probsChunk, n - first);
      TileView ps = probsTRing_.next(b_);
      for (int64_t t = first; t < first + count; ++t) {
        const Span &kt = tiles[static_cast<size_t>(t)];
        b_.transpose(ps.partitionSlice(0, kt.count).cols((t - first) * nq, nq), probs.cols(kt.start, kt.count));
      }
      evictTiles(probsT.cols(first * nq, count * nq), ps.cols(0, count * nq), tiles, first, count, nq);
    }

    // O^T and the row sums L, accumulated over the key tiles.
    const int64_t partition = headPartition(h);
    const TileView oT = out.partitionSlice(partition, s_.Dv).cols(0, nq);
    const TileView sums = out.partitionSlice(partition, s_.Dv).cols(out.freeSize() / 2, nq);
    const TileView ones = in_.ones();
    for (int64_t t = 0; t < n; ++t) {
      const int64_t rows = tiles[static_cast<size_t>(t)].count;
      const TileView pT = probsT.partitionSlice(0, rows).cols(t * nq, nq);
      b_.matmul(oT, values.partitionSlice(0, rows).cols(t * s_.Dv, s_.Dv), pT, /*accumulate=*/t > 0);
      b_.matmul(sums, ones.partitionSlice(0, rows).cols(0, s_.Dv), pT, /*accumulate=*/t > 0);
    }
  }

  /// Y^T = O^T / L for the heads of group g, from their PSUM tile into the output.
  void normalize(int64_t b, size_t g, const Span &qt, const TileView &out) {
    const std::vector<int64_t> &group = plan_.groups[g];
    const int64_t rows = static_cast<int64_t>(group.size()) * s_.Dv, nq = qt.count;
    const int64_t first = headPartition(group.front());
    TileView inverse = b_.sbuf(name("inv_sum"), DType::F32, rows, {nq});
    b_.activation(inverse, out.partitionSlice(first, rows).cols(out.freeSize() / 2, nq), ActFunc::Reciprocal);
    const TileView dst = in_.output(b, g).partitionSlice(0, rows).cols(qt.start, nq);
    b_.tensorTensor(dst, out.partitionSlice(first, rows).cols(0, nq), inverse, AluOp::Multiply);
  }

  KernelBuilder &b_;
  const HeadsProblem &s_;
  const HeadsPlan &plan_;
  const HeadsOperands &in_;
  const int64_t P_, bankColumns_;
  const DType mm_;
  TileRing scoresRing_, probsTRing_, valuesRing_, outRing_;
  std::optional<TileView> identity_;
  std::map<std::tuple<int64_t, int64_t, int64_t>, TileView> biases_;  // By (batch, head, query start).
};

}  // namespace

void emitHeadsAttention(KernelBuilder &builder, const HeadsProblem &problem, const HeadsPlan &plan,
                        const HeadsOperands &operands) {
  HeadsEmitter(builder, problem, plan, operands).emit();
}

}  // namespace tessel::nc::kernels
