// Shared pieces of the reference kernels.
#include "ops/reference/helpers.h"

#include <algorithm>

namespace tessel::ref {

Expected<int64_t> normalizeAxis(int64_t axis, int64_t rank, const char *what) {
  if (axis < -rank || axis >= std::max<int64_t>(rank, 1)) {
    return makeError(ErrorCode::InvalidArgument, "{} {} is out of range for a tensor of rank {}", what, axis, rank);
  }
  return axis < 0 ? axis + rank : axis;
}

std::vector<int64_t> stridesOf(const std::vector<int64_t> &sizes) {
  std::vector<int64_t> strides(sizes.size(), 1);
  for (int64_t i = static_cast<int64_t>(sizes.size()) - 2; i >= 0; --i) {
    strides[static_cast<size_t>(i)] = strides[static_cast<size_t>(i) + 1] * sizes[static_cast<size_t>(i) + 1];
  }
  return strides;
}

Expected<std::vector<int64_t>> broadcastShapes(const std::vector<std::vector<int64_t>> &shapes) {
  size_t rank = 0;
  for (const auto &s : shapes) rank = std::max(rank, s.size());
  std::vector<int64_t> out(rank, 1);
  for (const auto &s : shapes) {
    size_t offset = rank - s.size();
    for (size_t i = 0; i < s.size(); ++i) {
      int64_t &o = out[offset + i];
      if (s[i] == o || s[i] == 1) continue;
      if (o == 1) {
        o = s[i];
        continue;
      }
      std::string all;
      for (const auto &t : shapes) all += (all.empty() ? "" : " and ") + formatSizes(t);
      return makeError(ErrorCode::ShapeMismatch, "shapes {} do not broadcast (dimension {} is {} vs {})", all,
                       offset + i, o, s[i]);
    }
  }
  return out;
}

std::vector<int64_t> broadcastIndexMap(const std::vector<int64_t> &inSizes, const std::vector<int64_t> &outSizes) {
  const int64_t total = numElements(outSizes);
  std::vector<int64_t> map(static_cast<size_t>(total));
  const size_t rank = outSizes.size();
  const size_t offset = rank - inSizes.size();
  std::vector<int64_t> inStrides = stridesOf(inSizes);
  // Effective stride per output axis: 0 where the input is broadcast along it.
  std::vector<int64_t> stride(rank, 0);
  for (size_t i = 0; i < inSizes.size(); ++i) stride[offset + i] = inSizes[i] == 1 ? 0 : inStrides[i];
  std::vector<int64_t> index(rank, 0);
  int64_t flat = 0;
  for (int64_t n = 0; n < total; ++n) {
    map[static_cast<size_t>(n)] = flat;
    for (size_t axis = rank; axis-- > 0;) {
      if (++index[axis] < outSizes[axis]) {
        flat += stride[axis];
        break;
      }
      flat -= stride[axis] * (outSizes[axis] - 1);
      index[axis] = 0;
    }
  }
  return map;
}

std::vector<double> toDoubles(const Tensor &tensor) {
  std::vector<double> values(static_cast<size_t>(tensor.numel()));
  visitDType(tensor.dtype(), [&]<class T>(TypeTag<T>) {
    if constexpr (kIsNumeric<T>) {
      const T *data = tensor.data<T>();
      for (size_t i = 0; i < values.size(); ++i) values[i] = toDouble(data[i]);
    }
  });
  return values;
}

Tensor fromDoubles(DType dtype, const std::vector<int64_t> &sizes, const std::vector<double> &values) {
  Tensor out(dtype, sizes);
  visitDType(dtype, [&]<class T>(TypeTag<T>) {
    if constexpr (kIsNumeric<T>) {
      T *data = out.data<T>();
      for (size_t i = 0; i < values.size(); ++i) data[i] = fromDouble<T>(values[i]);
    }
  });
  return out;
}

Status expectSameDType(const KernelContext &ctx, size_t a, size_t b) {
  DType ta = ctx.tensor(a).dtype();
  DType tb = ctx.tensor(b).dtype();
  if (ta == tb) return Status::success();
  return makeError(ErrorCode::TypeMismatch, "inputs {} and {} must have the same type; got {} and {}", a, b,
                   dtypeName(ta), dtypeName(tb));
}

Status expectDType(const KernelContext &ctx, size_t input, std::initializer_list<DType> allowed) {
  DType t = ctx.tensor(input).dtype();
  for (DType d : allowed) {
    if (d == t) return Status::success();
  }
  std::string names;
  for (DType d : allowed) names += (names.empty() ? "" : ", ") + std::string(dtypeName(d));
  return makeError(ErrorCode::TypeMismatch, "input {} has type {}; expected one of {}", input, dtypeName(t), names);
}

}  // namespace tessel::ref
