// Spill insertion; see spill.h. Each round places the tiles; on failure it picks one victim at the
// pressure point, rewrites the kernel (a save op after the victim's last write before that point, a
// restore op into a new tile before its next use, later ops renamed to the new tile) and places again.
#include "targets/nc/tile/spill.h"

#include <algorithm>
#include <numeric>
#include <string>

#include <fmt/format.h>

namespace tessel::nc::tile {
namespace {

// A bound on the rounds, far above what any kernel needs (each spill removes one live stretch).
constexpr size_t kMaxSpills = 4096;
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

/// Rewrites `result.kernel`: `victim`'s value saved after its last write before `pressure`, restored
/// into a new tile before its next use, which the later ops use instead; `isSpillOp` follows the ops.
void spillAt(SpilledKernel &result, std::vector<bool> &isSpillOp, const std::vector<TileUse> &uses, int32_t victim,
             int32_t pressure) {
  Kernel &kernel = result.kernel;
  const TileDecl decl = kernel.tiles[static_cast<size_t>(victim)];
  int32_t previousUse = -1, nextUse = -1, lastWrite = -1;
  for (const TileUse &use : uses) {
    if (use.op < pressure) {
      previousUse = use.op;
      if (use.write) lastWrite = use.op;
    } else if (use.op > pressure && nextUse < 0) {
      nextUse = use.op;
    }
  }
  const int32_t saveAfter = lastWrite >= 0 ? lastWrite : previousUse;
  const size_t index = result.spills.size();

  Spill spill;
  spill.tile = victim;
  spill.from = decl.space;
  spill.to = decl.space == MemSpace::SBUF ? MemSpace::HBM : MemSpace::SBUF;
  spill.saveAfterOp = result.origin[static_cast<size_t>(saveAfter)];
  spill.reloadBeforeOp = result.origin[static_cast<size_t>(nextUse)];
  spill.pressureOp = result.origin[static_cast<size_t>(pressure)];
  spill.bytesPerPartition = tileAllocatedBytes(decl);

  // The later ops read and write the new tile.
  spill.reloadTile = static_cast<int32_t>(kernel.tiles.size());
  spill.reloadName = fmt::format("{}@reload{}", decl.name, index);
  TileDecl reload = decl;
  reload.name = spill.reloadName;
  kernel.tiles.push_back(reload);
  for (size_t i = static_cast<size_t>(nextUse); i < kernel.ops.size(); ++i)
    for (std::optional<OperandView> &view : kernel.ops[i].operands)
      if (view && view->space == decl.space && view->id == victim) view->id = spill.reloadTile;

  TileOp save, restore;
  if (decl.space == MemSpace::SBUF) {
    spill.holder = static_cast<int32_t>(kernel.tensors.size());
    spill.holderName = fmt::format("{}@spill{}", decl.name, index);
    kernel.tensors.push_back(
        HbmTensorDecl{spill.holderName, decl.dtype, {decl.partitions, freeElements(decl)}, false, /*isScratch=*/true});
    save = dataMove(TileOpKind::Store, Opcode::DmaCopy, Engine::DMA, wholeScratch(decl, spill.holder),
                    wholeTile(decl, victim));
    restore = dataMove(TileOpKind::Load, Opcode::DmaCopy, Engine::DMA, wholeTile(reload, spill.reloadTile),
                       wholeScratch(decl, spill.holder));
  } else {
    // DMA does not reach PSUM: DVE copies the value to SBUF and back (bit-exact: same dtype).
    spill.holder = static_cast<int32_t>(kernel.tiles.size());
    spill.holderName = fmt::format("{}@evict{}", decl.name, index);
    TileDecl holder = decl;
    holder.name = spill.holderName;
    holder.space = MemSpace::SBUF;
    kernel.tiles.push_back(holder);
    save = dataMove(TileOpKind::Copy, Opcode::TensorCopy, Engine::DVE, wholeTile(holder, spill.holder),
                    wholeTile(decl, victim));
    restore = dataMove(TileOpKind::Copy, Opcode::TensorCopy, Engine::DVE, wholeTile(reload, spill.reloadTile),
                       wholeTile(holder, spill.holder));
  }
  // The later insertion first, so that the earlier index still holds.
  kernel.ops.insert(kernel.ops.begin() + nextUse, std::move(restore));
  result.origin.insert(result.origin.begin() + nextUse, result.origin[static_cast<size_t>(nextUse)]);
  isSpillOp.insert(isSpillOp.begin() + nextUse, true);
  kernel.ops.insert(kernel.ops.begin() + saveAfter + 1, std::move(save));
  result.origin.insert(result.origin.begin() + saveAfter + 1, result.origin[static_cast<size_t>(saveAfter)]);
  isSpillOp.insert(isSpillOp.begin() + saveAfter + 1, true);
  result.spills.push_back(std::move(spill));
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
    const Kernel &current = result.kernel;
    const std::vector<std::vector<TileUse>> uses = tileUses(current);
    // Where the tile that found no block starts: what is live there but idle until the op that
    // needs that tile (past any restores in between) may go.
    const int32_t pressure = uses[static_cast<size_t>(failure.tile)].front().op;
    int32_t needer = pressure;
    while (static_cast<size_t>(needer + 1) < current.ops.size() && isSpillOp[static_cast<size_t>(needer)]) ++needer;
    std::vector<SpillCandidate> candidates;
    for (size_t t = 0; t < current.tiles.size(); ++t) {
      const std::vector<TileUse> &list = uses[t];
      if (current.tiles[t].space != failure.space || list.empty()) continue;
      if (list.front().op >= pressure || list.back().op <= needer) continue;
      auto next = std::find_if(list.begin(), list.end(), [&](const TileUse &use) { return use.op >= pressure; });
      if (next->op <= needer) continue;  // Needed now.
      if (accumulatesOnto(current.ops[static_cast<size_t>(next->op)], static_cast<int32_t>(t))) continue;
      candidates.push_back(SpillCandidate{static_cast<int32_t>(t), next->op, tileAllocatedBytes(current.tiles[t])});
    }
    const int32_t victim = chooseSpillVictim(candidates);
    // Nothing can go: the tiles the op needs fit by bytes (checked above) but not by placement.
    if (victim < 0 || result.spills.size() >= kMaxSpills) return std::move(failure.error);
    spillAt(result, isSpillOp, uses[static_cast<size_t>(victim)], victim, pressure);
  }
}

}  // namespace tessel::nc::tile
