// Static FLOP counts per node from inferred shapes, for `tessel info` and the accelerator's MFU.
// Multiply-adds count as two FLOPs; elementwise ops count one per output element.
#pragma once

#include <cstdint>
#include <optional>

#include "ir/graph.h"

namespace tessel {

/// The multiply-add FLOPs of a contraction as the model states it: matmuls (Gemm, the fused and the
/// integer forms), convolutions, attention (q k^T and p v over every key). Nullopt for any other op,
/// or when a shape it needs is unknown. Symbolic dims count as 1.
std::optional<int64_t> contractionFlops(const Node &node);

/// FLOPs of one execution of `node` (contractionFlops, else one per output element) with symbolic
/// dims taken as 1, or nullopt when a shape it needs is unknown.
std::optional<int64_t> estimateFlops(const Node &node);

}  // namespace tessel
