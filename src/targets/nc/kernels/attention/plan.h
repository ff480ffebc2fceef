// The attention family's plans: pure functions of the machine profile and the shapes that fix which
// engines take which work and, for the heads form, the PSUM rings and how heads share output blocks.
//
// Two forms of one computation, o = softmax(scale * q k^T [+ mask] [causal]) v (kernel.h):
//   heads (heads.h): operands SBUF-resident, each head's q^T, k^T, v^T a partition slice; the form
//                    the model compiler runs, and variant "heads" of the library kernel.
//   flash (flash.h): q, k, v in HBM, an online softmax over key superblocks; variant "flash".
#pragma once

#include <cstdint>
#include <vector>

#include "targets/nc/isa/instruction.h"
#include "targets/nc/machine/profile.h"

namespace tessel::nc::kernels {

/// Added to masked scores (causal, or a mask at -inf): finite, so that PE's identity^T @ mask never
/// multiplies an infinity by zero, and exp of it is 0.
inline constexpr float kMaskedScore = -1e30f;

/// Keys per query row of the heads form: the scores and probabilities of one query tile stay in
/// SBUF (6 bytes per key per partition).
inline constexpr int64_t kHeadsMaxKeys = 8192;

/// Which engines take which work, from the profile's port conflicts (section 9.3).
struct EnginePlan {
  /// ACT copies the scores to SBUF so that DVE's max and ACT's exp read SBUF: where DVE and ACT share
  /// the PSUM port (nc-v2), the PSUM readers would otherwise serialise.
  bool stageScores = false;
  /// [P, 1] work: POOL where it does not share SBUF with DVE, else DVE.
  Engine smallOps = Engine::DVE;
  /// Flash: the scaled evictions of the running output from PSUM: ACT, unless ACT already stages the
  /// scores.
  Engine outputEvictions = Engine::ACT;
};

EnginePlan planEngines(const MachineProfile &profile);

/// One attention of the heads form: query head h reads K/V head h / (H / Hkv) (grouped-query
/// attention).
struct HeadsProblem {
  int64_t B = 0, H = 0, Hkv = 0, Sq = 0, Sk = 0, D = 0, Dv = 0;
  float scale = 1;
  bool causal = false;
  /// The additive mask's shape padded to rank 4 with leading 1s ([B or 1, H or 1, Sq or 1, Sk or 1]);
  /// empty without a mask.
  std::vector<int64_t> mask;
};

struct HeadsPlan {
  EnginePlan engines;
  /// Of q, k and the probabilities; of v as the caller holds it (its transposes cast on the eviction).
  DType matmulDtype = DType::BF16, valuesDtype = DType::BF16;
  /// Head h's output sits at partitions h * Dv of a [B, Sq, H * Dv] feature-major tensor (every head
  /// then an aligned slice of one block); else each head has its own block of Dv partitions.
  bool packedOutput = false;
  /// The heads sharing one output block, in order: each group's O^T and L share a PSUM tile and are
  /// normalised by one instruction pair.
  std::vector<std::vector<int64_t>> groups;
  /// Key tiles whose p^T (probsChunk) or V_h (valuesChunk) transposes fill one PSUM tile.
  int64_t probsChunk = 1, valuesChunk = 1;
  /// Columns of the PSUM tiles: scores (fp32, one bank of keys at most), p^T, V_h, O^T with L.
  int64_t scoreColumns = 0, probsTColumns = 0, valuesColumns = 0, outputColumns = 0;
};

HeadsPlan planHeads(const MachineProfile &profile, const HeadsProblem &problem, DType matmulDtype, DType valuesDtype);

/// The start-partition alignment of an operand of `count` partitions (rule T6, section 4.2).
int64_t partitionAlignment(int64_t partitions, int64_t count);

/// Whether H heads of `width` partitions each, head h at partitions h * width, are all aligned slices
/// of one block of `partitions`.
bool headsPackIntoBlocks(int64_t partitions, int64_t heads, int64_t width);

}  // namespace tessel::nc::kernels
