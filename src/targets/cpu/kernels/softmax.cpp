// Softmax: run-time choice of the ISA variant and the threaded driver; the loops are in
// softmax_impl.h, compiled per ISA under isa/.
#include "targets/cpu/kernels/softmax.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>

#include "targets/cpu/kernels/elementwise.h"

namespace tessel::cpu {

extern const SoftmaxKernels kSoftmaxAvx512;
extern const SoftmaxKernels kSoftmaxAvx2;
extern const SoftmaxKernels kSoftmaxGeneric;

namespace {

const SoftmaxKernels *const kVariants[] = {&kSoftmaxAvx512, &kSoftmaxAvx2, &kSoftmaxGeneric};

}  // namespace

std::span<const SoftmaxKernels *const> softmaxKernelVariants() { return kVariants; }

const SoftmaxKernels &softmaxKernels() {
  static const SoftmaxKernels &selected = []() -> const SoftmaxKernels & {
    for (const SoftmaxKernels *kernels : kVariants) {
      if (!hasAll(hostIsa(), kernels->isa)) continue;
      if (std::getenv("TESSEL_LOG_KERNELS") != nullptr) {
        std::fprintf(stderr, "tessel: softmax uses %s (host isa: %s)\n", kernels->name, isaName(hostIsa()).c_str());
      }
      return *kernels;
    }
    return kSoftmaxGeneric;
  }();
  return selected;
}

void runSoftmax(const SoftmaxKernels &kernels, const float *x, float *y, int64_t outer, int64_t length, int64_t inner,
                bool log, ThreadPool *pool) {
  if (outer <= 0 || length <= 0 || inner <= 0) return;
  if (inner == 1) {
    // Rows per range so that a range holds at least ~8K elements.
    const int64_t grain = std::max<int64_t>(1, 8192 / length);
    parallelRanges(pool, outer, grain, [&](int64_t begin, int64_t end) {
      for (int64_t row = begin; row < end; ++row) kernels.row(x + row * length, y + row * length, length, log);
    });
    return;
  }
  const int64_t blocksPerOuter = (inner + kSoftmaxColumnBlock - 1) / kSoftmaxColumnBlock;
  const int64_t grain = std::max<int64_t>(1, 8192 / (length * kSoftmaxColumnBlock));
  parallelRanges(pool, outer * blocksPerOuter, grain, [&](int64_t begin, int64_t end) {
    for (int64_t task = begin; task < end; ++task) {
      const int64_t o = task / blocksPerOuter;
      const int64_t column = (task % blocksPerOuter) * kSoftmaxColumnBlock;
      const int64_t offset = o * length * inner + column;
      kernels.columns(x + offset, y + offset, length, inner, std::min(kSoftmaxColumnBlock, inner - column), log);
    }
  });
}

}  // namespace tessel::cpu
