// Fusion of elementwise ops into FusedElementwise nodes.
#pragma once

#include "ir/graph.h"
#include "support/diagnostic.h"

namespace tessel {

/// Groups maximal DAGs of floating-point elementwise ops (unary activations and math, binary
/// arithmetic, Pow, Max/Min of two, PRelu, Where, Clip, Cast between float types, tessel Gelu)
/// whose outputs all have the shape of the group's last value and whose intermediate values are
/// read only inside the group and are not graph outputs, into one tessel FusedElementwise: its
/// inputs are the values the group reads from outside, its `body` the ops themselves, with
/// one-element constants as initializers of the body. Groups of one op are left alone. Runs after
/// the other fusions, whose ops it does not take apart. Requires: shapes inferred. The fused node
/// takes the name of the group's last value. Returns whether any group was fused.
Expected<bool> fuseElementwise(Model &model);

}  // namespace tessel
