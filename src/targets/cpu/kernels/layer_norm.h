// LayerNormalization over the trailing axes of an f32 tensor viewed as [rows, n]: each row is
// normalized by its own mean and variance, then scaled (and shifted) by n-element Scale and B.
// RMSNormalization (Llama's RMSNorm) the same way, by the root mean square alone.
// Two passes over a row that is still in cache (mean, then the deviations from it, with the
// corrected two-pass algorithm), so a large common offset cancels neither the variance nor the
// output's precision away. ISA variants at run time.
#pragma once

#include <cstdint>
#include <span>

#include "support/thread_pool.h"
#include "targets/cpu/kernels/cpu_features.h"

namespace tessel::cpu {

/// One ISA variant of the layer-norm row loop.
struct LayerNormKernels {
  const char *name;
  Isa isa;
  /// y = (x - mean) / sqrt(var + epsilon) * scale (+ bias) over one row of n elements; bias may be
  /// null; y may equal x.
  void (*row)(const float *x, const float *scale, const float *bias, float *y, int64_t n, float epsilon);
  /// RMS normalization of one row: y = x / sqrt(mean(x^2) + epsilon) * scale; y may equal x.
  void (*rmsRow)(const float *x, const float *scale, float *y, int64_t n, float epsilon);
};

std::span<const LayerNormKernels *const> layerNormKernelVariants();
const LayerNormKernels &layerNormKernels();

/// Normalizes `rows` rows of n elements, threaded over rows.
void runLayerNorm(const LayerNormKernels &kernels, const float *x, const float *scale, const float *bias, float *y,
                  int64_t rows, int64_t n, float epsilon, ThreadPool *pool);

/// RMS-normalizes `rows` rows of n elements, threaded over rows.
void runRmsNorm(const LayerNormKernels &kernels, const float *x, const float *scale, float *y, int64_t rows,
                int64_t n, float epsilon, ThreadPool *pool);

}  // namespace tessel::cpu
