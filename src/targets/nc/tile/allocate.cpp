// Liveness-based SBUF/PSUM allocation; see allocate.h. Each memory is placed on its own: first
// online in op order (FreeSpace hands out the least recently freed block), and only if that fails,
// offline largest-first. A last sweep in op order records which tile last held each byte (the
// predecessors the dependence analysis orders a reuse after) and the peak bytes in use.
#include "targets/nc/tile/allocate.h"

#include <algorithm>
#include <map>
#include <optional>
#include <utility>

#include <fmt/format.h>

namespace tessel::nc::tile {
namespace {

uint64_t alignUp(uint64_t value, uint64_t align) { return (value + align - 1) / align * align; }

// Offsets are 4-byte aligned, 64-byte for tiles of 512 bytes or more.
constexpr uint64_t kMinAlign = 4, kLargeAlign = 64, kLargeTileBytes = 512;

/// The geometry every placement obeys: capacity, alignment and (PSUM) banks.
struct Memory {
  uint64_t capacity = 0, bankBytes = 0;  // bankBytes 0: no banks.

  /// The first offset at or after `start` where a `size`-byte block is aligned and inside one bank.
  uint64_t placeFrom(uint64_t start, uint64_t size, uint64_t align) const {
    uint64_t offset = alignUp(start, align);
    if (bankBytes > 0 && size > 0 && offset / bankBytes != (offset + size - 1) / bankBytes)
      offset = alignUp(offset, bankBytes);
    return offset;
  }
};

/// One memory's free space as regions that remember when they were freed. Adjacent regions are not
/// merged, so that a block spanning several is judged by the freshest of them.
class FreeSpace {
 public:
  explicit FreeSpace(const Memory &memory) : memory_(memory) { free_[0] = Region{memory.capacity, 0}; }

  /// The free block freed the longest ago over its whole extent (lowest offset on ties), or nullopt.
  std::optional<uint64_t> allocate(uint64_t size, uint64_t align) {
    std::optional<uint64_t> best;
    uint64_t bestSeq = 0;
    for (auto runBegin = free_.begin(); runBegin != free_.end();) {
      auto runEnd = runBegin;
      uint64_t end = runBegin->first;
      while (runEnd != free_.end() && runEnd->first == end) {
        end += runEnd->second.size;
        ++runEnd;
      }
      for (auto start = runBegin; start != runEnd; ++start) {
        uint64_t offset = memory_.placeFrom(start->first, size, align);
        if (offset + size > end) break;  // Later starts place later still.
        uint64_t freshest = 0;
        for (auto region = start; region != runEnd && region->first < offset + size; ++region)
          if (region->first + region->second.size > offset) freshest = std::max(freshest, region->second.seq);
        if (!best || freshest < bestSeq) best = offset, bestSeq = freshest;
        if (bestSeq == 0) break;  // Never used: nothing is older; lower offsets came first.
      }
      if (best && bestSeq == 0) break;
      runBegin = runEnd;
    }
    if (best) carve(*best, size);
    return best;
  }

  /// Returns [offset, offset + size), freed now.
  void release(uint64_t offset, uint64_t size) { free_[offset] = Region{size, ++seq_}; }

 private:
  struct Region {
    uint64_t size = 0;
    uint64_t seq = 0;  // When it was freed; 0 = never used.
  };

  /// Removes [offset, offset + size) from the free regions; the parts of them outside keep their seq.
  void carve(uint64_t offset, uint64_t size) {
    const uint64_t blockEnd = offset + size;
    auto it = free_.upper_bound(offset);
    --it;  // The region holding `offset`: runs are contiguous.
    while (it != free_.end() && it->first < blockEnd) {
      const uint64_t start = it->first, end = start + it->second.size, seq = it->second.seq;
      it = free_.erase(it);
      if (start < offset) free_[start] = Region{offset - start, seq};
      if (end > blockEnd) free_[blockEnd] = Region{end - blockEnd, seq};
    }
  }

