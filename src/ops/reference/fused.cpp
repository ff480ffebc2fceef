// Reference kernels and shape inference of the fused ops the graph passes produce (domain
// "tessel", docs/cpu.md): FusedConv and FusedMatMul run the ONNX Conv and MatMul reference kernels
// on the same node and apply their epilogue (residual, activation) in double; the tessel pools run
// the ONNX pools (with channels_last, the wrapped kernels see X moved to [N, C, H, W] and Y is
// moved back); LayerNormalization is the ONNX kernel itself; KvCacheUpdate copies rows; RMSNormalization,
// RotaryEmbedding, Gelu
// and Attention are computed here in double; FusedElementwise runs its body subgraph. ONNX's schemas do not know
// this domain, so shape inference is here too.
#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>

#include "ops/activation.h"
#include "ops/reference/nn_common.h"
#include "ops/reference/tensor_copy.h"

namespace tessel {

namespace ref {

// The ONNX kernels the fused ops extend (nn_conv.cpp, nn_matmul.cpp, nn_norm.cpp, nn_pool.cpp).
Status refConv(KernelContext &ctx);
Status refMaxPool(KernelContext &ctx);
Status refAveragePool(KernelContext &ctx);
Status refGlobalAveragePool(KernelContext &ctx);
Status refMatMul(KernelContext &ctx);
Status refLayerNormalization(KernelContext &ctx);
Status refQLinearConv(KernelContext &ctx);
Status refQLinearMatMul(KernelContext &ctx);

namespace {

/// The ONNX opset the wrapped ONNX kernels are run at: all three have one meaning from there on.
constexpr int64_t kWrappedOnnxOpset = 17;

/// A fused op's `activation` and `activation_params` (ops/activation.h), the op named in errors.
Expected<Activation> readActivation(const Node &node) {
  const std::vector<float> params = node.attrFloats("activation_params");
  auto act = parseActivation(node.attrString("activation", ""), params);
  if (!act.ok()) return makeError(ErrorCode::InvalidArgument, "{}: {}", node.opType(), act.diag().message);
  return act;
}

/// The first `count` input slots of `ctx`, for running a wrapped kernel on the same node.
std::vector<const RuntimeValue *> leadingInputs(const KernelContext &ctx, size_t count) {
  std::vector<const RuntimeValue *> inputs;
  for (size_t i = 0; i < std::min(count, ctx.numInputs()); ++i) {
    inputs.push_back(ctx.hasInput(i) ? &ctx.input(i) : nullptr);
  }
  return inputs;
}

Expected<Tensor> runWrapped(const KernelContext &ctx, Status (*kernel)(KernelContext &),
                            std::vector<const RuntimeValue *> inputs) {
  auto noSubgraphs = [](const Graph &, std::vector<RuntimeValue>) -> Expected<std::vector<RuntimeValue>> {
    return makeError(ErrorCode::Internal, "the wrapped kernel runs no subgraphs");
  };
  KernelContext inner(ctx.node(), kWrappedOnnxOpset, std::move(inputs), noSubgraphs);
  TESSEL_RETURN_IF_ERROR(kernel(inner));
  return std::move(inner.outputs()[0].tensor());
}

// ---- channels_last: X, Z and Y are [N, H, W, C]; the wrapped ONNX kernels work on [N, C, H, W].

bool isChannelsLast(const Node &node) { return node.attrInt("channels_last", 0) != 0; }

Tensor permuted(const Tensor &x, const std::vector<int64_t> &perm) {
  const std::vector<int64_t> inStrides = stridesOf(x.sizes());
  std::vector<int64_t> outSizes(perm.size()), strides(perm.size());
  for (size_t i = 0; i < perm.size(); ++i) {
    outSizes[i] = x.size(static_cast<size_t>(perm[i]));
    strides[i] = inStrides[static_cast<size_t>(perm[i])];
  }
  std::vector<int64_t> map;
  map.reserve(static_cast<size_t>(numElements(outSizes)));
  forEachIndex(outSizes, [&](const std::vector<int64_t> &index) {
    int64_t offset = 0;
    for (size_t i = 0; i < index.size(); ++i) offset += index[i] * strides[i];
    map.push_back(offset);
  });
  return takeElements(x, outSizes, map);
}

Tensor toChannelsFirst(const Tensor &x) { return permuted(x, {0, 3, 1, 2}); }
Tensor toChannelsLast(const Tensor &y) { return permuted(y, {0, 2, 3, 1}); }

/// Runs `kernel` on the node's first `numInputs` inputs; with channels_last, on X moved to
/// channels-first, giving Y moved back.
Expected<Tensor> runLayoutWrapped(const KernelContext &ctx, Status (*kernel)(KernelContext &), size_t numInputs) {
  std::vector<const RuntimeValue *> inputs = leadingInputs(ctx, numInputs);
  if (!isChannelsLast(ctx.node())) return runWrapped(ctx, kernel, std::move(inputs));
  const Tensor &x = ctx.tensor(0);
  if (x.rank() != 4) {
    return makeError(ErrorCode::ShapeMismatch, "{}: X has shape {}; channels_last needs [N, H, W, C]",
                     ctx.node().opType(), formatSizes(x.sizes()));
  }
  const RuntimeValue channelsFirst(toChannelsFirst(x));
  inputs[0] = &channelsFirst;
  TESSEL_ASSIGN_OR_RETURN(Tensor y, runWrapped(ctx, kernel, std::move(inputs)));
  return toChannelsLast(y);
}

Status runPool(KernelContext &ctx, Status (*kernel)(KernelContext &)) {
  TESSEL_RETURN_IF_ERROR(requireInputs(ctx, 1));
  TESSEL_ASSIGN_OR_RETURN(Tensor y, runLayoutWrapped(ctx, kernel, 1));
  ctx.setOutput(0, std::move(y));
  return Status::success();
}

/// Adds the residual input `index` (Y's shape) when present, applies the activation, and sets Y.
Status finishEpilogue(KernelContext &ctx, const Tensor &y, size_t residualIndex, std::vector<double> values) {
  if (ctx.hasInput(residualIndex)) {
    const Tensor &z = ctx.tensor(residualIndex);
    if (z.sizes() != y.sizes()) {
      return makeError(ErrorCode::ShapeMismatch, "{}: Z has shape {}; expected Y's shape {}", ctx.node().opType(),
                       formatSizes(z.sizes()), formatSizes(y.sizes()));
    }
    std::vector<double> residual = toDoubles(z);
    for (size_t i = 0; i < values.size(); ++i) values[i] += residual[i];
  }
  TESSEL_ASSIGN_OR_RETURN(Activation act, readActivation(ctx.node()));
  for (double &v : values) v = act.apply(v);
  ctx.setOutput(0, fromDoubles(y.dtype(), y.sizes(), values));
  return Status::success();
}

/// Adds input `index`, a bias per column of Y (its last dim), to `values` when present.
Status addColumnBias(KernelContext &ctx, size_t index, const Tensor &y, std::vector<double> &values) {
  if (!ctx.hasInput(index)) return Status::success();
  const Tensor &bias = ctx.tensor(index);
  const int64_t n = y.rank() == 0 ? 1 : y.sizes().back();
  if (bias.rank() != 1 || bias.size(0) != n) {
    return makeError(ErrorCode::ShapeMismatch, "{}: Bias has shape {}; expected [{}] (the last dim of Y {})",
                     ctx.node().opType(), formatSizes(bias.sizes()), n, formatSizes(y.sizes()));
  }
  std::vector<double> b = toDoubles(bias);
  for (size_t i = 0; i < values.size(); ++i) values[i] += b[i % static_cast<size_t>(n)];
  return Status::success();
}

}  // namespace

Status refFusedConv(KernelContext &ctx) {
  TESSEL_RETURN_IF_ERROR(requireInputs(ctx, 2));
  TESSEL_ASSIGN_OR_RETURN(Tensor y, runLayoutWrapped(ctx, refConv, 3));
  return finishEpilogue(ctx, y, 3, toDoubles(y));
}

// ONNX's QLinearConv on either layout (assign-layout's channels-last form of a quantized network).
Status refTesselQLinearConv(KernelContext &ctx) {
  TESSEL_RETURN_IF_ERROR(requireInputs(ctx, 8));
  TESSEL_ASSIGN_OR_RETURN(Tensor y, runLayoutWrapped(ctx, refQLinearConv, 9));
  ctx.setOutput(0, std::move(y));
  return Status::success();
}

// QLinearMatMulToFloat: DequantizeLinear(QLinearMatMul(...), y_scale, y_zero_point), in float32
// as DequantizeLinear computes it (the integer minus the zero point is exact, then one product),
// then the epilogue: the float bias (input 9), the residual (input 10), the activation.
Status refQLinearMatMulToFloat(KernelContext &ctx) {
  TESSEL_RETURN_IF_ERROR(requireInputs(ctx, 8));
  TESSEL_ASSIGN_OR_RETURN(Tensor q, runWrapped(ctx, refQLinearMatMul, leadingInputs(ctx, 9)));
  const float scale = static_cast<float>(ctx.tensor(6).scalarAsDouble());
  const float zero = static_cast<float>(ctx.tensor(7).scalarAsDouble());
  std::vector<double> values = toDoubles(q);
  for (double &v : values) v = double((float(v) - zero) * scale);
  const Tensor y = fromDoubles(DType::Float32, q.sizes(), values);
  TESSEL_RETURN_IF_ERROR(addColumnBias(ctx, 9, y, values));
  return finishEpilogue(ctx, y, 10, std::move(values));
}

// QLinearAdd: y = QuantizeLinear(DequantizeLinear(a) + DequantizeLinear(b)), one scale and zero
// point each, a and b of one shape; in float32 as the three ONNX ops compute it, so a QDQ graph
// fused into it gives the same bits.
Status refQLinearAdd(KernelContext &ctx) {
  TESSEL_RETURN_IF_ERROR(requireInputs(ctx, 8));
  const Tensor &a = ctx.tensor(0), &b = ctx.tensor(3);
  const DType outType = ctx.tensor(7).dtype();
  for (size_t i : {size_t{0}, size_t{3}, size_t{7}}) TESSEL_RETURN_IF_ERROR(expectDType(ctx, i, {DType::UInt8, DType::Int8}));
  if (a.sizes() != b.sizes()) {
    return makeError(ErrorCode::ShapeMismatch, "QLinearAdd: A {} and B {} differ in shape", formatSizes(a.sizes()),
                     formatSizes(b.sizes()));
  }
  for (size_t i : {size_t{1}, size_t{2}, size_t{4}, size_t{5}, size_t{6}, size_t{7}}) {
    if (ctx.tensor(i).numel() != 1) {
      return makeError(ErrorCode::ShapeMismatch, "QLinearAdd: input {} has shape {}; expected one value", i,
                       formatSizes(ctx.tensor(i).sizes()));
    }
  }
  const auto param = [&](size_t i) { return static_cast<float>(ctx.tensor(i).scalarAsDouble()); };
  const float sa = param(1), za = param(2), sb = param(4), zb = param(5), sy = param(6), zy = param(7);
  const double lo = outType == DType::Int8 ? -128.0 : 0.0, hi = outType == DType::Int8 ? 127.0 : 255.0;
  std::vector<double> y(static_cast<size_t>(a.numel()));
  for (size_t i = 0; i < y.size(); ++i) {
    const float sum = (static_cast<float>(a.scalarAsDouble(int64_t(i))) - za) * sa +
                      (static_cast<float>(b.scalarAsDouble(int64_t(i))) - zb) * sb;
    y[i] = std::clamp(std::nearbyint(static_cast<double>(sum / sy)) + zy, lo, hi);
  }
  ctx.setOutput(0, fromDoubles(outType, a.sizes(), y));
  return Status::success();
}

// The ONNX pools on either layout; tessel MaxPool has no Indices output.
Status refTesselMaxPool(KernelContext &ctx) { return runPool(ctx, refMaxPool); }
Status refTesselAveragePool(KernelContext &ctx) { return runPool(ctx, refAveragePool); }
Status refTesselGlobalAveragePool(KernelContext &ctx) { return runPool(ctx, refGlobalAveragePool); }

Status refFusedMatMul(KernelContext &ctx) {
  TESSEL_RETURN_IF_ERROR(requireInputs(ctx, 2));
  TESSEL_RETURN_IF_ERROR(expectFloatInput(ctx, 0));
  TESSEL_ASSIGN_OR_RETURN(Tensor y, runWrapped(ctx, refMatMul, leadingInputs(ctx, 2)));
  std::vector<double> values = toDoubles(y);
  TESSEL_RETURN_IF_ERROR(addColumnBias(ctx, 2, y, values));
  return finishEpilogue(ctx, y, 3, std::move(values));
}

Status refTesselGelu(KernelContext &ctx) {
  TESSEL_RETURN_IF_ERROR(requireInputs(ctx, 1));
  TESSEL_RETURN_IF_ERROR(expectFloatInput(ctx, 0));
  const std::string approximate = ctx.node().attrString("approximate", "none");
  if (approximate != "none" && approximate != "tanh") {
    return makeError(ErrorCode::InvalidArgument, "Gelu: approximate is '{}'; expected 'none' or 'tanh'", approximate);
  }
  const Tensor &x = ctx.tensor(0);
  std::vector<double> values = toDoubles(x);
  const Activation gelu{approximate == "tanh" ? ActivationKind::GeluTanh : ActivationKind::Gelu};
  for (double &v : values) v = gelu.apply(v);
  ctx.setOutput(0, fromDoubles(x.dtype(), x.sizes(), values));
  return Status::success();
}

Status refTesselLayerNormalization(KernelContext &ctx) {
  // Same attributes and inputs as ONNX's; the node has no Mean/InvStdDev outputs to fill.
  return refLayerNormalization(ctx);
}

Status refTesselRMSNormalization(KernelContext &ctx) {
  TESSEL_RETURN_IF_ERROR(requireInputs(ctx, 2));
  TESSEL_RETURN_IF_ERROR(expectFloatInput(ctx, 0));
  TESSEL_RETURN_IF_ERROR(expectFloatInput(ctx, 1));
  const Tensor &xt = ctx.tensor(0), &scaleTensor = ctx.tensor(1);
  const int64_t rank = static_cast<int64_t>(xt.rank());
  TESSEL_ASSIGN_OR_RETURN(int64_t axis, normalizeAxis(ctx.node().attrInt("axis", -1), rank));
  const double epsilon = ctx.node().attrFloat("epsilon", 1e-5f);
  TESSEL_ASSIGN_OR_RETURN(std::vector<int64_t> joint, broadcastShapes({scaleTensor.sizes(), xt.sizes()}));
  if (joint != xt.sizes()) {
    return makeError(ErrorCode::ShapeMismatch, "RMSNormalization: Scale has shape {}; expected one that broadcasts to "
                     "X's {}", formatSizes(scaleTensor.sizes()), formatSizes(xt.sizes()));
  }
  const std::vector<int64_t> scaleMap = broadcastIndexMap(scaleTensor.sizes(), xt.sizes());
  const std::vector<double> scale = toDoubles(scaleTensor);
  std::vector<double> x = toDoubles(xt);
  int64_t group = 1;  // Elements normalized together: the dims from `axis` on.
  for (int64_t d = axis; d < rank; ++d) group *= xt.size(d);
  for (size_t start = 0; group > 0 && start < x.size(); start += static_cast<size_t>(group)) {
    double sumSquares = 0.0;
    for (int64_t i = 0; i < group; ++i) sumSquares += x[start + size_t(i)] * x[start + size_t(i)];
    const double inverseRms = 1.0 / std::sqrt(sumSquares / static_cast<double>(group) + epsilon);
    for (int64_t i = 0; i < group; ++i) {
      const size_t at = start + size_t(i);
      x[at] = x[at] * inverseRms * scale[static_cast<size_t>(scaleMap[at])];
    }
  }
  ctx.setOutput(0, fromDoubles(xt.dtype(), xt.sizes(), x));
  return Status::success();
}

Status refTesselRotaryEmbedding(KernelContext &ctx) {
  TESSEL_RETURN_IF_ERROR(requireInputs(ctx, 3));
  for (size_t i = 0; i < 3; ++i) TESSEL_RETURN_IF_ERROR(expectFloatInput(ctx, i));
  const Tensor &xt = ctx.tensor(0), &cosTensor = ctx.tensor(1), &sinTensor = ctx.tensor(2);
  const int64_t rank = static_cast<int64_t>(xt.rank());
  const int64_t depth = rank > 0 ? xt.size(static_cast<size_t>(rank - 1)) : 0;
  if (rank == 0 || depth % 2 != 0) {
    return makeError(ErrorCode::ShapeMismatch, "RotaryEmbedding: X has shape {}; its last dim must be even",
                     formatSizes(xt.sizes()));
  }
  for (const Tensor *table : {&cosTensor, &sinTensor}) {
    TESSEL_ASSIGN_OR_RETURN(std::vector<int64_t> joint, broadcastShapes({table->sizes(), xt.sizes()}));
    if (joint != xt.sizes()) {
      return makeError(ErrorCode::ShapeMismatch, "RotaryEmbedding: Cos {} and Sin {} must broadcast to X's {}",
                       formatSizes(cosTensor.sizes()), formatSizes(sinTensor.sizes()), formatSizes(xt.sizes()));
    }
  }
  const std::vector<int64_t> cosMap = broadcastIndexMap(cosTensor.sizes(), xt.sizes());
  const std::vector<int64_t> sinMap = broadcastIndexMap(sinTensor.sizes(), xt.sizes());
  const std::vector<double> x = toDoubles(xt), cosines = toDoubles(cosTensor), sines = toDoubles(sinTensor);
  std::vector<double> y(x.size());
  const int64_t half = depth / 2;
  for (size_t at = 0; at < x.size(); ++at) {
    // rotate_half(X): [-x2, x1] for the halves x1, x2 of each row.
    const int64_t i = static_cast<int64_t>(at) % depth;
    const double rotated = i < half ? -x[at + size_t(half)] : x[at - size_t(half)];
    y[at] = x[at] * cosines[size_t(cosMap[at])] + rotated * sines[size_t(sinMap[at])];
  }
  ctx.setOutput(0, fromDoubles(xt.dtype(), xt.sizes(), y));
  return Status::success();
}

Status refKvCacheUpdate(KernelContext &ctx) {
  TESSEL_RETURN_IF_ERROR(requireInputs(ctx, 3));
  TESSEL_RETURN_IF_ERROR(expectRank(ctx, 0, 4));
  TESSEL_RETURN_IF_ERROR(expectRank(ctx, 1, 4));
  TESSEL_RETURN_IF_ERROR(expectSameDType(ctx, 0, 1));
  TESSEL_RETURN_IF_ERROR(expectDType(ctx, 2, {DType::Int64}));
  const Tensor &cache = ctx.tensor(0), &added = ctx.tensor(1), &position = ctx.tensor(2);
  if (position.numel() != 1)
    return makeError(ErrorCode::ShapeMismatch, "KvCacheUpdate: Position has shape {}; expected one element",
                     formatSizes(position.sizes()));
  const int64_t at = position.data<int64_t>()[0];
  const int64_t capacity = cache.size(2), count = added.size(2);
  if (added.size(0) != cache.size(0) || added.size(1) != cache.size(1) || added.size(3) != cache.size(3))
    return makeError(ErrorCode::ShapeMismatch, "KvCacheUpdate: New {} does not match Cache {} outside axis 2",
                     formatSizes(added.sizes()), formatSizes(cache.sizes()));
  if (at < 0 || at + count > capacity)
    return makeError(ErrorCode::RuntimeError, "KvCacheUpdate: positions {}..{} do not fit a cache of {}", at,
                     at + count - 1, capacity);
  Tensor y = cache.clone();
  const size_t row = static_cast<size_t>(cache.size(3)) * dtypeSize(cache.dtype());
  auto *dst = static_cast<std::byte *>(y.rawData());
  const auto *src = static_cast<const std::byte *>(added.rawData());
  for (int64_t head = 0; head < cache.size(0) * cache.size(1); ++head)
    std::copy_n(src + static_cast<size_t>(head * count) * row, static_cast<size_t>(count) * row,
                dst + static_cast<size_t>(head * capacity + at) * row);
  ctx.setOutput(0, std::move(y));
  return Status::success();
}

Status refAttention(KernelContext &ctx) {
  TESSEL_RETURN_IF_ERROR(requireInputs(ctx, 3));
  for (size_t i = 0; i < 3; ++i) {
    TESSEL_RETURN_IF_ERROR(expectFloatInput(ctx, i));
    TESSEL_RETURN_IF_ERROR(expectRank(ctx, i, 4));
  }
  const Tensor &q = ctx.tensor(0), &k = ctx.tensor(1), &v = ctx.tensor(2);
  const int64_t batch = q.size(0), heads = q.size(1), sq = q.size(2), d = q.size(3);
  const int64_t kvHeads = k.size(1), sk = k.size(2), dv = v.size(3);
  // Grouped-query attention: query head h reads K/V head h / (H / Hkv).
  if (k.size(0) != batch || kvHeads == 0 || heads % kvHeads != 0 || k.size(3) != d || v.size(0) != batch ||
      v.size(1) != kvHeads || v.size(2) != sk) {
    return makeError(ErrorCode::ShapeMismatch,
                     "Attention: Q {}, K {} and V {} do not form [B,H,Sq,D], [B,Hkv,Sk,D], [B,Hkv,Sk,Dv] with Hkv "
                     "dividing H",
                     formatSizes(q.sizes()), formatSizes(k.sizes()), formatSizes(v.sizes()));
  }
  const int64_t group = heads / kvHeads;
  const std::vector<int64_t> scoreSizes = {batch, heads, sq, sk};
  std::vector<int64_t> maskMap;
  std::vector<double> mask;
  if (ctx.hasInput(3)) {
    const Tensor &m = ctx.tensor(3);
    auto joint = broadcastShapes({m.sizes(), scoreSizes});
    if (!joint.ok() || *joint != scoreSizes) {
      return makeError(ErrorCode::ShapeMismatch, "Attention: Mask has shape {}; expected one that broadcasts to {}",
                       formatSizes(m.sizes()), formatSizes(scoreSizes));
    }
    maskMap = broadcastIndexMap(m.sizes(), scoreSizes);
    mask = toDoubles(m);
  }
  double scale = ctx.node().attrFloat("scale", 0.0f);
  if (scale == 0.0) scale = 1.0 / std::sqrt(static_cast<double>(d));
  const bool causal = ctx.node().attrInt("causal", 0) != 0;
  const std::vector<double> qd = toDoubles(q), kd = toDoubles(k), vd = toDoubles(v);
  std::vector<double> y(static_cast<size_t>(batch * heads * sq * dv), 0.0);
  std::vector<double> row(static_cast<size_t>(sk));
  for (int64_t bh = 0; bh < batch * heads; ++bh) {
    const int64_t kvHead = (bh / heads) * kvHeads + (bh % heads) / group;
    for (int64_t i = 0; i < sq; ++i) {
      double max = -std::numeric_limits<double>::infinity();
      for (int64_t j = 0; j < sk; ++j) {
        const double *qRow = &qd[static_cast<size_t>((bh * sq + i) * d)];
        const double *kRow = &kd[static_cast<size_t>((kvHead * sk + j) * d)];
        double dot = 0.0;
        for (int64_t c = 0; c < d; ++c) dot += qRow[c] * kRow[c];
        double s = scale * dot;
        if (!mask.empty()) s += mask[static_cast<size_t>(maskMap[static_cast<size_t>((bh * sq + i) * sk + j)])];
        if (causal && j > i + sk - sq) s = -std::numeric_limits<double>::infinity();
        row[static_cast<size_t>(j)] = s;
        max = std::max(max, s);
      }
      double sum = 0.0;
      for (double &s : row) sum += (s = std::exp(s - max));
      double *out = &y[static_cast<size_t>((bh * sq + i) * dv)];
      for (int64_t j = 0; j < sk; ++j) {
        const double p = row[static_cast<size_t>(j)] / sum;
        for (int64_t c = 0; c < dv; ++c) out[c] += p * vd[static_cast<size_t>((kvHead * sk + j) * dv + c)];
      }
    }
  }
  ctx.setOutput(0, fromDoubles(q.dtype(), {batch, heads, sq, dv}, y));
  return Status::success();
}

Status refFusedElementwise(KernelContext &ctx) {
  const Graph *body = ctx.node().attrGraph("body");
  if (!body || body->outputs().size() != 1 || body->inputs().size() != ctx.numInputs()) {
    return makeError(ErrorCode::InvalidModel, "FusedElementwise: the body must be a graph of {} inputs and 1 output",
                     ctx.numInputs());
  }
  std::vector<RuntimeValue> inputs;
  std::vector<std::vector<int64_t>> shapes;
  for (size_t i = 0; i < ctx.numInputs(); ++i) {
    TESSEL_RETURN_IF_ERROR(requireInputs(ctx, i + 1));
    inputs.push_back(ctx.input(i));
    shapes.push_back(ctx.tensor(i).sizes());
  }
  TESSEL_ASSIGN_OR_RETURN(std::vector<int64_t> ySizes, broadcastShapes(shapes));
  TESSEL_ASSIGN_OR_RETURN(std::vector<RuntimeValue> outputs, ctx.runSubgraph(*body, std::move(inputs)));
  if (outputs.size() != 1 || !outputs[0].isTensor()) {
    return makeError(ErrorCode::InvalidModel, "FusedElementwise: the body returned {} values; expected one tensor",
                     outputs.size());
  }
  Tensor y = std::move(outputs[0].tensor());
  if (y.sizes() != ySizes) {
    // A body that reads only some inputs at full shape: broadcast its result to Y.
    auto joint = broadcastShapes({y.sizes(), ySizes});
    if (!joint.ok() || *joint != ySizes) {
      return makeError(ErrorCode::ShapeMismatch, "FusedElementwise: the body's result {} does not broadcast to {}",
                       formatSizes(y.sizes()), formatSizes(ySizes));
    }
    std::vector<double> values = toDoubles(y), expanded(static_cast<size_t>(numElements(ySizes)));
    std::vector<int64_t> map = broadcastIndexMap(y.sizes(), ySizes);
    for (size_t i = 0; i < expanded.size(); ++i) expanded[i] = values[static_cast<size_t>(map[i])];
    y = fromDoubles(y.dtype(), ySizes, expanded);
  }
  ctx.setOutput(0, std::move(y));
  return Status::success();
}

}  // namespace ref

// ---- Shape inference ----

namespace {

/// Sets output 0's type, keeping the static dims of a type it already has of the same rank.
void setInferred(Node &node, Type inferred) {
  Value *out = node.output(0);
  if (!out) return;
  const Type &existing = out->type();
  if (existing.isTensor() && existing.shape().rankKnown() && inferred.isTensor() && inferred.shape().rankKnown() &&
      existing.shape().rank() == inferred.shape().rank()) {
    std::vector<Dim> dims = inferred.shape().dims();
    for (size_t i = 0; i < dims.size(); ++i) {
      const Dim &known = existing.shape()[i];
      if (known.isStatic() || (!dims[i].isStatic() && known.isSymbolic())) dims[i] = known;
    }
    DType dtype = inferred.dtype() == DType::Undefined ? existing.dtype() : inferred.dtype();
    out->setType(Type::tensor(dtype, Shape(std::move(dims))));
    return;
  }
  if (existing.isTensor() && existing.shape().rankKnown() && !inferred.shape().rankKnown()) return;
  out->setType(std::move(inferred));
}

const Type *tensorInput(const Node &node, size_t i) {
  const Value *v = node.input(i);
  return v && v->type().isTensor() ? &v->type() : nullptr;
}

/// Numpy broadcasting of two dims; unknown when they cannot be told apart statically.
Dim broadcastDim(const Dim &a, const Dim &b) {
  if (a.isStatic() && a.size == 1) return b;
  if (b.isStatic() && b.size == 1) return a;
  if (a == b) return a;
  if (a.isStatic() && b.isStatic()) return Dim();  // Mismatch: left for the kernel to report.
  if (a.isStatic()) return a;                       // A non-1 static size wins over a symbol.
  if (b.isStatic()) return b;
  return Dim();
}

std::vector<Dim> broadcastDims(const std::vector<Dim> &a, const std::vector<Dim> &b) {
  const size_t rank = std::max(a.size(), b.size());
  std::vector<Dim> out(rank);
  for (size_t i = 0; i < rank; ++i) {
    const Dim one(1);
    const Dim &da = i + a.size() >= rank ? a[i + a.size() - rank] : one;
    const Dim &db = i + b.size() >= rank ? b[i + b.size() - rank] : one;
    out[i] = broadcastDim(da, db);
  }
  return out;
}


/// Where a windowed op's channel and spatial dims sit: [N, C, spatial...], or [N, H, W, C] with
/// channels_last.
struct DimLayout {
  size_t channel = 1;
  std::vector<size_t> spatial;

