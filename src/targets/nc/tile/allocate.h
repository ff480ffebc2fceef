// SBUF/PSUM allocation of a kernel's tiles by liveness. A tile lives from the first to the last op
// that touches it. Its bytes sit at the same offset in every partition, aligned (4 bytes, 64 for
// tiles of 512 bytes or more); a PSUM tile lies inside one bank (T2). Reuse is FIFO: space never
// used counts as freed the earliest, then regions in the order they were freed, so consecutive
// loop iterations land in different buffers (multi-buffering) until the memory wraps around. The
// allocator also reports, per tile, the dead tiles that last held its bytes, so that dependence
// analysis can order the reuse.
#pragma once

#include <cstdint>
#include <vector>

#include "support/diagnostic.h"
#include "targets/nc/machine/profile.h"
#include "targets/nc/tile/compile.h"
#include "targets/nc/tile/tile_ir.h"

namespace tessel::nc::tile {

/// The placement of every tile of a kernel.
struct Allocation {
  std::vector<TilePlacement> tiles;                 // Indexed by tile id; unused tiles have firstOp -1.
  std::vector<std::vector<int32_t>> predecessors;   // Per tile: the tiles that last occupied its bytes.
  uint64_t peakSbufBytesPerPartition = 0, peakPsumBytesPerPartition = 0;
};

/// Bytes per partition a tile's data takes (before alignment).
uint64_t tileDataBytes(const TileDecl &tile);

/// Places every tile. Errors: a tile that does not fit (naming it, the bytes in use and the
/// shortfall) or a PSUM tile larger than one bank.
Expected<Allocation> allocateTiles(const Kernel &kernel, const MachineProfile &profile);

}  // namespace tessel::nc::tile
