// A decoder's KV cache written in place: the form generation uses where the cache stays on the
// device between steps (runtime/generation.h).
#pragma once

#include "ir/graph.h"
#include "support/diagnostic.h"

namespace tessel {

/// The graph input that says where a step's new positions go in the cache (int64 [1]).
inline constexpr const char *kCachePositionInput = "cache_position";

/// For each graph output present = Concat(past, new) along axis 2 of rank-4 values, where past is a
/// graph input: the output becomes tessel KvCacheUpdate(past, new, cache_position), the past buffer
/// with the new positions written at `cache_position`, of the past's shape. The Concat stays for
/// the nodes that read it (attention over the past and the new positions), so every other output is
/// unchanged; with a padded buffer (capacity positions, the mask 0 over the unwritten ones) the
/// outputs are the same as before, and a target may alias each present to its past's buffer. Adds
/// the graph input `cache_position` (int64 [1]) once. Returns whether anything was rewritten; fails
/// on a model that already has an input of that name.
Expected<bool> writeKvCacheInPlace(Model &model);

}  // namespace tessel
