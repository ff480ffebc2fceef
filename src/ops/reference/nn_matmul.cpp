// Reference kernels of the matrix products: Gemm, MatMul (numpy semantics: batch broadcasting and
// 1-D operands), and the integer and quantized forms MatMulInteger and QLinearMatMul. All of them
// widen to double and share one batched product; Einsum lives in nn_einsum.cpp.
#include <algorithm>
#include <cmath>

#include "ops/reference/nn_common.h"

namespace tessel::ref {

namespace {

/// The shapes of a numpy matmul of A and B: batch dims broadcast, [m, k] x [k, n].
struct MatMulShapes {
  int64_t m = 0, k = 0, n = 0;
  std::vector<int64_t> batch;
  std::vector<int64_t> aBatchMap, bBatchMap;  // For each batch index, the batch index into A and B.
  std::vector<int64_t> outSizes;
};

Expected<MatMulShapes> matmulShapes(const std::vector<int64_t> &aSizes, const std::vector<int64_t> &bSizes) {
  if (aSizes.empty() || bSizes.empty()) {
    return makeError(ErrorCode::ShapeMismatch, "MatMul operands must have rank >= 1; got {} and {}",
                     formatSizes(aSizes), formatSizes(bSizes));
  }
  // A 1-D A is a row [1, K] and a 1-D B a column [K, 1]; the added dim is dropped afterwards.
  std::vector<int64_t> a = aSizes.size() == 1 ? std::vector<int64_t>{1, aSizes[0]} : aSizes;
  std::vector<int64_t> b = bSizes.size() == 1 ? std::vector<int64_t>{bSizes[0], 1} : bSizes;
  MatMulShapes s;
  s.m = a[a.size() - 2];
  s.k = a.back();
  s.n = b.back();
  if (b[b.size() - 2] != s.k) {
    return makeError(ErrorCode::ShapeMismatch, "MatMul of {} and {}: inner dimensions {} and {} differ",
                     formatSizes(aSizes), formatSizes(bSizes), s.k, b[b.size() - 2]);
  }
  std::vector<int64_t> aBatch(a.begin(), a.end() - 2), bBatch(b.begin(), b.end() - 2);
  TESSEL_ASSIGN_OR_RETURN(s.batch, broadcastShapes({aBatch, bBatch}));
  s.aBatchMap = broadcastIndexMap(aBatch, s.batch);
  s.bBatchMap = broadcastIndexMap(bBatch, s.batch);
  s.outSizes = s.batch;
  if (aSizes.size() > 1) s.outSizes.push_back(s.m);
  if (bSizes.size() > 1) s.outSizes.push_back(s.n);
  TESSEL_RETURN_IF_ERROR(checkWorkSize(s.outSizes, "the MatMul output"));
  return s;
}

/// Y[batch, i, j] = sum over p of A[aBatch, i, p] * B[bBatch, p, j], accumulated in double.
std::vector<double> batchedProduct(const MatMulShapes &s, const std::vector<double> &a, const std::vector<double> &b) {
  const int64_t batches = numElements(s.batch);
  std::vector<double> y(static_cast<size_t>(batches * s.m * s.n));
  for (int64_t t = 0; t < batches; ++t) {
    const double *pa = a.data() + s.aBatchMap[static_cast<size_t>(t)] * s.m * s.k;
    const double *pb = b.data() + s.bBatchMap[static_cast<size_t>(t)] * s.k * s.n;
    double *py = y.data() + t * s.m * s.n;
    for (int64_t i = 0; i < s.m; ++i) {
      for (int64_t j = 0; j < s.n; ++j) {
        double acc = 0.0;
        for (int64_t p = 0; p < s.k; ++p) acc += pa[i * s.k + p] * pb[p * s.n + j];
        py[i * s.n + j] = acc;
      }
    }
  }
  return y;
}

/// Replaces each of `values` (of a tensor of `sizes`) by `combine(value, other)`, where `other` is
/// input `index` broadcast to `sizes`; does nothing when the input is absent. For the A side
/// (`perRow`), a 1-D tensor of M values holds one value per row, as MatMulInteger specifies.
template <class Combine>
Status combineBroadcast(const KernelContext &ctx, size_t index, const std::vector<int64_t> &sizes, bool perRow,
                        std::vector<double> &values, const char *what, Combine combine) {
  if (!ctx.hasInput(index)) return Status::success();
  const Tensor &t = ctx.tensor(index);
  std::vector<int64_t> tSizes = t.sizes();
  if (perRow && tSizes.size() == 1 && sizes.size() >= 2 && tSizes[0] == sizes[sizes.size() - 2] && tSizes[0] != 1) {
    tSizes.push_back(1);
  }
  Expected<std::vector<int64_t>> joint = broadcastShapes({tSizes, sizes});
  if (!joint.ok() || *joint != sizes) {
    return makeError(ErrorCode::ShapeMismatch, "{} has shape {}; expected a scalar or a shape that broadcasts to {}",
                     what, formatSizes(t.sizes()), formatSizes(sizes));
  }
  std::vector<double> other = toDoubles(t);
  std::vector<int64_t> map = broadcastIndexMap(tSizes, sizes);
  for (size_t i = 0; i < values.size(); ++i) {
    values[i] = combine(values[i], other[static_cast<size_t>(map[i])]);
  }
  return Status::success();
}

double minus(double x, double y) { return x - y; }
double times(double x, double y) { return x * y; }

/// Rounds half to even and saturates to the range of `dtype` (u8 or i8).
double saturateRound(double value, DType dtype) {
  double lo = dtype == DType::Int8 ? -128.0 : 0.0;
  double hi = dtype == DType::Int8 ? 127.0 : 255.0;
  return std::clamp(std::nearbyint(value), lo, hi);
}

}  // namespace

Status refMatMul(KernelContext &ctx) {
  TESSEL_RETURN_IF_ERROR(requireInputs(ctx, 2));
  TESSEL_RETURN_IF_ERROR(expectSameDType(ctx, 0, 1));
  const Tensor &a = ctx.tensor(0);
  const Tensor &b = ctx.tensor(1);
  if (!isFloatingPoint(a.dtype()) && !isInteger(a.dtype())) {
    return makeError(ErrorCode::TypeMismatch, "MatMul takes numeric tensors; got {}", dtypeName(a.dtype()));
  }
  TESSEL_ASSIGN_OR_RETURN(MatMulShapes s, matmulShapes(a.sizes(), b.sizes()));
  ctx.setOutput(0, fromDoubles(a.dtype(), s.outSizes, batchedProduct(s, toDoubles(a), toDoubles(b))));
  return Status::success();
}

Status refGemm(KernelContext &ctx) {
  TESSEL_RETURN_IF_ERROR(requireInputs(ctx, 2));
  TESSEL_RETURN_IF_ERROR(expectSameDType(ctx, 0, 1));
  TESSEL_RETURN_IF_ERROR(expectRank(ctx, 0, 2));
  TESSEL_RETURN_IF_ERROR(expectRank(ctx, 1, 2));
  const Tensor &at = ctx.tensor(0);
  const Tensor &bt = ctx.tensor(1);
  const bool transA = ctx.node().attrInt("transA", 0) != 0;
  const bool transB = ctx.node().attrInt("transB", 0) != 0;
  const double alpha = ctx.node().attrFloat("alpha", 1.0f);
  const double beta = ctx.node().attrFloat("beta", 1.0f);
  const int64_t m = transA ? at.size(1) : at.size(0);
  const int64_t k = transA ? at.size(0) : at.size(1);
  const int64_t kb = transB ? bt.size(1) : bt.size(0);
  const int64_t n = transB ? bt.size(0) : bt.size(1);
  if (k != kb) {
    return makeError(ErrorCode::ShapeMismatch, "A {} (transA={}) and B {} (transB={}) have inner dimensions {} and {}",
                     formatSizes(at.sizes()), transA, formatSizes(bt.sizes()), transB, k, kb);
  }
  TESSEL_RETURN_IF_ERROR(checkWorkSize({m, n}, "the Gemm output"));
  std::vector<double> a = toDoubles(at), b = toDoubles(bt);
  std::vector<double> y(static_cast<size_t>(m * n), 0.0);
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      double acc = 0.0;
      for (int64_t p = 0; p < k; ++p) {
        size_t ia = static_cast<size_t>(transA ? p * m + i : i * k + p);
        size_t ib = static_cast<size_t>(transB ? j * k + p : p * n + j);
        acc += a[ia] * b[ib];
      }
      y[static_cast<size_t>(i * n + j)] = alpha * acc;
    }
  }
  if (ctx.hasInput(2)) {
    const Tensor &ct = ctx.tensor(2);
    Expected<std::vector<int64_t>> joint = broadcastShapes({ct.sizes(), {m, n}});
    if (!joint.ok() || *joint != std::vector<int64_t>{m, n}) {
      return makeError(ErrorCode::ShapeMismatch, "C has shape {}; expected a shape that broadcasts to [{}, {}]",
                       formatSizes(ct.sizes()), m, n);
    }
    std::vector<double> c = toDoubles(ct);
    std::vector<int64_t> map = broadcastIndexMap(ct.sizes(), {m, n});
    for (size_t i = 0; i < y.size(); ++i) y[i] += beta * c[static_cast<size_t>(map[i])];
  }
  ctx.setOutput(0, fromDoubles(at.dtype(), {m, n}, y));
  return Status::success();
}

