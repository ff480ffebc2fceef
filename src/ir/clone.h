// An in-memory copy of a model, for passes that rewrite a graph while the original stays as it was
// (a plan per input shape starts from its own copy).
#pragma once

#include "ir/graph.h"

namespace tessel {

/// A copy of `model`: every graph, subgraph, node and value is new; initializer tensors share their
/// storage with the original (passes replace initializers, they never write into them).
Model cloneModel(const Model &model);

}  // namespace tessel
