// Reference kernels of the tensor family that make new tensors from attributes or a few scalars:
// Constant, ConstantOfShape, Range and EyeLike. Sizes read from input data are validated before
// anything is allocated.
#include <algorithm>
#include <cmath>

#include "ops/reference/tensor_copy.h"

namespace tessel::ref {

namespace {

/// A 1-D tensor of `values`, or a scalar when `scalar` is set.
template <class T>
Tensor vectorTensor(const std::vector<T> &values, bool scalar) {
  if (scalar) return Tensor::scalar<T>(values.at(0));
  return Tensor::fromVector<T>({static_cast<int64_t>(values.size())}, values);
}

/// True for the dtypes Range and EyeLike compute with.
bool isNumericDType(DType type) { return isInteger(type) || isFloatingPoint(type) || type == DType::Bool; }

}  // namespace

Status refConstant(KernelContext &ctx) {
  const Node &node = ctx.node();
  std::vector<Tensor> candidates;
  for (const char *name : {"value", "sparse_value"}) {
    if (const Tensor *t = node.attrTensor(name)) candidates.push_back(*t);
  }
  if (node.hasAttr("value_float")) candidates.push_back(Tensor::scalar<float>(node.attrFloat("value_float", 0)));
  if (node.hasAttr("value_int")) candidates.push_back(Tensor::scalar<int64_t>(node.attrInt("value_int", 0)));
  if (node.hasAttr("value_string")) {
    candidates.push_back(Tensor::scalar<std::string>(node.attrString("value_string", "")));
  }
  if (node.hasAttr("value_floats")) candidates.push_back(vectorTensor(node.attrFloats("value_floats"), false));
  if (node.hasAttr("value_ints")) candidates.push_back(vectorTensor(node.attrInts("value_ints"), false));
  if (node.hasAttr("value_strings")) candidates.push_back(vectorTensor(node.attrStrings("value_strings"), false));
  if (candidates.size() != 1) {
    return makeError(ErrorCode::InvalidArgument, "Constant needs exactly one value attribute; got {}",
                     candidates.size());
  }
  ctx.setOutput(0, std::move(candidates[0]));
  return Status::success();
}

Status refConstantOfShape(KernelContext &ctx) {
  TESSEL_ASSIGN_OR_RETURN(std::vector<int64_t> shape, readIntInput(ctx, 0, "shape"));
  Tensor value = Tensor::fromVector<float>({1}, {0.0f});
  if (const Tensor *attr = ctx.node().attrTensor("value")) {
    if (attr->numel() != 1) {
      return makeError(ErrorCode::InvalidArgument, "value must hold one element; got {}", formatSizes(attr->sizes()));
    }
    value = *attr;
  }
  TESSEL_RETURN_IF_ERROR(checkOutputSize(value.dtype(), shape, "ConstantOfShape output"));
  ctx.setOutput(0, takeElements(value, shape, std::vector<int64_t>(static_cast<size_t>(numElements(shape)), 0)));
  return Status::success();
}

Status refRange(KernelContext &ctx) {
  TESSEL_RETURN_IF_ERROR(expectSameDType(ctx, 0, 1));
  TESSEL_RETURN_IF_ERROR(expectSameDType(ctx, 0, 2));
  const DType type = ctx.tensor(0).dtype();
  if (!isInteger(type) && !isFloatingPoint(type)) {
    return makeError(ErrorCode::TypeMismatch, "Range does not take {}", dtypeName(type));
  }
  for (size_t i = 0; i < 3; ++i) {
    if (ctx.tensor(i).numel() != 1) {
      return makeError(ErrorCode::ShapeMismatch, "input {} must be a scalar; got {}", i,
                       formatSizes(ctx.tensor(i).sizes()));
    }
  }
  Status status;
  visitDType(type, [&]<class T>(TypeTag<T>) {
    if constexpr (kIsNumeric<T> && !std::is_same_v<T, bool>) {
      const T start = ctx.tensor(0).data<T>()[0];
      const T limit = ctx.tensor(1).data<T>()[0];
      const T delta = ctx.tensor(2).data<T>()[0];
      const double span = toDouble(limit) - toDouble(start);
      const double step = toDouble(delta);
      if (step == 0 || !std::isfinite(span / step)) {
        status = makeError(ErrorCode::InvalidArgument, "Range from {} to {} by {} has no finite length",
                           toDouble(start), toDouble(limit), step);
        return;
      }
      const double count = std::max(std::ceil(span / step), 0.0);
      if (count > static_cast<double>(kMaxKernelOutputBytes)) {
        status = makeError(ErrorCode::ShapeMismatch, "Range would produce {} elements", count);
        return;
      }
      const auto n = static_cast<int64_t>(count);
      status = checkOutputSize(type, {n}, "Range output");
      if (!status.ok()) return;
      Tensor out(type, {n});
      T *o = out.data<T>();
      for (int64_t i = 0; i < n; ++i) {
        if constexpr (std::is_integral_v<T>) {
          o[i] = wrappingAdd(start, wrappingMul(static_cast<T>(i), delta));
        } else {
          o[i] = fromDouble<T>(toDouble(start) + static_cast<double>(i) * step);
        }
      }
      ctx.setOutput(0, std::move(out));
    }
  });
  return status;
}

Status refEyeLike(KernelContext &ctx) {
  const Tensor &x = ctx.tensor(0);
  if (x.rank() != 2) {
    return makeError(ErrorCode::ShapeMismatch, "EyeLike takes a 2-D input; got {}", formatSizes(x.sizes()));
  }
  const int64_t rawType = ctx.node().attrInt("dtype", static_cast<int64_t>(x.dtype()));
  if (!isValidDType(rawType) || !isNumericDType(static_cast<DType>(rawType))) {
    return makeError(ErrorCode::TypeMismatch, "EyeLike cannot produce dtype {}", rawType);
  }
  const auto type = static_cast<DType>(rawType);
  const int64_t k = ctx.node().attrInt("k", 0);
  Tensor out(type, x.sizes());
  visitDType(type, [&]<class T>(TypeTag<T>) {
    if constexpr (kIsNumeric<T>) {
      T *o = out.data<T>();
      const int64_t rows = x.size(0), cols = x.size(1);
      if (k >= cols || k <= -rows) return;  // The diagonal misses the matrix (and i + k could overflow).
      for (int64_t i = std::max<int64_t>(0, -k); i < rows && i + k < cols; ++i) {
        o[i * cols + i + k] = fromDouble<T>(1.0);
      }
    }
  });
  ctx.setOutput(0, std::move(out));
  return Status::success();
}

}  // namespace tessel::ref
