// Spill insertion; see spill.h. Each round places the tiles; on failure one sweep over the ops picks
// victims wherever the live tiles exceed the memory, one pass rewrites the kernel (a save op after
// each victim's last write before that point, or none when the value is a reloadable copy of HBM; a
// restore op into a new tile before its next use, later ops renamed to the new tile), and it places
// again.
#include "targets/nc/tile/spill.h"

#include <algorithm>
#include <map>
#include <numeric>
#include <string>

#include <fmt/format.h>

namespace tessel::nc::tile {
namespace {

// A bound on the rounds, far above what any kernel needs (each spill removes one live stretch).
constexpr size_t kMaxSpills = 1 << 16;
// The largest count of one SBUF access-pattern dim (uint16).
constexpr int64_t kMaxDimCount = 65535;

/// One op touching a tile.
struct TileUse {
  int32_t op = -1;
  bool write = false;
};

/// Per tile, the ops that touch it, in order (one entry per op).
std::vector<std::vector<TileUse>> tileUses(const Kernel &kernel) {
  std::vector<std::vector<TileUse>> uses(kernel.tiles.size());
  for (size_t i = 0; i < kernel.ops.size(); ++i) {
    const TileOp &op = kernel.ops[i];
    const std::vector<OperandSlot> &slots = operandSlots(op.opcode);
    for (size_t s = 0; s < op.operands.size(); ++s) {
      const std::optional<OperandView> &view = op.operands[s];
      if (!view || view->space == MemSpace::HBM) continue;
      const bool write = s == 0 || (s < slots.size() && slots[s].name == "accum");
      std::vector<TileUse> &list = uses[static_cast<size_t>(view->id)];
      if (!list.empty() && list.back().op == static_cast<int32_t>(i)) list.back().write |= write;
      else list.push_back(TileUse{static_cast<int32_t>(i), write});
    }
  }
  return uses;
}

/// Whether op `op` accumulates onto tile `tile` (a matmul with acc=1 into it).
bool accumulatesOnto(const TileOp &op, int32_t tile) {
  return op.opcode == Opcode::NcMatmul && op.accumulate && !op.operands.empty() && op.operands[0] &&
         op.operands[0]->space != MemSpace::HBM && op.operands[0]->id == tile;
}

/// The free dims of a whole tile of `elements` per partition, flat where one dim can hold them.
std::vector<FreeDim> flatFreeDims(int64_t elements) {
  if (elements <= kMaxDimCount) return {FreeDim{1, static_cast<uint32_t>(elements)}};
  for (int64_t inner = kMaxDimCount; inner > 1; --inner)
    if (elements % inner == 0 && elements / inner <= kMaxDimCount)
      return {FreeDim{inner, static_cast<uint32_t>(elements / inner)}, FreeDim{1, static_cast<uint32_t>(inner)}};
  return {FreeDim{1, static_cast<uint32_t>(elements)}};  // The verifier names the op if this cannot encode.
}

int64_t freeElements(const TileDecl &decl) {
  return std::accumulate(decl.freeShape.begin(), decl.freeShape.end(), int64_t{1}, std::multiplies<>());
}

OperandView wholeTile(const TileDecl &decl, int32_t id) {
  return OperandView{decl.space, id, 0, decl.partitions, 0, flatFreeDims(freeElements(decl)), decl.dtype};
}

/// The scratch tensor [P, F] in the order the DMA walks the tile: partition-major.
OperandView wholeScratch(const TileDecl &decl, int32_t tensor) {
  const int64_t free = freeElements(decl);
  std::vector<FreeDim> dims = {FreeDim{free, static_cast<uint32_t>(decl.partitions)}};
  for (const FreeDim &dim : flatFreeDims(free)) dims.push_back(dim);
  return OperandView{MemSpace::HBM, tensor, 0, 1, 0, std::move(dims), decl.dtype};
}

TileOp dataMove(TileOpKind kind, Opcode opcode, Engine engine, OperandView dst, OperandView src) {
  TileOp op;
  op.kind = kind;
  op.opcode = opcode;
  op.engine = engine;
  op.operands = {std::move(dst), std::move(src)};
  return op;
}

const char *spaceName(MemSpace space) { return space == MemSpace::PSUM ? "PSUM" : "SBUF"; }

/// The error for op `op` of `kernel` whose own operands in `space` take more than `capacity` bytes
/// per partition: by how much, and which tiles.
Diagnostic operandsDoNotFit(const Kernel &kernel, size_t op, MemSpace space, uint64_t needed, uint64_t capacity,
                            std::vector<int32_t> tiles) {
  std::stable_sort(tiles.begin(), tiles.end(), [&](int32_t a, int32_t b) {
    return tileAllocatedBytes(kernel.tiles[a]) > tileAllocatedBytes(kernel.tiles[b]);
  });
  std::vector<std::string> names;
  for (int32_t t : tiles) names.push_back(fmt::format("'{}' {}", kernel.tiles[t].name, tileAllocatedBytes(kernel.tiles[t])));
  return makeError(ErrorCode::InvalidArgument,
                   "kernel '{}': op #{} ({}) does not fit {}: its operands alone take {} of {} bytes per partition "
                   "(short by {}); live: {}",
                   kernel.name, op, tileOpKindName(kernel.ops[op].kind), spaceName(space), needed, capacity,
                   needed - capacity, fmt::join(names, ", "));
}

/// The first op whose own operands do not fit their memory, as an error; success if none.
Status checkOperandsFit(const Kernel &kernel, const MachineProfile &profile) {
  std::vector<int32_t> tiles;
  for (size_t i = 0; i < kernel.ops.size(); ++i) {
    for (MemSpace space : {MemSpace::SBUF, MemSpace::PSUM}) {
      const uint64_t capacity = static_cast<uint64_t>(space == MemSpace::PSUM ? profile.psum.bytesPerPartition
                                                                              : profile.sbuf.bytesPerPartition);
      tiles.clear();
      uint64_t needed = 0;
      for (const std::optional<OperandView> &view : kernel.ops[i].operands) {
        if (!view || view->space != space || std::find(tiles.begin(), tiles.end(), view->id) != tiles.end()) continue;
        tiles.push_back(view->id);
        needed += tileAllocatedBytes(kernel.tiles[static_cast<size_t>(view->id)]);
      }
      if (needed > capacity) return operandsDoNotFit(kernel, i, space, needed, capacity, tiles);
    }
  }
  return Status::success();
}

/// Per HBM tensor of `kernel`, whether some op writes it.
std::vector<bool> writtenHbmTensors(const Kernel &kernel) {
  std::vector<bool> written(kernel.tensors.size(), false);
  for (const TileOp &op : kernel.ops)
    if (!op.operands.empty() && op.operands[0] && op.operands[0]->space == MemSpace::HBM)
      written[static_cast<size_t>(op.operands[0]->id)] = true;
  return written;
}

/// Whether op `op` is a load reading only HBM tensors that no op writes (`written`): replaying it
/// reproduces what it wrote.
bool isReplayableLoad(const TileOp &op, const std::vector<bool> &written) {
  if (op.kind != TileOpKind::Load || op.operands.size() < 2) return false;
  for (size_t s = 1; s < op.operands.size(); ++s) {
    const std::optional<OperandView> &view = op.operands[s];
    if (view && (view->space != MemSpace::HBM || written[static_cast<size_t>(view->id)])) return false;
  }
  return true;
}

/// Where a stretch of a tile's value can be brought back from without saving it.
struct ValueSource {
  enum Kind { Computed, Load, Holder } kind = Computed;
  int32_t index = -1;  // Load: the op to replay; Holder: the spill whose holder keeps the value.
};

/// One live stretch of a tile's value: the ops [uses[first], uses[last]] of tile `tile` of the
/// kernel before the round (`id` is the tile it lives in: that tile, or a reload).
struct Stretch {
  int32_t tile = -1, id = -1;
  size_t first = 0, last = 0;  // Indices into the tile's uses.
  ValueSource source;          // How its value at its start can be had again.
};

/// A spill the sweep decided, in the op indices of the kernel before the round.
struct SpillDecision {
  int32_t stretchTile = -1, victimId = -1, reloadId = -1;
  int32_t saveAfter = -1, reloadBefore = -1;
  ValueSource reloadFrom;  // Load: replay that op; Holder: spills[index]'s holder (saved or not now).
  bool save = false;       // A new save after saveAfter.
};

/// The spills one sweep over `kernel` decides in `space`: at every op where the live stretches take
/// more than `capacity` (and at `forcedOp`, where placement failed although the bytes fit), victims in
/// Belady's order until the excess is covered. Adds the reload tiles (and PSUM holders) to `result`.
std::vector<SpillDecision> sweep(SpilledKernel &result, const std::vector<bool> &isSpillOp, MemSpace space,
                                 uint64_t capacity, int32_t forcedOp) {
  Kernel &kernel = result.kernel;
  const std::vector<std::vector<TileUse>> uses = tileUses(kernel);
  const std::vector<bool> written = writtenHbmTensors(kernel);
  const int32_t numOps = static_cast<int32_t>(kernel.ops.size());
  std::vector<Stretch> stretches;
  std::vector<std::vector<size_t>> startsAt(static_cast<size_t>(numOps));
  for (size_t t = 0; t < kernel.tiles.size(); ++t) {
    if (kernel.tiles[t].space != space || uses[t].empty()) continue;
    startsAt[static_cast<size_t>(uses[t].front().op)].push_back(stretches.size());
    stretches.push_back(Stretch{static_cast<int32_t>(t), static_cast<int32_t>(t), 0, uses[t].size() - 1, {}});
  }
  auto opOf = [&](const Stretch &s, size_t use) { return uses[static_cast<size_t>(s.tile)][use].op; };
  std::vector<SpillDecision> decisions;
  std::vector<size_t> active;
  int32_t i = 0;
  // The index of a stretch's first use at or after op i.
  auto nextUse = [&](const Stretch &s) {
    size_t next = s.first;
    while (opOf(s, next) < i) ++next;
    return next;
  };
  uint64_t liveBytes = 0;
  auto bytesOf = [&](const Stretch &s) { return tileAllocatedBytes(kernel.tiles[static_cast<size_t>(s.tile)]); };
  for (; i < numOps; ++i) {
    for (size_t s : startsAt[static_cast<size_t>(i)]) {
      active.push_back(s);
      liveBytes += bytesOf(stretches[s]);
    }
    if (liveBytes > capacity || i == forcedOp) {
      const uint64_t toFree = liveBytes > capacity ? liveBytes - capacity : 1;
      // What is live here but idle until the op after any restores in between may go.
      int32_t needer = i;
      while (needer + 1 < numOps && isSpillOp[static_cast<size_t>(needer)]) ++needer;
      std::vector<SpillCandidate> candidates;
      for (size_t s : active) {
        const Stretch &stretch = stretches[s];
        if (opOf(stretch, stretch.first) >= i || opOf(stretch, stretch.last) <= needer) continue;
        const size_t next = nextUse(stretch);
        if (opOf(stretch, next) <= needer) continue;  // Needed now.
        // The ops still name the tiles as they were before this round.
        if (accumulatesOnto(kernel.ops[static_cast<size_t>(opOf(stretch, next))], stretch.tile)) continue;
        candidates.push_back(SpillCandidate{static_cast<int32_t>(s), opOf(stretch, next), bytesOf(stretch)});
      }
      uint64_t freed = 0;
      while (freed < toFree && !candidates.empty() && result.spills.size() < kMaxSpills) {
        const size_t s = static_cast<size_t>(chooseSpillVictim(candidates));
        candidates.erase(std::find_if(candidates.begin(), candidates.end(),
                                      [&](const SpillCandidate &c) { return c.id == static_cast<int32_t>(s); }));
        const Stretch victim = stretches[s];
        const size_t next = nextUse(victim);
        // Its writes before here: none since a restore keeps that restore's source; a stretch whose
        // one write is a replayable load is that load; anything else is saved after its last write.
        int32_t lastWrite = -1, writes = 0;
        for (size_t u = victim.first; u < next; ++u)
          if (uses[static_cast<size_t>(victim.tile)][u].write) {
            lastWrite = opOf(victim, u);
            ++writes;
          }
        SpillDecision decision;
        decision.stretchTile = victim.tile;
        decision.victimId = victim.id;
        decision.reloadBefore = opOf(victim, next);
        const TileOp *load = writes == 1 ? &kernel.ops[static_cast<size_t>(lastWrite)] : nullptr;
        if (writes == 0 && victim.source.kind != ValueSource::Computed) {
          decision.reloadFrom = victim.source;
        } else if (space == MemSpace::SBUF && victim.source.kind == ValueSource::Computed && load &&
                   isReplayableLoad(*load, written) && load->operands[0]->id == victim.tile) {
          decision.reloadFrom = ValueSource{ValueSource::Load, lastWrite};
        } else {
          decision.save = true;
          decision.saveAfter = lastWrite >= 0 ? lastWrite : opOf(victim, next - 1);
          decision.reloadFrom = ValueSource{ValueSource::Holder, static_cast<int32_t>(result.spills.size())};
        }
        const TileDecl decl = kernel.tiles[static_cast<size_t>(victim.tile)];
        Spill spill;
        spill.tile = victim.id;
        spill.from = space;
        spill.to = space == MemSpace::SBUF ? MemSpace::HBM : MemSpace::SBUF;
        spill.saveAfterOp = decision.save ? result.origin[static_cast<size_t>(decision.saveAfter)] : -1;
        spill.reloadBeforeOp = result.origin[static_cast<size_t>(decision.reloadBefore)];
        spill.pressureOp = result.origin[static_cast<size_t>(i)];
        spill.bytesPerPartition = tileAllocatedBytes(decl);
        spill.reloadTile = static_cast<int32_t>(kernel.tiles.size());
        spill.reloadName = fmt::format("{}@reload{}", decl.name, result.spills.size());
        TileDecl reload = decl;
        reload.name = spill.reloadName;
        kernel.tiles.push_back(reload);
        if (decision.reloadFrom.kind == ValueSource::Load) {
          spill.reloaded = true;
          spill.holder = kernel.ops[static_cast<size_t>(decision.reloadFrom.index)].operands[1]->id;
          spill.holderName = kernel.tensors[static_cast<size_t>(spill.holder)].name;
        } else if (decision.save) {
          if (space == MemSpace::SBUF) {
            spill.holder = static_cast<int32_t>(kernel.tensors.size());
            spill.holderName = fmt::format("{}@spill{}", decl.name, result.spills.size());
            kernel.tensors.push_back(HbmTensorDecl{spill.holderName, decl.dtype, {decl.partitions, freeElements(decl)},
                                                   false, /*isScratch=*/true});
          } else {
            // DMA does not reach PSUM: DVE copies the value to SBUF and back (bit-exact: same dtype).
            spill.holder = static_cast<int32_t>(kernel.tiles.size());
            spill.holderName = fmt::format("{}@evict{}", decl.name, result.spills.size());
            TileDecl holder = decl;
            holder.name = spill.holderName;
            holder.space = MemSpace::SBUF;
            kernel.tiles.push_back(holder);
          }
        } else {
          const Spill &kept = result.spills[static_cast<size_t>(decision.reloadFrom.index)];
          spill.holder = kept.holder;
          spill.holderName = kept.holderName;
        }
        decision.reloadId = spill.reloadTile;
        result.spills.push_back(std::move(spill));
        decisions.push_back(decision);
        // The victim's stretch ends at its last use before here; the rest is a new stretch from its
        // restore, in the reload tile.
        freed += bytesOf(victim);
        liveBytes -= bytesOf(victim);
        active.erase(std::find(active.begin(), active.end(), s));
        Stretch rest{victim.tile, decision.reloadId, next, victim.last, decision.reloadFrom};
        stretches[s].last = next - 1;
        startsAt[static_cast<size_t>(decision.reloadBefore)].push_back(stretches.size());
        stretches.push_back(rest);
      }
    }
    for (size_t k = 0; k < active.size();) {
      const Stretch &stretch = stretches[active[k]];
      if (opOf(stretch, stretch.last) <= i) {
        liveBytes -= bytesOf(stretch);
        active[k] = active.back();
        active.pop_back();
      } else {
        ++k;
      }
    }
  }
  return decisions;
}

/// Rewrites `result.kernel` with `decisions` in one pass: the saves after their ops, the restores
/// before theirs, and every later use of a spilled stretch in its reload tile.
void applySpills(SpilledKernel &result, std::vector<bool> &isSpillOp, const std::vector<SpillDecision> &decisions,
                 size_t firstSpill) {
  Kernel &kernel = result.kernel;
  const size_t numOps = kernel.ops.size();
  // Per tile of the kernel before the round, the ids its value lives in from which op on.
  std::map<int32_t, std::vector<std::pair<int32_t, int32_t>>> renames;
  std::vector<std::vector<size_t>> savesAfter(numOps), restoresBefore(numOps);
  for (size_t d = 0; d < decisions.size(); ++d) {
    renames[decisions[d].stretchTile].emplace_back(decisions[d].reloadBefore, decisions[d].reloadId);
    if (decisions[d].save) savesAfter[static_cast<size_t>(decisions[d].saveAfter)].push_back(d);
    restoresBefore[static_cast<size_t>(decisions[d].reloadBefore)].push_back(d);
  }
  for (auto &[tile, list] : renames) std::sort(list.begin(), list.end());
  auto idAt = [&](const OperandView &view, int32_t op) {
    auto it = renames.find(view.id);
    if (it == renames.end()) return view.id;
    int32_t id = view.id;
    for (const auto &[from, reload] : it->second)
      if (from <= op) id = reload;
    return id;
  };
  const std::vector<TileOp> ops = std::move(kernel.ops);
  const std::vector<int32_t> origin = std::move(result.origin);
  kernel.ops.clear();
  result.origin.clear();
  std::vector<bool> spillOps;
  auto emit = [&](TileOp op, size_t at, bool spillOp) {
    kernel.ops.push_back(std::move(op));
    result.origin.push_back(origin[at]);
    spillOps.push_back(spillOp);
  };
  for (size_t j = 0; j < numOps; ++j) {
    for (size_t d : restoresBefore[j]) {
      const SpillDecision &decision = decisions[d];
      const Spill &spill = result.spills[firstSpill + d];
      const TileDecl &decl = kernel.tiles[static_cast<size_t>(decision.reloadId)];
      TileOp restore;
      if (decision.reloadFrom.kind == ValueSource::Load) {
        restore = ops[static_cast<size_t>(decision.reloadFrom.index)];
        restore.operands[0]->id = decision.reloadId;
      } else if (decl.space == MemSpace::SBUF) {
        restore = dataMove(TileOpKind::Load, Opcode::DmaCopy, Engine::DMA, wholeTile(decl, decision.reloadId),
                           wholeScratch(decl, spill.holder));
      } else {
        restore = dataMove(TileOpKind::Copy, Opcode::TensorCopy, Engine::DVE, wholeTile(decl, decision.reloadId),
                           wholeTile(kernel.tiles[static_cast<size_t>(spill.holder)], spill.holder));
      }
      emit(std::move(restore), j, true);
    }
    TileOp op = ops[j];
    for (std::optional<OperandView> &view : op.operands)
      if (view && view->space != MemSpace::HBM) view->id = idAt(*view, static_cast<int32_t>(j));
    emit(std::move(op), j, isSpillOp[j]);
    for (size_t d : savesAfter[j]) {
      const SpillDecision &decision = decisions[d];
      const Spill &spill = result.spills[firstSpill + d];
      const TileDecl &decl = kernel.tiles[static_cast<size_t>(decision.victimId)];
      TileOp save = decl.space == MemSpace::SBUF
                        ? dataMove(TileOpKind::Store, Opcode::DmaCopy, Engine::DMA, wholeScratch(decl, spill.holder),
                                   wholeTile(decl, decision.victimId))
                        : dataMove(TileOpKind::Copy, Opcode::TensorCopy, Engine::DVE,
                                   wholeTile(kernel.tiles[static_cast<size_t>(spill.holder)], spill.holder),
                                   wholeTile(decl, decision.victimId));
      emit(std::move(save), j, true);
    }
  }
  isSpillOp = std::move(spillOps);
}

}  // namespace

int32_t chooseSpillVictim(const std::vector<SpillCandidate> &candidates) {
  const SpillCandidate *best = nullptr;
  for (const SpillCandidate &candidate : candidates) {
    if (!best || candidate.nextUse > best->nextUse ||
        (candidate.nextUse == best->nextUse &&
         (candidate.bytes > best->bytes || (candidate.bytes == best->bytes && candidate.id < best->id))))
      best = &candidate;
  }
  return best ? best->id : -1;
}

Expected<SpilledKernel> allocateWithSpills(const Kernel &kernel, const MachineProfile &profile) {
  SpilledKernel result;
  result.kernel = kernel;
  result.origin.resize(kernel.ops.size());
  std::iota(result.origin.begin(), result.origin.end(), 0);
  TESSEL_RETURN_IF_ERROR(checkOperandsFit(kernel, profile));
  std::vector<bool> isSpillOp(kernel.ops.size(), false);
  for (;;) {
    PlacementResult placed = placeTiles(result.kernel, profile);
    if (Allocation *allocation = std::get_if<Allocation>(&placed)) {
      result.allocation = std::move(*allocation);
      return result;
    }
    AllocationFailure &failure = std::get<AllocationFailure>(placed);
    if (failure.tile < 0) return std::move(failure.error);
    // One sweep decides every spill the live bytes call for; where the bytes fit but placement
    // failed (fragmentation), at least one victim goes where the failing tile starts.
    const uint64_t capacity = static_cast<uint64_t>(
        failure.space == MemSpace::PSUM ? profile.psum.bytesPerPartition : profile.sbuf.bytesPerPartition);
    const int32_t failedAt = tileUses(result.kernel)[static_cast<size_t>(failure.tile)].front().op;
    const size_t firstSpill = result.spills.size();
    const std::vector<SpillDecision> decisions = sweep(result, isSpillOp, failure.space, capacity, failedAt);
    // Nothing can go: the tiles the op needs fit by bytes (checked above) but not by placement.
    if (decisions.empty() || result.spills.size() >= kMaxSpills) return std::move(failure.error);
    applySpills(result, isSpillOp, decisions, firstSpill);
  }
}

}  // namespace tessel::nc::tile
