// Slab copies along one axis. A tensor of sizes S seen around axis a is a [outer, S[a], inner]
// block matrix (outer = product of S before a, inner = product after), so every operation here is
// a series of contiguous block copies.
#include "ops/reference/axis_slicing.h"

#include <cstring>
#include <string>

namespace tessel::ref {

namespace {

int64_t productOf(const std::vector<int64_t> &sizes, size_t begin, size_t end) {
  int64_t product = 1;
  for (size_t i = begin; i < end; ++i) product *= sizes[i];
  return product;
}

/// Copies `count` blocks of `blockElements` contiguous elements; block b starts at
/// srcOffset + b * srcStride in `src` and at dstOffset + b * dstStride in `dst` (in elements).
void copyBlocks(const Tensor &src, int64_t srcOffset, int64_t srcStride, Tensor &dst, int64_t dstOffset,
                int64_t dstStride, int64_t blockElements, int64_t count) {
  if (blockElements == 0 || count == 0) return;
  if (src.dtype() == DType::String) {
    const std::string *in = src.data<std::string>();
    std::string *out = dst.data<std::string>();
    for (int64_t b = 0; b < count; ++b) {
      for (int64_t e = 0; e < blockElements; ++e) {
        out[dstOffset + b * dstStride + e] = in[srcOffset + b * srcStride + e];
      }
    }
    return;
  }
  const auto elementBytes = static_cast<int64_t>(dtypeSize(src.dtype()));
  const auto *in = static_cast<const uint8_t *>(src.rawData());
  auto *out = static_cast<uint8_t *>(dst.rawData());
  for (int64_t b = 0; b < count; ++b) {
    std::memcpy(out + (dstOffset + b * dstStride) * elementBytes, in + (srcOffset + b * srcStride) * elementBytes,
                static_cast<size_t>(blockElements * elementBytes));
  }
}

}  // namespace

Tensor sliceAlongAxis(const Tensor &input, size_t axis, int64_t start, int64_t length) {
  const std::vector<int64_t> &sizes = input.sizes();
  TESSEL_CHECK(axis < sizes.size() && start >= 0 && length >= 0 && start + length <= sizes[axis],
               "slice [{}, +{}) of axis {} of {}", start, length, axis, formatSizes(sizes));
  std::vector<int64_t> outSizes = sizes;
  outSizes[axis] = length;
  Tensor out(input.dtype(), outSizes);
  const int64_t outer = productOf(sizes, 0, axis);
  const int64_t inner = productOf(sizes, axis + 1, sizes.size());
  copyBlocks(input, start * inner, sizes[axis] * inner, out, 0, length * inner, length * inner, outer);
  return out;
}

Tensor selectAlongAxis(const Tensor &input, size_t axis, int64_t index) {
  Tensor slab = sliceAlongAxis(input, axis, index, 1);
  std::vector<int64_t> outSizes = input.sizes();
  outSizes.erase(outSizes.begin() + static_cast<std::ptrdiff_t>(axis));
  return slab.reshaped(std::move(outSizes));
}

Expected<Tensor> concatAlongAxis(const std::vector<Tensor> &parts, size_t axis) {
  TESSEL_CHECK(!parts.empty() && axis < parts[0].rank(), "concat of {} parts along axis {}", parts.size(), axis);
  const Tensor &first = parts[0];
  std::vector<int64_t> outSizes = first.sizes();
  outSizes[axis] = 0;
  for (size_t i = 0; i < parts.size(); ++i) {
    const Tensor &part = parts[i];
    if (part.dtype() != first.dtype()) {
      return makeError(ErrorCode::TypeMismatch, "element {} is {}; element 0 is {}", i, dtypeName(part.dtype()),
                       dtypeName(first.dtype()));
    }
    bool sameOtherSizes = part.rank() == first.rank();
    for (size_t d = 0; sameOtherSizes && d < part.rank(); ++d) {
      sameOtherSizes = d == axis || part.size(d) == first.size(d);
    }
    if (!sameOtherSizes) {
      return makeError(ErrorCode::ShapeMismatch, "element {} has shape {}; element 0 has {} (only axis {} may differ)",
                       i, formatSizes(part.sizes()), formatSizes(first.sizes()), axis);
    }
    outSizes[axis] += part.size(axis);
  }
  Tensor out(first.dtype(), outSizes);
  const int64_t outer = productOf(outSizes, 0, axis);
  const int64_t inner = productOf(outSizes, axis + 1, outSizes.size());
  int64_t position = 0;  // Where the current part starts along `axis`.
  for (const Tensor &part : parts) {
    const int64_t block = part.size(axis) * inner;
    copyBlocks(part, 0, block, out, position * inner, outSizes[axis] * inner, block, outer);
    position += part.size(axis);
  }
  return out;
}

Expected<Tensor> stackAlongAxis(const std::vector<Tensor> &parts, size_t axis) {
  TESSEL_CHECK(!parts.empty() && axis <= parts[0].rank(), "stack of {} parts along axis {}", parts.size(), axis);
  std::vector<Tensor> withAxis;
  withAxis.reserve(parts.size());
  for (size_t i = 0; i < parts.size(); ++i) {
    if (parts[i].sizes() != parts[0].sizes()) {
      return makeError(ErrorCode::ShapeMismatch, "element {} has shape {}; element 0 has {} (stacked parts must match)",
                       i, formatSizes(parts[i].sizes()), formatSizes(parts[0].sizes()));
    }
    std::vector<int64_t> sizes = parts[i].sizes();
    sizes.insert(sizes.begin() + static_cast<std::ptrdiff_t>(axis), 1);
    withAxis.push_back(parts[i].reshaped(std::move(sizes)));
  }
  return concatAlongAxis(withAxis, axis);
}

}  // namespace tessel::ref
