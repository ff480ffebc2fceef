// See slice_geometry.h.
#include "ops/slice_geometry.h"

#include <algorithm>

namespace tessel {

Expected<std::vector<AxisSlice>> sliceAxes(std::span<const int64_t> inSizes, std::span<const int64_t> starts,
                                           std::span<const int64_t> ends, std::span<const int64_t> axes,
                                           std::span<const int64_t> steps) {
  const size_t count = starts.size();
  if (ends.size() != count || (!axes.empty() && axes.size() != count) || (!steps.empty() && steps.size() != count)) {
    return makeError(ErrorCode::InvalidArgument, "starts, ends, axes and steps have {}, {}, {} and {} values", count,
                     ends.size(), axes.empty() ? count : axes.size(), steps.empty() ? count : steps.size());
  }
  const auto rank = static_cast<int64_t>(inSizes.size());
  std::vector<AxisSlice> slices(inSizes.size());
  for (size_t a = 0; a < inSizes.size(); ++a) slices[a].size = inSizes[a];
  std::vector<bool> seen(inSizes.size(), false);
  for (size_t i = 0; i < count; ++i) {
    const int64_t given = axes.empty() ? static_cast<int64_t>(i) : axes[i];
    const int64_t axis = given < 0 ? given + rank : given;
    if (axis < 0 || axis >= rank) {
      return makeError(ErrorCode::InvalidArgument, "axis {} is out of range for a tensor of rank {}", given, rank);
    }
    const auto a = static_cast<size_t>(axis);
    if (seen[a]) return makeError(ErrorCode::InvalidArgument, "axis {} is sliced twice", given);
    seen[a] = true;
    const int64_t givenStep = steps.empty() ? 1 : steps[i];
    if (givenStep == 0) return makeError(ErrorCode::InvalidArgument, "step for axis {} is 0", given);
    const int64_t dim = inSizes[a];
    // A step longer than the axis takes at most one element; clamping it keeps the arithmetic
    // below from overflowing (bounds of INT64_MAX are common) without changing the result.
    const int64_t step = std::clamp<int64_t>(givenStep, -std::max<int64_t>(dim, 1), std::max<int64_t>(dim, 1));
    int64_t start = starts[i] < 0 ? starts[i] + dim : starts[i];
    int64_t end = ends[i] < 0 ? ends[i] + dim : ends[i];
    int64_t size = 0;
    if (dim == 0) {
      start = 0;
    } else if (step > 0) {
      start = std::clamp<int64_t>(start, 0, dim);
      end = std::clamp<int64_t>(end, 0, dim);
      size = end > start ? (end - start + step - 1) / step : 0;
    } else {
      start = std::clamp<int64_t>(start, 0, dim - 1);
      end = std::clamp<int64_t>(end, -1, dim - 1);
      size = start > end ? (start - end - step - 1) / -step : 0;
    }
    slices[a] = {size == 0 ? 0 : start, step, size};  // Nothing read: keep the offset inside the input.
  }
  return slices;
}

}  // namespace tessel
