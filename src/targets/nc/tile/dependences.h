// Dependences between the ops of a placed kernel: two ops depend when the bytes they touch overlap
// (partition range x byte ranges in SBUF/PSUM, byte ranges in HBM) and at least one writes (RAW,
// WAR, WAW). Accesses are indexed per tile and per HBM tensor, each keeping its writes and the reads
// since, and a write that covers earlier records retires them (it is ordered after them, so later
// accesses inherit the order), so the work is near linear in the ops. A tile placed where dead
// tiles lived is ordered after their last accesses until a write covers the whole tile.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "targets/nc/isa/instruction.h"
#include "targets/nc/tile/allocate.h"
#include "targets/nc/tile/tile_ir.h"

namespace tessel::nc::tile {

/// RAW, WAR, WAW: through memory. Order: collectives keep their recorded order, since every core's
/// k-th collective must be the same one and the cores' programs may schedule differently. Prefetch:
/// a load waits for an op that ends shortly before its data is needed (prefetch.h).
enum class DependenceKind : uint8_t { RAW, WAR, WAW, Order, Prefetch };

/// "RAW", "WAR", "WAW", "order" or "prefetch".
std::string_view dependenceKindName(DependenceKind kind);

/// One edge: the consumer (the op whose list holds it) runs after `producer`.
struct Dependence {
  int32_t producer = -1;
  DependenceKind kind = DependenceKind::RAW;
};

/// Per op, its producers (each once, lower op indices only).
struct DependenceGraph {
  std::vector<std::vector<Dependence>> preds;
};

/// The dependences of `kernel`, whose ops lowered to `insns` (same indices; placed operands).
DependenceGraph computeDependences(const Kernel &kernel, const std::vector<Instruction> &insns,
                                   const Allocation &allocation);

}  // namespace tessel::nc::tile
