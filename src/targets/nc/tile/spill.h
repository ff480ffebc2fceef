// Spilling when a kernel's live tiles do not fit SBUF or PSUM. Placement (allocate.h) is tried; where
// it fails, at the op where a tile found no block (the pressure point), one tile live there but not
// used by that op is chosen, its value saved after its last write before that op and brought back
// before its next use, and placement is tried again, until it fits.
//
// Victim: the tile used again the latest (furthest next use, Belady's choice), the policy the model
// compiler uses for activations across kernels: it frees the space for the longest stretch per
// spill, so the fewest spills make the kernel fit. Each round spills victims in that order until
// they cover what the live tiles exceed the memory by. An SBUF tile goes to an HBM scratch tensor
// (one DMA store, one DMA load), unless its value is an unchanged copy of HBM data that nothing
// writes (its only write a load of a read-only input): then it is not saved but loaded again from
// there (rematerialized, half the traffic), as when a kernel holds more input tiles than fit. A PSUM
// tile goes to an SBUF tile (DVE copies out and back: DMA does not reach PSUM), which may in turn
// spill. A PSUM tile whose next use accumulates onto it is not a
// candidate (accumulation is defined onto matmul results only). The copies keep the dtype, so
// results stay bit-exact; the dependences on the tile and the scratch order them. The error remains
// where spilling cannot help: an op whose own operands exceed a memory (checked first: by how much,
// and which tiles), or, rarely, tiles an op needs that fit by bytes but not by placement.
#pragma once

#include <cstdint>
#include <vector>

#include "support/diagnostic.h"
#include "targets/nc/machine/profile.h"
#include "targets/nc/tile/allocate.h"
#include "targets/nc/tile/compile.h"
#include "targets/nc/tile/tile_ir.h"

namespace tessel::nc::tile {

/// A value that could be spilled at some point: who it is, when it is used next, its size.
struct SpillCandidate {
  int32_t id = -1;
  int64_t nextUse = 0;
  uint64_t bytes = 0;
};

/// The candidate used again the latest (ties: the larger, then the lower id), or -1 if none.
int32_t chooseSpillVictim(const std::vector<SpillCandidate> &candidates);

/// The kernel as compiled: the input kernel with the spill ops inserted, its placement, the spills,
/// and per op of the new kernel the input op it stands for (a spill op: the op it saves after or
/// restores before).
struct SpilledKernel {
  Kernel kernel;
  Allocation allocation;
  std::vector<Spill> spills;
  std::vector<int32_t> origin;
};

/// Places the tiles of `kernel`, spilling as above where they do not fit. Errors: a PSUM tile larger
/// than a bank; an op whose operands alone do not fit (by how much, and the tiles live there).
Expected<SpilledKernel> allocateWithSpills(const Kernel &kernel, const MachineProfile &profile);

}  // namespace tessel::nc::tile
