// Recognition of the GELU activation spelled out in elementary ops.
#pragma once

#include "ir/graph.h"
#include "support/diagnostic.h"

namespace tessel {

/// Replaces with tessel Gelu(x):
///  - the erf form x * 0.5 * (1 + Erf(x / sqrt2)), with x / 1.4142135 or x * 0.70710678 inside
///    Erf and the 0.5 multiplied onto x, onto (1 + erf) or onto their product (PyTorch export);
///  - the tanh form 0.5 * x * (1 + Tanh(0.7978845608 * (x + 0.044715 * x^3))), with the cube as
///    Pow(x, 3), x * x * x or x * (x * x) -> approximate = "tanh".
/// Constants match to a relative 1e-4; every intermediate value must be read only inside the
/// pattern and not be a graph output. Gelu takes the name of the pattern's last value.
/// Requires: a verified model. Returns whether any pattern was replaced.
Expected<bool> recognizeGelu(Model &model);

}  // namespace tessel
