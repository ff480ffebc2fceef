// ONNX Slice's index arithmetic, stated once: negative indices count from the end, bounds clamp to
// the axis, steps may be negative, omitted axes and steps take their defaults. The reference
// kernel, the cpu lowering and the accelerator's slice views all read their offsets from here.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "support/diagnostic.h"

namespace tessel {

/// How one axis of the input is read.
struct AxisSlice {
  int64_t start = 0;  // First index read (0 when nothing is read).
  int64_t step = 1;
  int64_t size = 0;   // Elements in the output along this axis.
};

/// The per-axis slices of an input of `inSizes` (one entry per input dim; an axis not sliced reads
/// whole). `axes` and `steps` may be empty (all leading axes; step 1). Errors: lengths that differ,
/// an axis out of range or sliced twice, a zero step.
Expected<std::vector<AxisSlice>> sliceAxes(std::span<const int64_t> inSizes, std::span<const int64_t> starts,
                                           std::span<const int64_t> ends, std::span<const int64_t> axes,
                                           std::span<const int64_t> steps);

}  // namespace tessel
