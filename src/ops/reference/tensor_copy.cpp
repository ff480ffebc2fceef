// Shared pieces of the tensor-family reference kernels; see tensor_copy.h.
#include "ops/reference/tensor_copy.h"

#include <cstring>
#include <optional>

namespace tessel::ref {

ElementCopier::ElementCopier(const Tensor &src, Tensor &dst) {
  TESSEL_CHECK(src.dtype() == dst.dtype(), "element copy from {} to {}", dtypeName(src.dtype()),
               dtypeName(dst.dtype()));
  if (src.dtype() == DType::String) {
    srcStrings_ = src.data<std::string>();
    dstStrings_ = dst.data<std::string>();
    return;
  }
  srcBytes_ = static_cast<const uint8_t *>(src.rawData());
  dstBytes_ = static_cast<uint8_t *>(dst.rawData());
  elementBytes_ = dtypeSize(src.dtype());
}

void ElementCopier::copyRun(int64_t dstIndex, int64_t srcIndex, int64_t count) const {
  if (count <= 0) return;
  if (srcStrings_) {
    for (int64_t i = 0; i < count; ++i) dstStrings_[dstIndex + i] = srcStrings_[srcIndex + i];
    return;
  }
  std::memmove(dstBytes_ + static_cast<size_t>(dstIndex) * elementBytes_,
               srcBytes_ + static_cast<size_t>(srcIndex) * elementBytes_, static_cast<size_t>(count) * elementBytes_);
}

Tensor takeElements(const Tensor &src, const std::vector<int64_t> &outSizes, const std::vector<int64_t> &map,
                    const Tensor *fill) {
  Tensor out(src.dtype(), outSizes);
  TESSEL_CHECK(static_cast<int64_t>(map.size()) == out.numel(), "index map has {} entries for {} elements",
               map.size(), out.numel());
  ElementCopier copy(src, out);
  const bool useFill = fill && fill->numel() > 0;
  std::optional<ElementCopier> copyFill;
  if (useFill) copyFill.emplace(*fill, out);
  for (size_t i = 0; i < map.size(); ++i) {
    const auto index = static_cast<int64_t>(i);
    if (map[i] >= 0) {
      copy(index, map[i]);
    } else if (useFill) {
      (*copyFill)(index, 0);
    }
  }
  return out;
}

Status checkOutputSize(DType dtype, const std::vector<int64_t> &sizes, const char *what) {
  // A huge dim next to a 0 makes an empty tensor, but per-axis work (index maps, resize taps)
  // would still scale with it.
  for (int64_t s : sizes) {
    if (s > static_cast<int64_t>(kMaxKernelOutputBytes)) {
      return makeError(ErrorCode::ShapeMismatch, "{}: dimension {} in {} is too large", what, s, formatSizes(sizes));
    }
  }
  Expected<size_t> bytes = checkedNumBytes(dtype, sizes, kMaxKernelOutputBytes);
  if (!bytes.ok()) return makeError(bytes.diag().code, "{}: {}", what, bytes.diag().message);
  return Status::success();
}

Expected<std::vector<int64_t>> readIntInput(const KernelContext &ctx, size_t input, const char *what) {
  const Tensor &t = ctx.tensor(input);
  if (!isInteger(t.dtype())) {
    return makeError(ErrorCode::TypeMismatch, "{} (input {}) must be an integer tensor; got {}", what, input,
                     dtypeName(t.dtype()));
  }
  return t.toInt64Vector();
}

Expected<int64_t> normalizeExistingAxis(int64_t axis, int64_t rank, const char *what) {
  if (rank == 0) return makeError(ErrorCode::ShapeMismatch, "{} {} names an axis of a scalar", what, axis);
  return normalizeAxis(axis, rank, what);
}

Expected<int64_t> readAxisAttr(const KernelContext &ctx, size_t rank, int64_t fallback) {
  return normalizeExistingAxis(ctx.node().attrInt("axis", fallback), static_cast<int64_t>(rank));
}

Expected<int64_t> normalizeIndex(int64_t index, int64_t bound, const char *what) {
  if (index < -bound || index >= bound) {
    return makeError(ErrorCode::InvalidArgument, "{} {} is out of range [{}, {})", what, index, -bound, bound);
  }
  return index < 0 ? index + bound : index;
}

}  // namespace tessel::ref
