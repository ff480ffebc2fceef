// Pieces shared by the nn and quantization reference kernels: the geometry of a sliding window
// (kernel, strides, dilations, pads and output sizes of Conv, ConvTranspose and the pools, from
// one set of formulas), a counter over an N-D index space, and tensors widened to double so the
// kernels accumulate in double whatever the storage type.
#pragma once

#include <cstdint>
#include <vector>

#include "ops/reference/helpers.h"

namespace tessel::ref {

/// Per spatial axis: where a window sits and how far it reaches. All vectors have one entry per
/// spatial axis (the input's rank minus two).
struct WindowGeometry {
  std::vector<int64_t> kernel;
  std::vector<int64_t> strides;
  std::vector<int64_t> dilations;
  std::vector<int64_t> padBegin;
  std::vector<int64_t> padEnd;
  std::vector<int64_t> inSizes;
  std::vector<int64_t> outSizes;

  size_t spatialRank() const { return kernel.size(); }
};

/// The kernel's spatial sizes: the `kernel_shape` attribute, or `fromWeight` (the trailing dims of
/// a Conv weight) when the attribute is absent. Fails when the attribute's length is not
/// `spatialRank`, a size is not positive, or it disagrees with `fromWeight`; pass an empty
/// `fromWeight` for pools, where the attribute is required.
Expected<std::vector<int64_t>> readKernelShape(const Node &node, size_t spatialRank,
                                               const std::vector<int64_t> &fromWeight);

/// Geometry of Conv and the pools: reads strides, dilations, pads and auto_pad (NOTSET,
/// SAME_UPPER, SAME_LOWER, VALID) from `node`; `ceilMode` rounds output sizes up (pools), dropping
/// a last window that would start inside the end padding. Fails on a bad attribute length, a
/// non-positive stride or dilation, negative or absurdly large values, or a window (kernel and
/// dilation) larger than the padded input.
Expected<WindowGeometry> forwardWindow(const Node &node, const std::vector<int64_t> &inSpatial,
                                       std::vector<int64_t> kernel, bool ceilMode);

/// Geometry of ConvTranspose, where `outSizes` is the (larger) output: from output_shape when given,
/// else from pads, output_padding and auto_pad, per the ONNX formulas. `padBegin` is how much of
/// the full transposed result is cut from the start of each axis.
Expected<WindowGeometry> transposedWindow(const Node &node, const std::vector<int64_t> &inSpatial,
                                          std::vector<int64_t> kernel);

/// Steps `index` through the row-major index space of `sizes`; returns false after the last one.
/// Start from all zeros; an index space with a zero size has no elements (check numElements).
inline bool nextIndex(std::vector<int64_t> &index, const std::vector<int64_t> &sizes) {
  for (size_t axis = sizes.size(); axis-- > 0;) {
    if (++index[axis] < sizes[axis]) return true;
    index[axis] = 0;
  }
  return false;
}


/// Fails when a result of `sizes` (dims that attributes or broadcasting can inflate) would exceed
/// the kernels' allocation limit; checked before the double working copy is allocated.
Status checkWorkSize(const std::vector<int64_t> &sizes, const char *what);
/// Fails unless the first `count` inputs are present tensors: ONNX marks them required, but a
/// model can still leave them out.
Status requireInputs(const KernelContext &ctx, size_t count);
/// Fails unless input `index` has a floating-point dtype, naming the op and the dtype.
Status expectFloatInput(const KernelContext &ctx, size_t index);
/// Fails unless input `index` has `rank` dims (or at least `rank` when `orMore`).
Status expectRank(const KernelContext &ctx, size_t index, size_t rank, bool orMore = false);

}  // namespace tessel::ref
