// SBUF/PSUM allocation of a kernel's tiles by liveness. A tile lives from the first to the last op
// that touches it. Its bytes sit at the same offset in every partition, aligned (4 bytes, 64 for
// tiles of 512 bytes or more); a PSUM tile lies inside one bank (T2).
//
// Reuse policy: a new tile takes the block whose most recently freed byte was freed the longest ago
// (space never used counts as freed first; ties go to the lowest offset). Judging the whole block,
// not where it starts, matters: a small old gap next to the buffer the previous loop iteration just
// freed is as fresh as that buffer, so the next iteration goes elsewhere (multi-buffering) instead of
// waiting for the previous one (the reuse is a WAR/WAW dependence). Should the pass fail although
// the live tiles fit by bytes (fragmentation), the tiles are placed again offline, largest first,
// each at the lowest offset free over its whole live range. The allocator also reports, per tile,
// the dead tiles that last held its bytes, so that dependence analysis can order the reuse.
#pragma once

#include <cstdint>
#include <string_view>
#include <variant>
#include <vector>

#include "support/diagnostic.h"
#include "targets/nc/machine/profile.h"
#include "targets/nc/tile/compile.h"
#include "targets/nc/tile/tile_ir.h"

namespace tessel::nc::tile {

/// How the offsets were chosen.
enum class AllocationPolicy : uint8_t {
  LeastRecentlyFreed,  // Online, in op order: the block freed the longest ago.
  LargestFirst,        // Offline fallback against fragmentation: largest tiles first, lowest offset.
};

/// "least-recently-freed" or "largest-first".
std::string_view allocationPolicyName(AllocationPolicy policy);

/// The placement of every tile of a kernel.
struct Allocation {
  std::vector<TilePlacement> tiles;                 // Indexed by tile id; unused tiles have firstOp -1.
  std::vector<std::vector<int32_t>> predecessors;   // Per tile: the tiles that last occupied its bytes.
  uint64_t peakSbufBytesPerPartition = 0, peakPsumBytesPerPartition = 0;
  AllocationPolicy policy = AllocationPolicy::LeastRecentlyFreed;
};

/// Bytes per partition a tile's data takes (before alignment).
uint64_t tileDataBytes(const TileDecl &tile);
/// Bytes per partition a tile takes in its memory (its data, aligned).
uint64_t tileAllocatedBytes(const TileDecl &tile);

/// Why placement failed: the memory, the tile that found no block in op order (-1 when no placement
/// can succeed, e.g. a PSUM tile larger than a bank), and the error that says so.
struct AllocationFailure {
  MemSpace space = MemSpace::SBUF;
  int32_t tile = -1;
  Diagnostic error;
};
using PlacementResult = std::variant<Allocation, AllocationFailure>;

/// Places every tile, or says where it could not (spill.h decides what to do about it).
PlacementResult placeTiles(const Kernel &kernel, const MachineProfile &profile);

/// Places every tile. Errors: live tiles that exceed SBUF or PSUM (saying by how much, where, and
/// which tiles are live there), or a PSUM tile larger than one bank.
Expected<Allocation> allocateTiles(const Kernel &kernel, const MachineProfile &profile);

}  // namespace tessel::nc::tile
