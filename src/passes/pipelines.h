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

/// Runs the part of level `level`'s pipeline whose result does not depend on the input sizes, on
/// a model whose inputs keep symbolic dims: folding what is constant, half promotion, and folding
/// BatchNorms and affine scales into the weights. A target that plans many shapes of one model
/// (the cpu per shape, the accelerator per bucket) does it once and shares the weights it makes.
/// The fusions and layout choices wait for each shape, where the static types they match on are
/// known (a residual Add joins its convolution only when both shapes are known equal), so each
/// shape's graph is the one a static compile makes.
Status foldSizeIndependent(Model &model, int optLevel);

/// Appends the passes of level `level`; InvalidArgument for a level outside 0..kMaxOptimizationLevel.
Status addOptimizationPipeline(PassManager &manager, int level);

}  // namespace tessel
