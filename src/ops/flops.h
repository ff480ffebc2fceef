// A static FLOP estimate per node from inferred shapes, for `tessel info` and later cost models.
// Multiply-adds count as two FLOPs; elementwise ops count one per output element.
#pragma once

#include <cstdint>
#include <optional>

#include "ir/graph.h"

namespace tessel {

/// FLOPs of one execution of `node` with symbolic dims taken as 1, or nullopt when a shape it
/// needs is unknown.
std::optional<int64_t> estimateFlops(const Node &node);

}  // namespace tessel