  DimLayout(const Node &node, size_t rank) {
    if (node.attrInt("channels_last", 0) != 0 && rank == 4) {
      channel = 3;
      spatial = {1, 2};
    } else {
      for (size_t d = 2; d < rank; ++d) spatial.push_back(d);
    }
  }
};

/// Y's dims for a windowed op on X: the batch and `channels` kept, each spatial dim from the
/// window geometry when X's spatial dims and `kernel` (empty: the attribute) are static.
Expected<std::vector<Dim>> windowedDims(const Node &node, const Shape &xs, Dim channels,
                                        const std::vector<std::optional<int64_t>> &kernelFromWeight, bool ceilMode) {
  const DimLayout layout(node, xs.rank());
  std::vector<Dim> dims(xs.rank());
  dims[0] = xs[0];
  dims[layout.channel] = channels;
  std::vector<int64_t> inSpatial, kernel;
  bool spatialStatic = true;
  for (size_t i = 0; i < layout.spatial.size(); ++i) {
    spatialStatic = spatialStatic && xs[layout.spatial[i]].isStatic();
    inSpatial.push_back(xs[layout.spatial[i]].size);
    if (!kernelFromWeight.empty()) {
      spatialStatic = spatialStatic && kernelFromWeight[i].has_value();
      kernel.push_back(kernelFromWeight[i].value_or(0));
    }
  }
  if (!spatialStatic) return dims;
  TESSEL_ASSIGN_OR_RETURN(std::vector<int64_t> k, ref::readKernelShape(node, inSpatial.size(), kernel));
  TESSEL_ASSIGN_OR_RETURN(ref::WindowGeometry window, ref::forwardWindow(node, inSpatial, std::move(k), ceilMode));
  for (size_t i = 0; i < layout.spatial.size(); ++i) dims[layout.spatial[i]] = window.outSizes[i];
  return dims;
}

/// MatMul's output dims from A's and B's (numpy rules: batch dims broadcast, 1-D operands
/// promoted and their dim dropped); nullopt when a rank is unknown.
std::optional<std::vector<Dim>> matmulDims(const Type *a, const Type *b) {
  if (!a || !b || !a->shape().rankKnown() || !b->shape().rankKnown()) return std::nullopt;
  std::vector<Dim> ad = a->shape().dims(), bd = b->shape().dims();
  if (ad.empty() || bd.empty()) return std::nullopt;
  const bool vectorA = ad.size() == 1, vectorB = bd.size() == 1;
  if (vectorA) ad.insert(ad.begin(), Dim(1));
  if (vectorB) bd.push_back(Dim(1));
  std::vector<Dim> batchA(ad.begin(), ad.end() - 2), batchB(bd.begin(), bd.end() - 2);
  std::vector<Dim> dims = broadcastDims(batchA, batchB);
  if (!vectorA) dims.push_back(ad[ad.size() - 2]);
  if (!vectorB) dims.push_back(bd.back());
  return dims;
}

}  // namespace

Status inferSameAsFirstInput(Node &node, int64_t) {
  if (const Type *x = tensorInput(node, 0)) setInferred(node, *x);
  return Status::success();
}

Status inferFusedConv(Node &node, int64_t) {
  const Type *x = tensorInput(node, 0), *w = tensorInput(node, 1);
  if (!x || !w || !x->shape().rankKnown() || x->shape().rank() < 3) return Status::success();
  const Shape &xs = x->shape();
  Dim filters;
  std::vector<std::optional<int64_t>> kernel;
  if (w->shape().rankKnown() && w->shape().rank() == xs.rank()) {
    filters = w->shape()[0];
    for (size_t d = 2; d < xs.rank(); ++d) {
      kernel.push_back(w->shape()[d].isStatic() ? std::optional<int64_t>(w->shape()[d].size) : std::nullopt);
    }
  } else {
    kernel.assign(xs.rank() - 2, std::nullopt);
  }
  TESSEL_ASSIGN_OR_RETURN(std::vector<Dim> dims, windowedDims(node, xs, filters, kernel, /*ceilMode=*/false));
  setInferred(node, Type::tensor(x->dtype(), Shape(std::move(dims))));
  return Status::success();
}

Status inferTesselQLinearConv(Node &node, int64_t) {
  const Type *x = tensorInput(node, 0), *w = tensorInput(node, 3), *yZero = tensorInput(node, 7);
  if (!x || !w || !yZero || !x->shape().rankKnown() || x->shape().rank() < 3) return Status::success();
  const Shape &xs = x->shape();
  Dim filters;
  std::vector<std::optional<int64_t>> kernel(xs.rank() - 2, std::nullopt);
  if (w->shape().rankKnown() && w->shape().rank() == xs.rank()) {
    filters = w->shape()[0];
    for (size_t d = 2; d < xs.rank(); ++d) {
      if (w->shape()[d].isStatic()) kernel[d - 2] = w->shape()[d].size;
    }
  }
  TESSEL_ASSIGN_OR_RETURN(std::vector<Dim> dims, windowedDims(node, xs, filters, kernel, /*ceilMode=*/false));
  setInferred(node, Type::tensor(yZero->dtype(), Shape(std::move(dims))));
  return Status::success();
}

Status inferQLinearMatMulToFloat(Node &node, int64_t) {
  if (std::optional<std::vector<Dim>> dims = matmulDims(tensorInput(node, 0), tensorInput(node, 3))) {
    setInferred(node, Type::tensor(DType::Float32, Shape(std::move(*dims))));
  }
  return Status::success();
}

Status inferQLinearAdd(Node &node, int64_t) {
  const Type *a = tensorInput(node, 0), *yZero = tensorInput(node, 7);
  if (a && yZero) setInferred(node, Type::tensor(yZero->dtype(), a->shape()));
  return Status::success();
}

Status inferDynamicQuantizeCentered(Node &node, int64_t) {
  const Type *x = tensorInput(node, 0);
  if (x) setInferred(node, Type::tensor(DType::Float32, x->shape()));
  if (Value *scale = node.output(1)) scale->setType(Type::tensor(DType::Float32, Shape::scalar()));
  return Status::success();
}

Status inferTesselPool(Node &node, int64_t) {
  const Type *x = tensorInput(node, 0);
  if (!x || !x->shape().rankKnown() || x->shape().rank() < 3) return Status::success();
  const Shape &xs = x->shape();
  const Dim channels = xs[DimLayout(node, xs.rank()).channel];
  TESSEL_ASSIGN_OR_RETURN(std::vector<Dim> dims,
                          windowedDims(node, xs, channels, {}, node.attrInt("ceil_mode", 0) != 0));
  setInferred(node, Type::tensor(x->dtype(), Shape(std::move(dims))));
  return Status::success();
}

Status inferTesselGlobalPool(Node &node, int64_t) {
  const Type *x = tensorInput(node, 0);
  if (!x || !x->shape().rankKnown() || x->shape().rank() < 3) return Status::success();
  std::vector<Dim> dims = x->shape().dims();
  for (size_t d : DimLayout(node, dims.size()).spatial) dims[d] = Dim(1);
  setInferred(node, Type::tensor(x->dtype(), Shape(std::move(dims))));
  return Status::success();
}

Status inferFusedMatMul(Node &node, int64_t) {
  const Type *a = tensorInput(node, 0);
  if (std::optional<std::vector<Dim>> dims = matmulDims(a, tensorInput(node, 1))) {
    setInferred(node, Type::tensor(a->dtype(), Shape(std::move(*dims))));
  }
  return Status::success();
}

Status inferAttention(Node &node, int64_t) {
  const Type *q = tensorInput(node, 0), *v = tensorInput(node, 2);
  if (!q || !v || !q->shape().rankKnown() || !v->shape().rankKnown() || q->shape().rank() != 4 ||
      v->shape().rank() != 4) {
    return Status::success();
  }
  setInferred(node, Type::tensor(q->dtype(), Shape({q->shape()[0], q->shape()[1], q->shape()[2], v->shape()[3]})));
  return Status::success();
}

Status inferFusedElementwise(Node &node, int64_t) {
  const Graph *body = node.attrGraph("body");
  DType dtype = DType::Undefined;
  if (body && body->outputs().size() == 1 && body->outputs()[0]->type().isTensor()) {
    dtype = body->outputs()[0]->type().dtype();
  }
  std::vector<Dim> dims;
  for (size_t i = 0; i < node.inputs().size(); ++i) {
    const Type *t = tensorInput(node, i);
    if (!t || !t->shape().rankKnown()) return Status::success();
    dims = broadcastDims(dims, t->shape().dims());
    if (dtype == DType::Undefined) dtype = t->dtype();
  }
  setInferred(node, Type::tensor(dtype, Shape(std::move(dims))));
  return Status::success();
}

}  // namespace tessel
