// Softmax over the last dim of [R, C]: rows on partitions, max-subtracted exponentials with the row
// sum accumulated by ACT, scaled by the reciprocal of the sum.
//
// One family for the kernel library and the model compiler: emitSoftmaxRows is the emit over
// SBUF-resident rows that both run (the model compiler on its activations, `tessel kernel run
// softmax` between a load and a store). Rows wider than SBUF take the library kernel's two-pass
// form over column chunks (option chunk), which the model compiler does not need (checkSoftmax).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "targets/nc/kernels/kernel_def.h"
#include "targets/nc/tile/dsl.h"

namespace tessel::nc::kernels {

/// Elements per partition of the model compiler's emitSoftmaxRows calls (rows of a chunk together,
/// and its longest row): the f32 exponentials stay small and chunks overlap.
inline constexpr int64_t kSoftmaxChunkElements = 8192;

/// Softmax over `rows` rows of `length` contiguous elements of src [P, rows * length] into dst (same
/// shape, any dtype; dst may be src): row max and its negation on DVE (one engine, no semaphore
/// between them), exp(x - max) on ACT (one row per partition: into dst, the f32 row sum in ACT's
/// accumulator; several: into an f32 tile, summed on DVE), the reciprocal of the sum, the scale on DVE.
void emitSoftmaxRows(tile::KernelBuilder &b, const std::string &name, const tile::TileView &dst,
                     const tile::TileView &src, int64_t rows, int64_t length);

/// "softmax" (option chunk=N: column chunk of the two-pass form used when a row does not fit SBUF).
std::vector<KernelDef> softmaxKernels();

}  // namespace tessel::nc::kernels
