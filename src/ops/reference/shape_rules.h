// Shape rules that a reference kernel and shape inference both apply, kept once so the two cannot
// disagree: how Split-18's num_outputs chunks an axis, and how Resize (opset 11 on; the opset-18
// `axes` and `keep_aspect_ratio_policy` included) turns scales or sizes into output sizes.
#pragma once

#include <cstdint>
#include <vector>

#include "ir/graph.h"
#include "support/diagnostic.h"

namespace tessel::ref {

/// `parts` chunks of ceil(size / parts) along an axis of `size`, the last one smaller (Split-18's
/// num_outputs). Fails when `parts` is not positive or the last chunk would be negative.
Expected<std::vector<int64_t>> splitIntoChunks(int64_t size, int64_t parts);

/// What Resize resamples to: per axis of the input, the output size and the scale that maps
/// output coordinates back (for sizes under a keep_aspect_ratio_policy other than stretch, the one
/// common scale, not size ratio).
struct ResizeTarget {
  std::vector<int64_t> outSizes;
  std::vector<double> scales;
};

/// Resolves Resize's scales or sizes (exactly one non-empty) for an input of `inSizes`, reading
/// the node's `axes` (scales and sizes then name only those axes; the others keep their size) and
/// `keep_aspect_ratio_policy`.
Status resolveResizeTarget(const std::vector<int64_t> &inSizes, const std::vector<double> &scalesIn,
                           const std::vector<int64_t> &sizesIn, const Node &node, ResizeTarget &target);

}  // namespace tessel::ref