Status refMatMulInteger(KernelContext &ctx) {
  TESSEL_RETURN_IF_ERROR(requireInputs(ctx, 2));
  TESSEL_RETURN_IF_ERROR(expectDType(ctx, 0, {DType::UInt8, DType::Int8}));
  TESSEL_RETURN_IF_ERROR(expectDType(ctx, 1, {DType::UInt8, DType::Int8}));
  const Tensor &at = ctx.tensor(0);
  const Tensor &bt = ctx.tensor(1);
  TESSEL_ASSIGN_OR_RETURN(MatMulShapes s, matmulShapes(at.sizes(), bt.sizes()));
  std::vector<double> a = toDoubles(at), b = toDoubles(bt);
  TESSEL_RETURN_IF_ERROR(combineBroadcast(ctx, 2, at.sizes(), /*perRow=*/true, a, "a_zero_point", minus));
  TESSEL_RETURN_IF_ERROR(combineBroadcast(ctx, 3, bt.sizes(), /*perRow=*/false, b, "b_zero_point", minus));
  ctx.setOutput(0, fromDoubles(DType::Int32, s.outSizes, batchedProduct(s, a, b)));
  return Status::success();
}

Status refQLinearMatMul(KernelContext &ctx) {
  TESSEL_RETURN_IF_ERROR(requireInputs(ctx, 8));
  TESSEL_RETURN_IF_ERROR(expectDType(ctx, 0, {DType::UInt8, DType::Int8}));
  TESSEL_RETURN_IF_ERROR(expectDType(ctx, 3, {DType::UInt8, DType::Int8}));
  const Tensor &at = ctx.tensor(0);
  const Tensor &bt = ctx.tensor(3);
  TESSEL_ASSIGN_OR_RETURN(MatMulShapes s, matmulShapes(at.sizes(), bt.sizes()));
  // Dequantize both sides, multiply, then requantize with y's scale and zero point.
  std::vector<double> a = toDoubles(at), b = toDoubles(bt);
  TESSEL_RETURN_IF_ERROR(combineBroadcast(ctx, 2, at.sizes(), /*perRow=*/true, a, "a_zero_point", minus));
  TESSEL_RETURN_IF_ERROR(combineBroadcast(ctx, 1, at.sizes(), /*perRow=*/true, a, "a_scale", times));
  TESSEL_RETURN_IF_ERROR(combineBroadcast(ctx, 5, bt.sizes(), /*perRow=*/false, b, "b_zero_point", minus));
  TESSEL_RETURN_IF_ERROR(combineBroadcast(ctx, 4, bt.sizes(), /*perRow=*/false, b, "b_scale", times));
  const Tensor &yScale = ctx.tensor(6);
  for (size_t input : {size_t{6}, size_t{7}}) {
    if (ctx.tensor(input).numel() != 1) {
      return makeError(ErrorCode::ShapeMismatch, "{} has shape {}; expected a scalar",
                       input == 6 ? "y_scale" : "y_zero_point", formatSizes(ctx.tensor(input).sizes()));
    }
  }
  const DType outType = ctx.tensor(7).dtype();
  TESSEL_RETURN_IF_ERROR(expectDType(ctx, 7, {DType::UInt8, DType::Int8}));
  const double yZero = ctx.tensor(7).scalarAsDouble();
  std::vector<double> y = batchedProduct(s, a, b);
  if (ctx.hasInput(8)) {
    // tessel QLinearMatMulToFloat's bias (ONNX's QLinearMatMul has eight inputs): int32 per column
    // at the product's scale, a_scale * b_scale[j].
    const Tensor &bias = ctx.tensor(8), &bScale = ctx.tensor(4);
    const int64_t n = s.outSizes.back();
    if (bias.dtype() != DType::Int32 || bias.numel() != n || (bScale.numel() != 1 && bScale.numel() != n)) {
      return makeError(ErrorCode::ShapeMismatch, "bias is {} {}; expected int32 [{}]", dtypeName(bias.dtype()),
                       formatSizes(bias.sizes()), n);
    }
    const std::vector<double> biasValues = toDoubles(bias), bScales = toDoubles(bScale);
    const double aScale = ctx.tensor(1).scalarAsDouble();
    for (size_t i = 0; i < y.size(); ++i) {
      const size_t j = i % size_t(n);
      y[i] += biasValues[j] * aScale * bScales[bScales.size() == 1 ? 0 : j];
    }
  }
  for (double &v : y) v = saturateRound(v / yScale.scalarAsDouble() + yZero, outType);
  ctx.setOutput(0, fromDoubles(outType, s.outSizes, y));
  return Status::success();
}

}  // namespace tessel::ref