  Memory memory_;
  uint64_t seq_ = 0;
  std::map<uint64_t, Region> free_;  // By offset.
};

/// Remembers which tile last held each byte.
class Occupancy {
 public:
  /// Records that `tile` now holds [start, end) and returns the tiles that held parts of it before.
  std::vector<int32_t> occupy(uint64_t start, uint64_t end, int32_t tile) {
    std::vector<int32_t> previous;
    auto it = occupants_.upper_bound(start);
    if (it != occupants_.begin()) --it;
    while (it != occupants_.end() && it->first < end) {
      uint64_t s = it->first, e = it->second.end;
      int32_t holder = it->second.tile;
      if (e <= start) {
        ++it;
        continue;
      }
      if (std::find(previous.begin(), previous.end(), holder) == previous.end()) previous.push_back(holder);
      it = occupants_.erase(it);
      if (s < start) occupants_[s] = Occupant{start, holder};
      if (e > end) occupants_[end] = Occupant{e, holder};
    }
    occupants_[start] = Occupant{end, tile};
    std::sort(previous.begin(), previous.end());
    return previous;
  }

 private:
  struct Occupant {
    uint64_t end = 0;
    int32_t tile = -1;
  };
  std::map<uint64_t, Occupant> occupants_;  // Start -> (end, tile) of the last holder.
};

/// What one memory's placement works from: the tiles in it, by live range, with their sizes.
struct SpacePlan {
  MemSpace space = MemSpace::SBUF;
  Memory memory;
  std::vector<std::vector<int32_t>> startsAt, endsAt;  // Per op.
  std::vector<uint64_t> bytes, align;                   // Per tile (0 for tiles elsewhere).
};

/// Online placement in op order; returns the first tile that found no block, or -1.
int32_t placeLeastRecentlyFreed(const SpacePlan &plan, std::vector<TilePlacement> &tiles) {
  FreeSpace space(plan.memory);
  for (size_t i = 0; i < plan.startsAt.size(); ++i) {
    for (int32_t t : plan.startsAt[i]) {
      std::optional<uint64_t> offset = space.allocate(plan.bytes[t], plan.align[t]);
      if (!offset) return t;
      tiles[t].offsetBytes = *offset;
    }
    for (int32_t t : plan.endsAt[i]) space.release(tiles[t].offsetBytes, plan.bytes[t]);
  }
  return -1;
}

/// Offline placement, largest tiles first, each at the lowest offset free over its live range;
/// returns the first tile that found no block, or -1.
int32_t placeLargestFirst(const SpacePlan &plan, std::vector<TilePlacement> &tiles) {
  std::vector<int32_t> order;
  for (const std::vector<int32_t> &starting : plan.startsAt) order.insert(order.end(), starting.begin(), starting.end());
  std::stable_sort(order.begin(), order.end(), [&](int32_t a, int32_t b) { return plan.bytes[a] > plan.bytes[b]; });
  std::vector<int32_t> placed;
  std::vector<std::pair<uint64_t, uint64_t>> taken;
  for (int32_t t : order) {
    taken.clear();
    for (int32_t other : placed)
      if (tiles[other].firstOp <= tiles[t].lastOp && tiles[t].firstOp <= tiles[other].lastOp)
        taken.push_back({tiles[other].offsetBytes, tiles[other].offsetBytes + plan.bytes[other]});
    std::sort(taken.begin(), taken.end());
    uint64_t candidate = 0;
    std::optional<uint64_t> offset;
    for (const auto &[start, end] : taken) {
      uint64_t at = plan.memory.placeFrom(candidate, plan.bytes[t], plan.align[t]);
      if (at + plan.bytes[t] <= start) {
        offset = at;
        break;
      }
      candidate = std::max(candidate, end);
    }
    if (!offset) {
      uint64_t at = plan.memory.placeFrom(candidate, plan.bytes[t], plan.align[t]);
      if (at + plan.bytes[t] > plan.memory.capacity) return t;
      offset = at;
    }
    tiles[t].offsetBytes = *offset;
    placed.push_back(t);
  }
  return -1;
}

/// The error for tile `failed`: the op of its live range where the most bytes are live, how many,
/// by how much they exceed the memory (or that it is fragmented there), and the tiles live there.
Diagnostic fitError(const Kernel &kernel, const SpacePlan &plan, const std::vector<TilePlacement> &tiles,
                    int32_t failed) {
  const TilePlacement &tile = tiles[failed];
  int64_t worstOp = tile.firstOp;
  uint64_t worstBytes = 0;
  for (int64_t op = tile.firstOp; op <= tile.lastOp; ++op) {
    uint64_t live = 0;
    for (size_t t = 0; t < tiles.size(); ++t)
      if (plan.bytes[t] > 0 && tiles[t].firstOp <= op && op <= tiles[t].lastOp) live += plan.bytes[t];
    if (live > worstBytes) worstBytes = live, worstOp = op;
  }
  std::vector<int32_t> live;
  for (size_t t = 0; t < tiles.size(); ++t)
    if (plan.bytes[t] > 0 && tiles[t].firstOp <= worstOp && worstOp <= tiles[t].lastOp)
      live.push_back(static_cast<int32_t>(t));
  std::stable_sort(live.begin(), live.end(), [&](int32_t a, int32_t b) { return plan.bytes[a] > plan.bytes[b]; });
  constexpr size_t kListedTiles = 8;
  std::vector<std::string> names;
  for (size_t k = 0; k < live.size() && k < kListedTiles; ++k)
    names.push_back(fmt::format("'{}' {}", kernel.tiles[live[k]].name, plan.bytes[live[k]]));
  if (live.size() > kListedTiles) names.push_back(fmt::format("{} more", live.size() - kListedTiles));
  const uint64_t capacity = plan.memory.capacity;
  std::string why = worstBytes > capacity
                        ? fmt::format("short by {}", worstBytes - capacity)
                        : fmt::format("fragmented: no free {}-byte block", plan.bytes[failed]);
  return makeError(ErrorCode::InvalidArgument,
                   "kernel '{}': tile '{}' ({} bytes per partition) does not fit {}: the {} tiles live at op #{} take "
                   "{} of {} bytes ({}); live: {}",
                   kernel.name, kernel.tiles[failed].name, plan.bytes[failed],
                   plan.space == MemSpace::PSUM ? "PSUM" : "SBUF", live.size(), worstOp, worstBytes, capacity, why,
                   fmt::join(names, ", "));
}

}  // namespace

std::string_view allocationPolicyName(AllocationPolicy policy) {
  switch (policy) {
    case AllocationPolicy::LeastRecentlyFreed: return "least-recently-freed";
    case AllocationPolicy::LargestFirst: return "largest-first";
  }
  return "?";
}

uint64_t tileDataBytes(const TileDecl &tile) {
  uint64_t elements = 1;
  for (int64_t n : tile.freeShape) elements *= static_cast<uint64_t>(n);
  return elements * dtypeSizeBytes(tile.dtype);
}

uint64_t tileAllocatedBytes(const TileDecl &tile) {
  const uint64_t dataBytes = tileDataBytes(tile);
  const uint64_t align = dataBytes >= kLargeTileBytes ? kLargeAlign : kMinAlign;
  return alignUp(std::max<uint64_t>(dataBytes, 1), align);
}

PlacementResult placeTiles(const Kernel &kernel, const MachineProfile &profile) {
  const size_t numTiles = kernel.tiles.size(), numOps = kernel.ops.size();
  Allocation allocation;
  allocation.tiles.resize(numTiles);
  allocation.predecessors.resize(numTiles);
  for (size_t t = 0; t < numTiles; ++t) {
    allocation.tiles[t].tile = static_cast<int32_t>(t);
    allocation.tiles[t].space = kernel.tiles[t].space;
    allocation.tiles[t].firstOp = allocation.tiles[t].lastOp = -1;
  }
  for (size_t i = 0; i < numOps; ++i) {
    for (const std::optional<OperandView> &operand : kernel.ops[i].operands) {
      if (!operand || operand->space == MemSpace::HBM) continue;
      TESSEL_CHECK(operand->id >= 0 && static_cast<size_t>(operand->id) < numTiles, "op #{} tile {}", i, operand->id);
      TilePlacement &placement = allocation.tiles[operand->id];
      if (placement.firstOp < 0) placement.firstOp = static_cast<int64_t>(i);
      placement.lastOp = static_cast<int64_t>(i);
    }
  }

  const uint64_t bankBytes = static_cast<uint64_t>(profile.psum.bankFp32Elements) * dtypeSizeBytes(DType::F32);
  for (MemSpace space : {MemSpace::SBUF, MemSpace::PSUM}) {
    SpacePlan plan;
    plan.space = space;
    plan.memory = space == MemSpace::PSUM
                      ? Memory{static_cast<uint64_t>(profile.psum.bytesPerPartition), bankBytes}
                      : Memory{static_cast<uint64_t>(profile.sbuf.bytesPerPartition), 0};
    plan.startsAt.resize(numOps);
    plan.endsAt.resize(numOps);
    plan.bytes.assign(numTiles, 0);
    plan.align.assign(numTiles, kMinAlign);
    for (size_t t = 0; t < numTiles; ++t) {
      TilePlacement &placement = allocation.tiles[t];
      const TileDecl &decl = kernel.tiles[t];
      if (placement.firstOp < 0 || decl.space != space) continue;
      uint64_t dataBytes = tileDataBytes(decl);
      plan.align[t] = dataBytes >= kLargeTileBytes ? kLargeAlign : kMinAlign;
      plan.bytes[t] = tileAllocatedBytes(decl);
      if (space == MemSpace::PSUM && plan.bytes[t] > bankBytes)
        return AllocationFailure{
            space, -1,
            makeError(ErrorCode::InvalidArgument,
                      "kernel '{}': tile '{}' ({} bytes per partition) does not fit one {}-byte PSUM bank (T2)",
                      kernel.name, decl.name, dataBytes, bankBytes)};
      placement.bytesPerPartition = plan.bytes[t];
      plan.startsAt[placement.firstOp].push_back(static_cast<int32_t>(t));
      plan.endsAt[placement.lastOp].push_back(static_cast<int32_t>(t));
    }
    const int32_t failed = placeLeastRecentlyFreed(plan, allocation.tiles);
    if (failed < 0) continue;
    allocation.policy = AllocationPolicy::LargestFirst;
    // The error names the tile that found no block in op order: where a person would look.
    if (placeLargestFirst(plan, allocation.tiles) >= 0)
      return AllocationFailure{space, failed, fitError(kernel, plan, allocation.tiles, failed)};
  }

  // Who held each byte before, and the peaks, in op order.
  Occupancy sbufHolders, psumHolders;
  uint64_t sbufInUse = 0, psumInUse = 0;
  std::vector<std::vector<int32_t>> startsAt(numOps), endsAt(numOps);
  for (size_t t = 0; t < numTiles; ++t)
    if (allocation.tiles[t].firstOp >= 0) startsAt[allocation.tiles[t].firstOp].push_back(static_cast<int32_t>(t));
  for (size_t i = 0; i < numOps; ++i) {
    for (int32_t t : startsAt[i]) {
      TilePlacement &placement = allocation.tiles[t];
      bool inPsum = placement.space == MemSpace::PSUM;
      allocation.predecessors[t] = (inPsum ? psumHolders : sbufHolders)
                                       .occupy(placement.offsetBytes, placement.offsetBytes + placement.bytesPerPartition,
                                               t);
      uint64_t &inUse = inPsum ? psumInUse : sbufInUse;
      uint64_t &peak = inPsum ? allocation.peakPsumBytesPerPartition : allocation.peakSbufBytesPerPartition;
      inUse += placement.bytesPerPartition;
      peak = std::max(peak, inUse);
      endsAt[placement.lastOp].push_back(t);
    }
    for (int32_t t : endsAt[i])
      (allocation.tiles[t].space == MemSpace::PSUM ? psumInUse : sbufInUse) -= allocation.tiles[t].bytesPerPartition;
  }
  return allocation;
}

Expected<Allocation> allocateTiles(const Kernel &kernel, const MachineProfile &profile) {
  PlacementResult placed = placeTiles(kernel, profile);
  if (AllocationFailure *failure = std::get_if<AllocationFailure>(&placed)) return std::move(failure->error);
  return std::get<Allocation>(std::move(placed));
}

}  // namespace tessel::nc::tile
