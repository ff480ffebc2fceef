// The pass pipelines behind the optimization levels (`tessel opt -O1`, and later `tessel compile`).
#pragma once

#include <string_view>
#include <vector>

#include "passes/pass_manager.h"

namespace tessel {

struct PipelineStep {
  std::string_view pass;  // A cliName from passes.def.
};
using PipelineSpec = std::vector<PipelineStep>;

/// The highest level there is; levels run from 0 (no passes) to this.
constexpr int kMaxOptimizationLevel = 3;

/// The pipeline of optimization level `level`. Precondition: 0 <= level <= kMaxOptimizationLevel.
const PipelineSpec &pipelineForLevel(int level);

/// Appends the passes of level `level`; InvalidArgument for a level outside 0..kMaxOptimizationLevel.
Status addOptimizationPipeline(PassManager &manager, int level);

}  // namespace tessel
