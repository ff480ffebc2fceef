// Fixing the sizes of a model's graph inputs before a target plans it for those shapes, and
// checking feeds against the symbolic dims a model declares.
#pragma once

#include <cstdint>
#include <limits>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "ir/graph.h"
#include "ir/runtime_value.h"
#include "support/diagnostic.h"

namespace tessel {

using InputSizes = std::vector<std::pair<std::string, std::vector<int64_t>>>;

/// Gives every symbolic or unknown dim of the graph inputs a size: `sizes` maps an input name to
/// its sizes; `batch` (if > 0) replaces a non-static leading dim. Fails, naming the input, when a
/// dim stays unknown, unless `keepSymbolic` (for a target that plans every shape).
Status specializeInputs(Model &model, const InputSizes &sizes, int64_t batch, bool keepSymbolic = false);

/// The sizes a symbolic dim may take (`--dim S=1..2048`); unbounded unless given.
struct DimRange {
  int64_t lo = 0;
  int64_t hi = std::numeric_limits<int64_t>::max();
  std::string str() const;
};
using DimRanges = std::map<std::string, DimRange>;

/// Parses "NAME=LO..HI" (either bound may be left out: "S=..512", "S=16..").
Expected<std::pair<std::string, DimRange>> parseDimRange(const std::string &spec);

/// Checks `feeds` against the graph inputs of `model` before a plan for their shapes is chosen:
/// every input fed (or defaulted), dtype and rank as declared, static dims equal, each symbolic
/// dim within its range and the same size in every input that names it. Errors name the input,
/// the dim and the sizes. Returns the sizes of the tensor inputs, in graph-input order.
Expected<InputSizes> checkFeedShapes(const Model &model, const NamedValues &feeds, const DimRanges &ranges);

}  // namespace tessel
