// Output chunks and tap windows over [N, C, H, W] activations in standard form (C on partitions,
// N * H * W row-major on the free dim), shared by the convolution and pooling emitters.
#pragma once

#include <cstdint>
#include <vector>

#include "targets/nc/isa/instruction.h"
#include "targets/nc/kernels/tiling.h"

namespace tessel::nc::compiler {

/// Output positions computed together: images [n0, n0 + images), rows [oh0, oh0 + rows) and columns
/// [ow0, ow0 + cols). Either whole images, or rows of one image, or part of one row; so the chunk is
/// contiguous in Y's standard form and laid out as [images][rows][cols].
struct OutputChunk {
  int64_t n0 = 0, images = 1, oh0 = 0, rows = 1, ow0 = 0, cols = 1;
  int64_t size() const { return images * rows * cols; }
  /// Offset of the chunk's first element in the standard form of an [N, ., OH, OW] tensor.
  int64_t offset(int64_t OH, int64_t OW) const { return (n0 * OH + oh0) * OW + ow0; }
};

/// Rows [rowBegin, rowEnd) of image n in chunks of at most `limit` positions, appended to `out`.
void splitRows(int64_t n, int64_t rowBegin, int64_t rowEnd, int64_t OW, int64_t limit, std::vector<OutputChunk> &out);

/// All N * OH * OW output positions in chunks of at most `limit`.
std::vector<OutputChunk> splitOutput(int64_t N, int64_t OH, int64_t OW, int64_t limit);

/// The [images, rows, cols] access pattern of a window: image, row and column steps in elements
/// (dims of count 1 left out, except the columns).
std::vector<FreeDim> windowDims(int64_t images, int64_t imageStep, int64_t rows, int64_t rowStep, int64_t cols,
                                int64_t colStep);

/// Outputs o in [begin, begin + count) with 0 <= o * stride + offset < extent.
kernels::Span insideRange(int64_t begin, int64_t count, int64_t stride, int64_t offset, int64_t extent);

}  // namespace tessel::nc::compiler
