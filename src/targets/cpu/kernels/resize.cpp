// The table-driven 2-D resize (see resize.h).
#include "targets/cpu/kernels/resize.h"

#include <algorithm>
#include <cstring>

namespace tessel::cpu {
namespace {

void nearestRow(const ResizePlan &plan, const float *source, float *out) {
  const int64_t *index = plan.columns.index0.data();
  if (plan.inner == 1) {
    for (int64_t ow = 0; ow < plan.outWidth; ++ow) out[ow] = source[index[ow]];
    return;
  }
  const size_t pixelBytes = size_t(plan.inner) * sizeof(float);
  for (int64_t ow = 0; ow < plan.outWidth; ++ow) std::memcpy(out + ow * plan.inner, source + index[ow] * plan.inner, pixelBytes);
}

void linearRow(const ResizePlan &plan, const float *top, const float *bottom, float wTop, float wBottom, float *out) {
  const ResizeAxis &c = plan.columns;
  const int64_t inner = plan.inner;
  for (int64_t ow = 0; ow < plan.outWidth; ++ow) {
    const int64_t j0 = c.index0[size_t(ow)] * inner, j1 = c.index1[size_t(ow)] * inner;
    const float w0 = c.weight0[size_t(ow)], w1 = c.weight1[size_t(ow)];
    float *o = out + ow * inner;
    for (int64_t i = 0; i < inner; ++i) {
      o[i] = wTop * (w0 * top[j0 + i] + w1 * top[j1 + i]) + wBottom * (w0 * bottom[j0 + i] + w1 * bottom[j1 + i]);
    }
  }
}

/// Output rows [row0, row0 + count) of one plane.
void resizeRows(const ResizePlan &plan, const float *x, float *y, int64_t row0, int64_t count) {
  const ResizeAxis &r = plan.rows;
  const int64_t outRow = plan.outWidth * plan.inner, inRow = plan.inWidth * plan.inner;
  for (int64_t oh = row0; oh < row0 + count; ++oh) {
    float *out = y + oh * outRow;
    const int64_t i0 = r.index0[size_t(oh)], i1 = r.index1[size_t(oh)];
    // Upsampling repeats a source row (nearest) or a source pair and weights (linear): copy it.
    if (oh > row0 && i0 == r.index0[size_t(oh - 1)] && i1 == r.index1[size_t(oh - 1)] &&
        r.weight0[size_t(oh)] == r.weight0[size_t(oh - 1)] && r.weight1[size_t(oh)] == r.weight1[size_t(oh - 1)]) {
      std::memcpy(out, out - outRow, size_t(outRow) * sizeof(float));
      continue;
    }
    if (plan.linear) {
      linearRow(plan, x + i0 * inRow, x + i1 * inRow, r.weight0[size_t(oh)], r.weight1[size_t(oh)], out);
    } else {
      nearestRow(plan, x + i0 * inRow, out);
    }
  }
}

}  // namespace

void resize2d(const ResizePlan &plan, const float *x, float *y, ThreadPool *pool) {
  const int threads = pool != nullptr ? pool->size() : 1;
  // Split each plane's rows too when there are fewer planes than a few per thread.
  const int64_t splits = std::clamp<int64_t>(4 * threads / std::max<int64_t>(plan.planes, 1), 1, plan.outHeight);
  const int64_t rowsPerTask = (plan.outHeight + splits - 1) / splits;
  auto task = [&](int64_t t) {
    const int64_t plane = t / splits, row0 = (t % splits) * rowsPerTask;
    if (row0 >= plan.outHeight) return;
    resizeRows(plan, x + plane * plan.inHeight * plan.inWidth * plan.inner,
               y + plane * plan.outHeight * plan.outWidth * plan.inner, row0, std::min(rowsPerTask, plan.outHeight - row0));
  };
  const int64_t tasks = plan.planes * splits;
  if (pool != nullptr) {
    pool->parallelFor(tasks, task);
  } else {
    for (int64_t t = 0; t < tasks; ++t) task(t);
  }
}

}  // namespace tessel::cpu
