// Fixing the sizes of a model's graph inputs before a target plans it for those shapes.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "ir/graph.h"
#include "support/diagnostic.h"

namespace tessel {

/// Gives every symbolic or unknown dim of the graph inputs a size: `sizes` maps an input name to
/// its sizes; `batch` (if > 0) replaces a non-static leading dim. Fails, naming the input, when a
/// dim stays unknown.
Status specializeInputs(Model &model, const std::vector<std::pair<std::string, std::vector<int64_t>>> &sizes,
                        int64_t batch);

}  // namespace tessel
