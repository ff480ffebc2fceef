// Instruction construction: turns each Tile IR op into one accelerator instruction by placing its
// views — a tile view becomes an SBUF/PSUM access pattern at the tile's allocated offset, an HBM view
// one at its tensor's offset in the HBM image — and copying its ALU ops, function and immediates.
// The engine (where the op left it open), DMA queue and semaphores are filled in later.
#pragma once

#include <cstdint>
#include <vector>

#include "targets/nc/isa/instruction.h"
#include "targets/nc/tile/allocate.h"
#include "targets/nc/tile/compile.h"
#include "targets/nc/tile/tile_ir.h"

namespace tessel::nc::tile {

/// Lays the kernel's HBM tensors out one after another (64-byte aligned), in declaration order.
/// The bytes a tensor takes in HBM: its elements, rounded up to the 64-byte alignment of each tensor.
uint64_t hbmFootprint(DType dtype, const std::vector<int64_t> &shape);

std::vector<HbmPlacement> layoutHbm(const Kernel &kernel, uint64_t *totalBytes);

/// The access pattern of `view` once tiles and tensors are placed.
AccessPattern placeView(const OperandView &view, const Allocation &allocation,
                        const std::vector<HbmPlacement> &hbm);

/// The instruction for `op` (engine: op.engine, or DVE as a placeholder when open; no waits).
Instruction emitOp(const TileOp &op, const Allocation &allocation, const std::vector<HbmPlacement> &hbm);

}  // namespace tessel::nc::tile
