// Liveness-based SBUF/PSUM allocation; see allocate.h. One Pool per memory hands out byte ranges
// (the same in every partition): never-used space first, then freed regions oldest-freed first
// (FIFO), each extended over the free regions after it when one alone is too small. An interval map remembers which tile last held
// each byte so that a new tile knows whose accesses it must wait for.
#include "targets/nc/tile/allocate.h"

#include <algorithm>
#include <map>
#include <optional>
#include <set>

#include <fmt/format.h>

namespace tessel::nc::tile {
namespace {

uint64_t alignUp(uint64_t value, uint64_t align) { return (value + align - 1) / align * align; }

/// One memory's free space and occupancy history.
class Pool {
 public:
  Pool(uint64_t capacity, uint64_t bankBytes) : capacity_(capacity), bankBytes_(bankBytes) {}

  uint64_t capacity() const { return capacity_; }
  uint64_t inUse() const { return inUse_; }
  uint64_t peak() const { return peak_; }

  /// The largest block the pool could hand out right now (adjacent free regions together), ignoring
  /// alignment.
  uint64_t largestFree() const {
    uint64_t largest = capacity_ - top_;
    for (auto it = free_.begin(); it != free_.end(); ++it)
      largest = std::max(largest, freeEndFrom(it->first) - it->first);
    return largest;
  }

  /// A `size`-byte block aligned to `align` (and inside one bank where banks apply), or nullopt.
  std::optional<uint64_t> allocate(uint64_t size, uint64_t align) {
    // Never-used space counts as freed the earliest of all.
    if (std::optional<uint64_t> offset = place(top_, capacity_, size, align)) {
      if (*offset > top_) release(top_, *offset - top_, /*seq=*/0);
      top_ = *offset + size;
      return take(*offset, size);
    }
    // Then regions oldest-freed first, each extended over the free regions that follow it.
    for (auto it = fifo_.begin(); it != fifo_.end(); ++it) {
      uint64_t start = it->second;
      std::optional<uint64_t> offset = place(start, freeEndFrom(start), size, align);
      if (!offset) continue;
      uint64_t blockEnd = *offset + size;
      uint64_t firstSeq = free_.at(start).seq;
      for (auto region = free_.find(start); region != free_.end() && region->first < blockEnd;) {
        uint64_t regionEnd = region->first + region->second.size, seq = region->second.seq;
        fifo_.erase({seq, region->first});
        region = free_.erase(region);
        if (regionEnd > blockEnd) insertRegion(blockEnd, regionEnd - blockEnd, seq);
      }
      if (*offset > start) insertRegion(start, *offset - start, firstSeq);
      if (blockEnd > top_) top_ = blockEnd;
      return take(*offset, size);
    }
    return std::nullopt;
  }

  /// Returns [offset, offset + size) to the pool, freed now.
  void free(uint64_t offset, uint64_t size) {
    inUse_ -= size;
    release(offset, size, ++seq_);
  }

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
  struct Region {
    uint64_t size = 0;
    uint64_t seq = 0;  // When it was freed; 0 = never used.
  };
  struct Occupant {
    uint64_t end = 0;
    int32_t tile = -1;
  };

  /// The first aligned offset in [start, end) where `size` bytes fit (inside one bank), or nullopt.
  std::optional<uint64_t> place(uint64_t start, uint64_t end, uint64_t size, uint64_t align) const {
    uint64_t offset = alignUp(start, align);
    if (bankBytes_ > 0 && size > 0 && offset / bankBytes_ != (offset + size - 1) / bankBytes_)
      offset = alignUp(offset, bankBytes_);
    if (offset + size > end) return std::nullopt;
    return offset;
  }

  uint64_t take(uint64_t offset, uint64_t size) {
    inUse_ += size;
    peak_ = std::max(peak_, inUse_);
    return offset;
  }

  void insertRegion(uint64_t offset, uint64_t size, uint64_t seq) {
    free_[offset] = Region{size, seq};
    fifo_.insert({seq, offset});
  }

  /// Adds a free region. Neighbours are not merged, so that each freed buffer keeps its place in
  /// the FIFO; allocate() extends a region over the free ones after it when it needs to.
  void release(uint64_t offset, uint64_t size, uint64_t seq) { insertRegion(offset, size, seq); }

  /// The end of the free space that starts at free region `start`: through adjacent free regions,
  /// and on to the capacity when they reach never-used space.
  uint64_t freeEndFrom(uint64_t start) const {
    auto it = free_.find(start);
    uint64_t end = start;
    while (it != free_.end() && it->first == end) {
      end += it->second.size;
      ++it;
    }
    return end == top_ ? capacity_ : end;
  }

