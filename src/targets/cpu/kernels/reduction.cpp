// Reductions: run-time choice of the ISA variant and the threaded driver; the loops are in
// reduction_impl.h, compiled per ISA under isa/.
#include "targets/cpu/kernels/reduction.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <limits>

#include "targets/cpu/kernels/elementwise.h"

namespace tessel::cpu {

extern const ReductionKernels kReductionAvx512;
extern const ReductionKernels kReductionAvx2;
extern const ReductionKernels kReductionGeneric;

namespace {

const ReductionKernels *const kVariants[] = {&kReductionAvx512, &kReductionAvx2, &kReductionGeneric};

float identityOf(ReduceKind kind) {
  switch (kind) {
    case ReduceKind::Sum:
    case ReduceKind::Mean: return 0.0f;
    case ReduceKind::Max: return -std::numeric_limits<float>::infinity();
    case ReduceKind::Min: return std::numeric_limits<float>::infinity();
  }
  return 0.0f;
}

// Columns per task of the strided form: long enough for full vectors, short enough to stay in L1.
constexpr int64_t kColumnBlock = 1024;

}  // namespace

std::span<const ReductionKernels *const> reductionKernelVariants() { return kVariants; }

const ReductionKernels &reductionKernels() {
  static const ReductionKernels &selected = []() -> const ReductionKernels & {
    for (const ReductionKernels *kernels : kVariants) {
      if (!hasAll(hostIsa(), kernels->isa)) continue;
      if (std::getenv("TESSEL_LOG_KERNELS") != nullptr) {
        std::fprintf(stderr, "tessel: reduction uses %s (host isa: %s)\n", kernels->name, isaName(hostIsa()).c_str());
      }
      return *kernels;
    }
    return kReductionGeneric;
  }();
  return selected;
}

void runReduce(const ReductionKernels &kernels, ReduceKind kind, const float *x, float *y, int64_t outer,
               int64_t length, int64_t inner, ThreadPool *pool) {
  if (outer <= 0 || inner <= 0) return;
  // 0/0 makes an empty Mean NaN, as the reference's double division does.
  const float scale = kind == ReduceKind::Mean ? 1.0f / float(length) : 1.0f;
  const bool divide = kind == ReduceKind::Mean;
  if (inner == 1) {
    const int64_t grain = std::max<int64_t>(1, 16384 / std::max<int64_t>(length, 1));
    parallelRanges(pool, outer, grain, [&](int64_t begin, int64_t end) {
      for (int64_t o = begin; o < end; ++o) {
        const float value = kernels.row(kind, x + o * length, length);
        y[o] = divide ? value * scale : value;
      }
    });
    return;
  }
  const int64_t blocksPerOuter = (inner + kColumnBlock - 1) / kColumnBlock;
  const int64_t grain = std::max<int64_t>(1, 16384 / (std::max<int64_t>(length, 1) * kColumnBlock));
  const float identity = identityOf(kind);
  parallelRanges(pool, outer * blocksPerOuter, grain, [&](int64_t begin, int64_t end) {
    for (int64_t task = begin; task < end; ++task) {
      const int64_t o = task / blocksPerOuter;
      const int64_t column = (task % blocksPerOuter) * kColumnBlock;
      const int64_t width = std::min(kColumnBlock, inner - column);
      float *out = y + o * inner + column;
      const float *in = x + o * length * inner + column;
      std::fill(out, out + width, identity);
      for (int64_t k = 0; k < length; ++k) kernels.accumulate(kind, in + k * inner, out, width);
      if (divide) {
        for (int64_t j = 0; j < width; ++j) out[j] *= scale;
      }
    }
  });
}

}  // namespace tessel::cpu
