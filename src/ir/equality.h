// Structural equality of IR objects, for round-trip tests (import -> export -> import, print ->
// parse) and for checking that a pass changed nothing. Values are matched by name and position, not
// by address, so two separately built models compare equal when they describe the same program.
// Each function explains the first difference it finds in `why`, as a path from the model down.
#pragma once

#include <string>

#include "ir/graph.h"

namespace tessel {

/// True when `a` and `b` have the same dtype, sizes and element bits (NaNs of equal bits match).
bool tensorsEqual(const Tensor &a, const Tensor &b);

/// True when the attributes have the same kind and value; subgraphs compare with graphsEqual.
bool attributesEqual(const Attribute &a, const Attribute &b, std::string &why);

/// True when the graphs have the same name; inputs, initializers and outputs (names, types,
/// tensors); and nodes in the same order with the same op, domain, name, input and output names,
/// output types and attributes. Outer-scope references compare by name.
bool graphsEqual(const Graph &a, const Graph &b, std::string &why);

/// True when the models have the same metadata, opset imports and graphsEqual top-level graphs.
/// `sourcePath` is not compared.
bool modelsEqual(const Model &a, const Model &b, std::string &why);

}  // namespace tessel
