// LayerNormalization: run-time choice of the ISA variant and the threaded driver; the row loop is
// in layer_norm_impl.h, compiled per ISA under isa/.
#include "targets/cpu/kernels/layer_norm.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>

#include "targets/cpu/kernels/elementwise.h"

namespace tessel::cpu {

extern const LayerNormKernels kLayerNormAvx512;
extern const LayerNormKernels kLayerNormAvx2;
extern const LayerNormKernels kLayerNormGeneric;

namespace {

const LayerNormKernels *const kVariants[] = {&kLayerNormAvx512, &kLayerNormAvx2, &kLayerNormGeneric};

}  // namespace

std::span<const LayerNormKernels *const> layerNormKernelVariants() { return kVariants; }

const LayerNormKernels &layerNormKernels() {
  static const LayerNormKernels &selected = []() -> const LayerNormKernels & {
    for (const LayerNormKernels *kernels : kVariants) {
      if (!hasAll(hostIsa(), kernels->isa)) continue;
      if (std::getenv("TESSEL_LOG_KERNELS") != nullptr) {
        std::fprintf(stderr, "tessel: layer norm uses %s (host isa: %s)\n", kernels->name, isaName(hostIsa()).c_str());
      }
      return *kernels;
    }
    return kLayerNormGeneric;
  }();
  return selected;
}

void runLayerNorm(const LayerNormKernels &kernels, const float *x, const float *scale, const float *bias, float *y,
                  int64_t rows, int64_t n, float epsilon, ThreadPool *pool) {
  if (rows <= 0 || n <= 0) return;
  // Rows per range so that a range holds at least ~8K elements.
  const int64_t grain = std::max<int64_t>(1, 8192 / n);
  parallelRanges(pool, rows, grain, [&](int64_t begin, int64_t end) {
    for (int64_t row = begin; row < end; ++row) kernels.row(x + row * n, scale, bias, y + row * n, n, epsilon);
  });
}

void runRmsNorm(const LayerNormKernels &kernels, const float *x, const float *scale, float *y, int64_t rows,
                int64_t n, float epsilon, ThreadPool *pool) {
  if (rows <= 0 || n <= 0) return;
  const int64_t grain = std::max<int64_t>(1, 8192 / n);
  parallelRanges(pool, rows, grain, [&](int64_t begin, int64_t end) {
    for (int64_t row = begin; row < end; ++row) kernels.rmsRow(x + row * n, scale, y + row * n, n, epsilon);
  });
}

}  // namespace tessel::cpu
