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

/// The sizes an accelerator compiles a symbolic dim at (`--buckets S=128,256,512`, or
/// `S=auto:128..2048` for the powers of two from 128 to 2048): one program per size; a run takes
/// the smallest that holds its feeds, padded up to it.
struct DimBuckets {
  std::string dim;
  std::vector<int64_t> sizes;  // Ascending, distinct, each >= 1.
  std::string str() const;     // "S=128,256,512"
};

/// Parses "NAME=A,B,C" or "NAME=auto:LO..HI" (LO and HI powers of two or not: the powers of two
/// from the first at or above LO, then HI itself if it is not one).
Expected<DimBuckets> parseBuckets(const std::string &spec);

/// The size each symbolic dim of the graph inputs takes in `sizes` (as checkFeedShapes returns).
std::map<std::string, int64_t> symbolSizes(const Model &model, const InputSizes &sizes);

/// Checks `feeds` against the graph inputs of `model` before a plan for their shapes is chosen:
/// every input fed (or defaulted), dtype and rank as declared, static dims equal, each symbolic
/// dim within its range and the same size in every input that names it. Errors name the input,
/// the dim and the sizes. Returns the sizes of the tensor inputs, in graph-input order.
Expected<InputSizes> checkFeedShapes(const Model &model, const NamedValues &feeds, const DimRanges &ranges);

}  // namespace tessel
