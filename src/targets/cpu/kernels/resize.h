// Resize of two adjacent axes of an f32 tensor for the cpu target: nearest or (bi)linear, with
// every output row and column's source indices and weights computed once at compile time (the
// lowering derives them with the reference's coordinate formulas), so a run is gathers and
// multiply-adds. The axes after the two are one contiguous block per pixel (the channels of a
// channels-last tensor), moved whole; planes (all leading axes together) split over the pool.
#pragma once

#include <cstdint>
#include <vector>

#include "ops/resize_geometry.h"
#include "support/thread_pool.h"

namespace tessel::cpu {

/// Along one axis, output coordinate i reads inputs index0[i] and index1[i] with weights
/// weight0[i] and weight1[i] (nearest: index1 = index0, weight0 = 1, weight1 = 0).
using ResizeAxis = ResizeTwoTaps;

struct ResizePlan {
  int64_t planes = 1;  // Product of the leading (unresized) axes.
  int64_t inHeight = 1, inWidth = 1, outHeight = 1, outWidth = 1;
  int64_t inner = 1;    // Floats per pixel: product of the trailing (unresized) axes.
  bool linear = false;  // Else nearest: each output copies index0's element.
  ResizeAxis rows, columns;
};

/// Y[p, oh, ow, i] per the plan. `pool` may be null.
void resize2d(const ResizePlan &plan, const float *x, float *y, ThreadPool *pool);

}  // namespace tessel::cpu
