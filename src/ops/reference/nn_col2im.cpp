// Reference kernel of Col2Im (opset 18; PyTorch exports nn.Fold as it): the inverse of im2col.
// Input [N, C * prod(block_shape), L] holds, per block offset, the L sliding-window positions of
// an image of image_shape; every element is added into the image position its window and offset
// reach (strides, dilations, pads as in Conv), positions in the padding are dropped. Accumulates
// in double, as the other nn kernels do.
#include "ops/reference/nn_common.h"
#include "ops/reference/tensor_copy.h"

namespace tessel::ref {

namespace {

/// A per-spatial-axis attribute, `fallback` for every axis when absent; fails on a wrong length.
Expected<std::vector<int64_t>> spatialAttr(const Node &node, const char *name, size_t count, int64_t fallback) {
  std::vector<int64_t> values = node.attrInts(name, std::vector<int64_t>(count, fallback));
  if (values.size() != count) {
    return makeError(ErrorCode::InvalidArgument, "{} has {} values; expected {}", name, values.size(), count);
  }
  return values;
}

}  // namespace

Status refCol2Im(KernelContext &ctx) {
  TESSEL_RETURN_IF_ERROR(requireInputs(ctx, 3));
  TESSEL_RETURN_IF_ERROR(expectFloatInput(ctx, 0));
  TESSEL_RETURN_IF_ERROR(expectRank(ctx, 0, 3));
  const Tensor &x = ctx.tensor(0);
  TESSEL_ASSIGN_OR_RETURN(std::vector<int64_t> image, readIntInput(ctx, 1, "image_shape"));
  TESSEL_ASSIGN_OR_RETURN(std::vector<int64_t> block, readIntInput(ctx, 2, "block_shape"));
  const size_t rank = image.size();
  if (rank == 0 || block.size() != rank) {
    return makeError(ErrorCode::InvalidArgument, "image_shape {} and block_shape {} need the same, nonzero length",
                     formatSizes(image), formatSizes(block));
  }
  TESSEL_ASSIGN_OR_RETURN(std::vector<int64_t> strides, spatialAttr(ctx.node(), "strides", rank, 1));
  TESSEL_ASSIGN_OR_RETURN(std::vector<int64_t> dilations, spatialAttr(ctx.node(), "dilations", rank, 1));
  TESSEL_ASSIGN_OR_RETURN(std::vector<int64_t> pads, spatialAttr(ctx.node(), "pads", 2 * rank, 0));
  // Sliding positions per axis, from the Conv output-size formula.
  std::vector<int64_t> positions(rank);
  int64_t blockSize = 1, positionCount = 1;
  for (size_t d = 0; d < rank; ++d) {
    const int64_t limit = int64_t{1} << 31;
    if (image[d] <= 0 || block[d] <= 0 || strides[d] <= 0 || dilations[d] <= 0 || image[d] > limit ||
        block[d] > limit || dilations[d] > limit || pads[d] < 0 || pads[d + rank] < 0 || pads[d] > limit ||
        pads[d + rank] > limit) {
      return makeError(ErrorCode::InvalidArgument,
                       "axis {}: image {}, block {}, stride {}, dilation {} must be positive and pads {}, {} "
                       "non-negative (and each below 2^31)", d, image[d], block[d], strides[d], dilations[d], pads[d],
                       pads[d + rank]);
    }
    const int64_t span = image[d] + pads[d] + pads[d + rank] - dilations[d] * (block[d] - 1) - 1;
    if (span < 0) {
      return makeError(ErrorCode::InvalidArgument, "axis {}: block {} (dilation {}) is larger than the padded image {}",
                       d, block[d], dilations[d], image[d] + pads[d] + pads[d + rank]);
    }
    positions[d] = span / strides[d] + 1;
    blockSize *= block[d];
    positionCount *= positions[d];
  }
  if (x.size(1) % blockSize != 0) {
    return makeError(ErrorCode::ShapeMismatch, "input dim 1 ({}) is not a multiple of the block size {}", x.size(1),
                     blockSize);
  }
  if (x.size(2) != positionCount) {
    return makeError(ErrorCode::ShapeMismatch, "input dim 2 (L) is {}; expected {}, the positions {} of block {} in "
                     "image {}", x.size(2), positionCount, formatSizes(positions), formatSizes(block), formatSizes(image));
  }
  const int64_t batch = x.size(0), channels = x.size(1) / blockSize;
  std::vector<int64_t> outSizes = {batch, channels};
  outSizes.insert(outSizes.end(), image.begin(), image.end());
  TESSEL_RETURN_IF_ERROR(checkWorkSize(outSizes, "the output"));
  const std::vector<int64_t> imageStrides = stridesOf(image);
  const int64_t imageSize = numElements(image);
  const std::vector<double> in = toDoubles(x);
  std::vector<double> out(static_cast<size_t>(batch * channels * imageSize), 0.0);
  std::vector<int64_t> offset(rank, 0);
  for (int64_t b = 0; b < blockSize; ++b, nextIndex(offset, block)) {
    std::vector<int64_t> position(rank, 0);
    for (int64_t l = 0; l < positionCount; ++l, nextIndex(position, positions)) {
      int64_t target = 0;
      bool inside = true;
      for (size_t d = 0; d < rank && inside; ++d) {
        const int64_t at = position[d] * strides[d] - pads[d] + offset[d] * dilations[d];
        inside = at >= 0 && at < image[d];
        target += at * imageStrides[d];
      }
      if (!inside) continue;
      for (int64_t nc = 0; nc < batch * channels; ++nc) {
        const int64_t n = nc / channels, c = nc % channels;
        out[static_cast<size_t>(nc * imageSize + target)] +=
            in[static_cast<size_t>((n * x.size(1) + c * blockSize + b) * positionCount + l)];
      }
    }
  }
  ctx.setOutput(0, fromDoubles(x.dtype(), outSizes, out));
  return Status::success();
}

}  // namespace tessel::ref
