// Softmax and LogSoftmax over one axis of an f32 tensor viewed as [outer, length, inner]: the
// normalized axis has `length` elements spaced `inner` apart. inner == 1 (the last axis, and every
// opset < 13 coerce-to-2D case) runs one contiguous row at a time; otherwise blocks of columns are
// normalized together so the loads stay contiguous. ISA variants are chosen at run time.
#pragma once

#include <cstdint>
#include <span>

#include "support/thread_pool.h"
#include "targets/cpu/kernels/cpu_features.h"

namespace tessel::cpu {

/// One ISA variant of the softmax loops.
struct SoftmaxKernels {
  const char *name;
  Isa isa;
  /// y = softmax(x) (log-softmax when `log`) over one contiguous row of n elements. y may equal x.
  void (*row)(const float *x, float *y, int64_t n, bool log);
  /// The same over `width` <= kSoftmaxColumnBlock adjacent columns of a [length, stride] block:
  /// column j normalizes x[k * stride + j] over k < length. y may equal x.
  void (*columns)(const float *x, float *y, int64_t length, int64_t stride, int64_t width, bool log);
};

/// Columns one `columns` call normalizes at most (its per-column state lives on the stack).
constexpr int64_t kSoftmaxColumnBlock = 64;

std::span<const SoftmaxKernels *const> softmaxKernelVariants();
const SoftmaxKernels &softmaxKernels();

/// Softmax of x viewed as [outer, length, inner] along the middle axis, threaded over rows (or
/// column blocks). y may equal x.
void runSoftmax(const SoftmaxKernels &kernels, const float *x, float *y, int64_t outer, int64_t length, int64_t inner,
                bool log, ThreadPool *pool);

}  // namespace tessel::cpu
