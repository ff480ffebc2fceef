// Seeded random feeds for a model's inputs: what `tessel run` feeds for any input not given, and
// what timing-only runs (profiles, timelines) use.
#pragma once

#include <cstdint>
#include <map>
#include <random>
#include <string>

#include "ir/graph.h"
#include "ir/runtime_value.h"

namespace tessel {

/// A random tensor for a graph input: symbolic dims take `dimValues` (default 1); floats are
/// uniform in [-1, 1), integers in [0, 10), bools fair coins. Fails, naming the input, on an
/// untyped input or one too large for this machine's memory.
Expected<Tensor> randomInput(const Value &input, const std::map<std::string, int64_t> &dimValues, std::mt19937_64 &rng);

/// `given` plus a random tensor, in graph order, for every input neither given nor initialized.
Expected<NamedValues> completeFeeds(const Graph &graph, NamedValues given, const std::map<std::string, int64_t> &dimValues,
                                    uint64_t seed);

}  // namespace tessel
