// Moving whole slabs of a tensor along one axis: taking a slice or one index, and joining parts
// by concatenation or stacking. Scan (scan axes), SplitToSequence and ConcatFromSequence are
// built on these; they work on every dtype, strings included, by copying contiguous blocks.
#pragma once

#include <cstdint>
#include <vector>

#include "ir/tensor.h"
#include "support/diagnostic.h"

namespace tessel::ref {

/// The elements of `input` whose index along `axis` lies in [start, start + length); the axis is
/// kept (with size `length`). Precondition: axis < rank, 0 <= start, start + length <= size(axis).
Tensor sliceAlongAxis(const Tensor &input, size_t axis, int64_t start, int64_t length);

/// The rank-(r-1) tensor at `index` along `axis`. Precondition: 0 <= index < size(axis).
Tensor selectAlongAxis(const Tensor &input, size_t axis, int64_t index);

/// Joins `parts` along their existing `axis` (numpy.concatenate). Fails when parts differ in
/// dtype or rank, or in any size other than `axis`'s, naming the first offending part.
/// Precondition: `parts` is not empty and axis < rank of parts[0].
Expected<Tensor> concatAlongAxis(const std::vector<Tensor> &parts, size_t axis);

/// Joins `parts` along a new `axis` (numpy.stack): every part must have the same dtype and sizes.
/// Precondition: `parts` is not empty and axis <= rank of parts[0].
Expected<Tensor> stackAlongAxis(const std::vector<Tensor> &parts, size_t axis);

}  // namespace tessel::ref