  uint64_t capacity_, bankBytes_;
  uint64_t top_ = 0, inUse_ = 0, peak_ = 0, seq_ = 0;
  std::map<uint64_t, Region> free_;             // By offset.
  std::set<std::pair<uint64_t, uint64_t>> fifo_;  // (seq, offset): oldest-freed first.
  std::map<uint64_t, Occupant> occupants_;      // Start -> (end, tile) of the last holder.
};

}  // namespace

uint64_t tileDataBytes(const TileDecl &tile) {
  uint64_t elements = 1;
  for (int64_t n : tile.freeShape) elements *= static_cast<uint64_t>(n);
  return elements * dtypeSizeBytes(tile.dtype);
}

Expected<Allocation> allocateTiles(const Kernel &kernel, const MachineProfile &profile) {
  const size_t numTiles = kernel.tiles.size();
  Allocation allocation;
  allocation.tiles.resize(numTiles);
  allocation.predecessors.resize(numTiles);
  for (size_t t = 0; t < numTiles; ++t) {
    allocation.tiles[t].tile = static_cast<int32_t>(t);
    allocation.tiles[t].space = kernel.tiles[t].space;
    allocation.tiles[t].firstOp = allocation.tiles[t].lastOp = -1;
  }
  for (size_t i = 0; i < kernel.ops.size(); ++i) {
    for (const std::optional<OperandView> &operand : kernel.ops[i].operands) {
      if (!operand || operand->space == MemSpace::HBM) continue;
      TESSEL_CHECK(operand->id >= 0 && static_cast<size_t>(operand->id) < numTiles, "op #{} tile {}", i, operand->id);
      TilePlacement &placement = allocation.tiles[operand->id];
      if (placement.firstOp < 0) placement.firstOp = static_cast<int64_t>(i);
      placement.lastOp = static_cast<int64_t>(i);
    }
  }
  std::vector<std::vector<int32_t>> startsAt(kernel.ops.size()), endsAt(kernel.ops.size());
  for (size_t t = 0; t < numTiles; ++t) {
    if (allocation.tiles[t].firstOp < 0) continue;
    startsAt[allocation.tiles[t].firstOp].push_back(static_cast<int32_t>(t));
    endsAt[allocation.tiles[t].lastOp].push_back(static_cast<int32_t>(t));
  }

  const uint64_t bankBytes = static_cast<uint64_t>(profile.psum.bankFp32Elements) * dtypeSizeBytes(DType::F32);
  Pool sbuf(static_cast<uint64_t>(profile.sbuf.bytesPerPartition), /*bankBytes=*/0);
  Pool psum(static_cast<uint64_t>(profile.psum.bytesPerPartition), bankBytes);
  const uint64_t minAlign = 4, largeAlign = 64, largeTileBytes = 512;
  for (size_t i = 0; i < kernel.ops.size(); ++i) {
    for (int32_t t : startsAt[i]) {
      const TileDecl &decl = kernel.tiles[t];
      bool inPsum = decl.space == MemSpace::PSUM;
      Pool &pool = inPsum ? psum : sbuf;
      uint64_t dataBytes = tileDataBytes(decl);
      uint64_t align = dataBytes >= largeTileBytes ? largeAlign : minAlign;
      uint64_t bytes = alignUp(std::max<uint64_t>(dataBytes, 1), align);
      if (inPsum && bytes > bankBytes)
        return makeError(ErrorCode::InvalidArgument,
                         "kernel '{}': tile '{}' ({} bytes per partition) does not fit one {}-byte PSUM bank (T2)",
                         kernel.name, decl.name, dataBytes, bankBytes);
      std::optional<uint64_t> offset = pool.allocate(bytes, align);
      if (!offset) {
        uint64_t available = pool.capacity() - pool.inUse();
        std::string why = bytes > available ? fmt::format("short by {}", bytes - available)
                                            : fmt::format("fragmented: largest free block {} bytes",
                                                          pool.largestFree());
        return makeError(ErrorCode::InvalidArgument,
                         "kernel '{}': tile '{}' ({} bytes per partition) does not fit {}: {} bytes in use of {} ({})",
                         kernel.name, decl.name, bytes, inPsum ? "PSUM" : "SBUF", pool.inUse(), pool.capacity(), why);
      }
      TilePlacement &placement = allocation.tiles[t];
      placement.offsetBytes = *offset;
      placement.bytesPerPartition = bytes;
      allocation.predecessors[t] = pool.occupy(*offset, *offset + bytes, t);
    }
    for (int32_t t : endsAt[i]) {
      const TilePlacement &placement = allocation.tiles[t];
      (placement.space == MemSpace::PSUM ? psum : sbuf).free(placement.offsetBytes, placement.bytesPerPartition);
    }
  }
  allocation.peakSbufBytesPerPartition = sbuf.peak();
  allocation.peakPsumBytesPerPartition = psum.peak();
  return allocation;
}

}  // namespace tessel::nc::tile
