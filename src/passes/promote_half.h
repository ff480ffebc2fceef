// Half-precision computation promoted to float32, for targets without fp16/bf16 kernels.
#pragma once

#include "ir/graph.h"
#include "support/diagnostic.h"

namespace tessel {

/// Makes every fp16 and bf16 value a model computes float32: weights (initializers and Constant
/// nodes), node outputs, subgraph values, and the dtypes ops are told to produce (Cast's `to`,
/// ConstantOfShape's value, the generators' `dtype`). Graph inputs and outputs keep their declared
/// types: a Cast after each half input and before each half output converts at the edges, so
/// callers feed and fetch what the model declares. Published fp16 models (fp16 weights with Casts
/// around them) then run on the float32 kernels; the results are those of float32 arithmetic, at
/// least as precise as the model's own. Requires: inferred types. Returns whether anything changed.
Expected<bool> promoteHalf(Model &model);

/// Whether `graph` (or a subgraph) computes any fp16 or bf16 value besides its inputs: what
/// promoteHalf would change.
bool computesHalf(const Graph &graph);

}  // namespace tessel
