// ReduceSum / ReduceMean / ReduceMax / ReduceMin of an f32 tensor viewed as [outer, length, inner]
// over the middle axis: any set of reduced axes that is one contiguous run after merging adjacent
// dims has this form. inner == 1 (innermost axes) reduces contiguous rows; otherwise each output
// row of `inner` elements accumulates `length` contiguous input rows (outermost axes: outer == 1),
// so every load is contiguous either way. ISA variants are chosen at run time.
#pragma once

#include <cstdint>
#include <span>

#include "support/thread_pool.h"
#include "targets/cpu/kernels/cpu_features.h"

namespace tessel::cpu {

enum class ReduceKind : uint8_t { Sum, Mean, Max, Min };

/// One ISA variant of the reduction loops. Max and Min propagate NaN, as the reference does.
struct ReductionKernels {
  const char *name;
  Isa isa;
  /// The sum (Sum, Mean), maximum or minimum of n contiguous elements; the identity for n == 0.
  float (*row)(ReduceKind kind, const float *x, int64_t n);
  /// acc[j] = combine(acc[j], x[j]) for j < n (Mean combines as Sum).
  void (*accumulate)(ReduceKind kind, const float *x, float *acc, int64_t n);
};

std::span<const ReductionKernels *const> reductionKernelVariants();
const ReductionKernels &reductionKernels();

/// y[o, j] = reduce over k of x[o, k, j], for x viewed as [outer, length, inner]; Mean divides by
/// length (an empty Mean is NaN, an empty Max -inf). Threaded over outputs.
void runReduce(const ReductionKernels &kernels, ReduceKind kind, const float *x, float *y, int64_t outer,
               int64_t length, int64_t inner, ThreadPool *pool);

}  // namespace tessel::cpu
