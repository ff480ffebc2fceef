// QDQ fusion (see fuse_qdq.h): per Conv, MatMul or Gemm, read the DequantizeLinear nodes around it, then
// rewrite it as a QLinear op when a QuantizeLinear takes its output, else as an integer product
// rescaled to float; then each Add between DequantizeLinear and QuantizeLinear as QLinearAdd, each
// MaxPool between them (of the same parameters) as a MaxPool of the quantized values, and each
// QLinearMatMul whose output only a DequantizeLinear of its own parameters reads as one op with a
// float output; then the quantize-dequantize round trips such float outputs no longer need; last,
// each round trip left as one elementwise snap to the grid in float.
#include "passes/fuse_qdq.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <optional>
#include <string_view>
#include <utility>
#include <unordered_set>

#include "ops/reference/helpers.h"
#include "passes/constant_values.h"
#include "passes/fusion_utils.h"

namespace tessel {

namespace {

using passes::constantValueOf;

/// A DequantizeLinear (or, for the output, QuantizeLinear) with constant parameters: its
/// quantized side, scales and zero points (one each, or one per index of `axis`).
struct QuantParams {
  Node *node = nullptr;
  Value *quantized = nullptr;  // DequantizeLinear's input; QuantizeLinear's output.
  DType dtype = DType::Undefined;
  Value *scale = nullptr;
  Value *zeroPoint = nullptr;  // Null when absent (zero, of type u8 unless the data says otherwise).
  std::vector<double> scales, zeros;
  int64_t axis = -1;  // Normalized; -1 when per tensor.
};

/// Reads the scale (input 1) and zero point (input 2) of a quantization node whose quantized side
/// is `quantized` (of rank `rank`); nullopt when they are not constants of the expected types.
std::optional<QuantParams> readParams(const Model &model, Node *node, Value *quantized, size_t rank) {
  QuantParams p;
  p.node = node;
  p.quantized = quantized;
  p.dtype = quantized->type().isTensor() ? quantized->type().dtype() : DType::Undefined;
  p.scale = node->input(1);
  p.zeroPoint = node->input(2);
  if (!p.scale) return std::nullopt;
  std::optional<Tensor> scale = constantValueOf(model, *p.scale);
  if (!scale || scale->dtype() != DType::Float32 || scale->numel() == 0) return std::nullopt;
  p.scales = ref::toDoubles(*scale);
  for (double s : p.scales) {
    if (!(s > 0.0) || !std::isfinite(s)) return std::nullopt;
  }
  p.zeros.assign(p.scales.size(), 0.0);
  if (p.zeroPoint) {
    std::optional<Tensor> zero = constantValueOf(model, *p.zeroPoint);
    if (!zero || zero->numel() != scale->numel()) return std::nullopt;
    if (p.dtype == DType::Undefined) p.dtype = zero->dtype();
    if (zero->dtype() != p.dtype) return std::nullopt;
    p.zeros = ref::toDoubles(*zero);
  }
  if (scale->numel() > 1) {
    if (scale->rank() != 1) return std::nullopt;
    p.axis = node->attrInt("axis", 1);
    if (p.axis < 0) p.axis += int64_t(rank);
    if (p.axis < 0 || p.axis >= int64_t(rank)) return std::nullopt;
  }
  return p;
}

/// The DequantizeLinear producing `value`, when its parameters are constant and its input is u8
/// or s8 (or int32, `allowInt32`, for a bias).
std::optional<QuantParams> dequantizeOf(const Model &model, Value *value, bool allowInt32 = false) {
  Node *dq = passes::producerIs(value, "DequantizeLinear");
  if (!dq || !dq->input(0) || !value->type().isTensor() || !value->type().shape().rankKnown()) return std::nullopt;
  std::optional<QuantParams> p = readParams(model, dq, dq->input(0), value->type().shape().rank());
  if (!p || !(isQuantized8Bit(p->dtype) || (allowInt32 && p->dtype == DType::Int32))) return std::nullopt;
  return p;
}

/// The per-tensor QuantizeLinear reading `value` (through a Relu or Clip its saturation makes
/// redundant), with the nodes it takes, when it is the value's only reader.
struct OutputQuantization {
  QuantParams params;
  std::vector<Node *> nodes;  // The activation, if any, and the QuantizeLinear.
};

/// A Relu's or Clip's bounds (Clip's constant min and max inputs, or attributes before opset 11;
/// absent ones infinite); nullopt for another op or fed bounds.
std::optional<std::pair<double, double>> activationBounds(const Model &model, const Node &node) {
  constexpr double kInf = std::numeric_limits<double>::infinity();
  if (passes::isOnnxOp(&node, "Relu")) return std::pair{0.0, kInf};
  if (!passes::isOnnxOp(&node, "Clip")) return std::nullopt;
  if (model.opsetFor("") < 11) return std::pair{double(node.attrFloat("min", -3.4028234663852886e38f)),
                                                double(node.attrFloat("max", 3.4028234663852886e38f))};
  std::pair<double, double> bounds{-kInf, kInf};
  for (size_t i : {size_t{1}, size_t{2}}) {
    if (!node.input(i)) continue;
    std::optional<double> bound = passes::scalarConstant(model, node.input(i));
    if (!bound) return std::nullopt;
    (i == 1 ? bounds.first : bounds.second) = *bound;
  }
  return bounds;
}

/// The smallest and largest value of an 8-bit quantized type (s8, else u8).
std::pair<double, double> quantizedRange(DType dtype) {
  return dtype == DType::Int8 ? std::pair{-128.0, 127.0} : std::pair{0.0, 255.0};
}

/// QuantizeLinear's value for `x` with one scale and zero point of `dtype`: the float32 division,
/// rounded half to even, saturated.
double quantized(double x, double scale, double zero, DType dtype) {
  const auto [lo, hi] = quantizedRange(dtype);
  if (std::isinf(x)) return x < 0 ? lo : hi;
  return std::clamp(std::nearbyint(double(float(x) / float(scale))) + zero, lo, hi);
}

std::optional<OutputQuantization> outputQuantizationOf(const Model &model, Value *value,
                                                       const std::unordered_set<const Value *> &returned) {
  const Graph &graph = *model.graph;
  OutputQuantization out;
  Node *user = passes::singleUser(graph, value);
  std::optional<std::pair<double, double>> bounds;
  if (user && user->input(0) == value && (bounds = activationBounds(model, *user)) && !returned.count(user->output(0))) {
    out.nodes.push_back(user);
    user = passes::singleUser(graph, user->output(0));
  }
  if (!user || !passes::isOnnxOp(user, "QuantizeLinear") || user->input(0) != (out.nodes.empty() ? value : out.nodes[0]->output(0))) {
    return std::nullopt;
  }
  std::optional<QuantParams> p = readParams(model, user, user->output(0), 0);
  if (!p) return std::nullopt;
  if (!p->zeroPoint) p->dtype = DType::UInt8;
  if (!isQuantized8Bit(p->dtype) || p->scales.size() != 1) return std::nullopt;
  // Quantizing saturates at the type's bounds; an activation whose bounds quantize to those (or past
  // them) changes nothing: below its min both sides give the type's minimum, above its max the maximum.
  if (bounds) {
    const auto [typeMin, typeMax] = quantizedRange(p->dtype);
    if (quantized(bounds->first, p->scales[0], p->zeros[0], p->dtype) != typeMin ||
        quantized(bounds->second, p->scales[0], p->zeros[0], p->dtype) != typeMax) {
      return std::nullopt;
    }
  }
  out.nodes.push_back(user);
  out.params = std::move(*p);
  return out;
}

/// The zero point input of `p`, made a constant 0 of its type when absent (once per quantized
/// value, whichever rewrite reads it first).
Value *zeroPointValue(Graph &graph, const QuantParams &p) {
  if (p.zeroPoint) return p.zeroPoint;
  const std::string name = p.quantized->name() + "_zero_point";
  if (Value *made = graph.findValue(name); made && made->hasInitializer()) {
    const Tensor &t = made->initializer();
    if (t.dtype() == p.dtype && t.rank() == 0 && t.scalarAsDouble(0) == 0.0) return made;
  }
  return passes::addConstant(graph, name, ref::fromDoubles(p.dtype, {}, {0.0}));
}

/// Per output channel (column) j of `outputs`: the float32 scale of the integer product.
std::vector<double> productScales(const QuantParams &x, const QuantParams &w, int64_t outputs) {
  std::vector<double> scales(static_cast<size_t>(outputs));
  for (size_t j = 0; j < scales.size(); ++j) {
    scales[j] = double(float(x.scales[0]) * float(w.scales[w.scales.size() == 1 ? 0 : j]));
  }
  return scales;
}

/// The Conv's bias as float values (a float constant, or a DequantizeLinear of a constant, either
/// through Identity nodes: exporters that share equal constants write those), or nullopt when it is
/// fed; empty when there is none.
std::optional<std::vector<double>> biasValues(const Model &model, Value *bias, int64_t channels) {
  if (!bias) return std::vector<double>{};
  for (Node *identity = passes::producerIs(bias, "Identity"); identity && identity->input(0);
       identity = passes::producerIs(bias, "Identity")) {
    bias = identity->input(0);
  }
  if (std::optional<QuantParams> dq = dequantizeOf(model, bias, /*allowInt32=*/true)) {
    std::optional<Tensor> q = constantValueOf(model, *dq->quantized);
    if (!q || q->numel() != channels) return std::nullopt;
    std::vector<double> values = ref::toDoubles(*q);
    for (size_t c = 0; c < values.size(); ++c) {
      const size_t i = dq->scales.size() == 1 ? 0 : c;
      values[c] = double(float((values[c] - dq->zeros[i]) * dq->scales[i]));
    }
    return values;
  }
  std::optional<Tensor> b = constantValueOf(model, *bias);
  if (!b || !isFloatingPoint(b->dtype()) || b->numel() != channels) return std::nullopt;
  return ref::toDoubles(*b);
}

/// A Conv, MatMul or Gemm with its operands' DequantizeLinear nodes, ready to rewrite.
struct Match {
  Node *op = nullptr;
  bool conv = false;
  QuantParams x, w;
  bool transposed = false;  // A Gemm's B given as [N, K].
  std::optional<QuantParams> biasDq;
  std::vector<double> bias;  // Float values per output channel; empty without a bias.
  int64_t outputs = 0;       // Output channels (Conv) or columns (MatMul, Gemm).
};

/// Whether `op` is a Gemm that is a plain product of a [M, K] A, plus C per column when it has one:
/// alpha and beta 1, A not transposed, C of N values along the last axis.
bool isPlainGemm(const Node &op, int64_t columns) {
  if (op.attrFloat("alpha", 1.0f) != 1.0f || op.attrFloat("beta", 1.0f) != 1.0f || op.attrInt("transA", 0) != 0) {
    return false;
  }
  const Type &a = op.input(0)->type();
  if (!a.isTensor() || !a.shape().rankKnown() || a.shape().rank() != 2) return false;
  const Value *c = op.input(2);
  if (!c) return true;
  if (!c->type().isTensor() || !c->type().shape().rankKnown()) return false;
  const Shape &cs = c->type().shape();
  const bool row = cs.rank() == 1 || (cs.rank() == 2 && cs[0].isStatic() && cs[0].size == 1);
  return row && cs[cs.rank() - 1].isStatic() && cs[cs.rank() - 1].size == columns;
}

std::optional<Match> matchProduct(const Model &model, Node *op) {
  Match m;
  m.op = op;
  m.conv = passes::isOnnxOp(op, "Conv");
  const bool gemm = passes::isOnnxOp(op, "Gemm");
  if (!m.conv && !gemm && !passes::isOnnxOp(op, "MatMul")) return std::nullopt;
  if (!op->input(0) || !op->input(1) || !op->output(0)) return std::nullopt;
  std::optional<QuantParams> x = dequantizeOf(model, op->input(0));
  std::optional<QuantParams> w = dequantizeOf(model, op->input(1));
  if (!x || !w || x->scales.size() != 1) return std::nullopt;
  std::optional<Tensor> weights = constantValueOf(model, *w->quantized);
  if (!weights) return std::nullopt;
  // A Gemm's transposed B ([N, K]) has its output channels on axis 0.
  const bool transposed = gemm && op->attrInt("transB", 0) != 0;
  if (m.conv) {
    if (weights->rank() < 3 || (w->axis != -1 && w->axis != 0)) return std::nullopt;
    m.outputs = weights->size(0);
  } else {
    const int64_t outputAxis = transposed ? 0 : 1;
    if (weights->rank() != 2 || (w->axis != -1 && w->axis != outputAxis)) return std::nullopt;
    m.outputs = weights->size(outputAxis);
    if (gemm && !isPlainGemm(*op, m.outputs)) return std::nullopt;
  }
  if (m.conv || gemm) {
    std::optional<std::vector<double>> bias = biasValues(model, op->input(2), m.outputs);
    if (!bias) return std::nullopt;
    m.bias = std::move(*bias);
    if (op->input(2)) m.biasDq = dequantizeOf(model, op->input(2), /*allowInt32=*/true);
  }
  if (w->scales.size() != 1 && int64_t(w->scales.size()) != m.outputs) return std::nullopt;
  m.transposed = transposed;
  m.x = std::move(*x);
  m.w = std::move(*w);
  return m;
}

/// The quantized weight as the integer ops read it: a transposed Gemm B as a [K, N] constant.
Value *weightValue(Model &model, const Match &m) {
  if (!m.transposed) return m.w.quantized;
  const Tensor nByK = *constantValueOf(model, *m.w.quantized);
  const int64_t n = nByK.size(0), k = nByK.size(1);
  Tensor kByN(nByK.dtype(), {k, n});
  const auto *from = static_cast<const uint8_t *>(nByK.rawData());
  auto *to = static_cast<uint8_t *>(kByN.rawData());
  for (int64_t j = 0; j < n; ++j) {
    for (int64_t i = 0; i < k; ++i) to[i * n + j] = from[j * k + i];
  }
  // Once per weight, whichever rewrite reads it first (a model may multiply by one B twice).
  const std::string name = m.w.quantized->name() + "_transposed";
  if (Value *made = model.graph->findValue(name); made && made->hasInitializer()) {
    const Tensor &t = made->initializer();
    if (t.dtype() == kByN.dtype() && t.sizes() == kByN.sizes() &&
        std::memcmp(t.rawData(), kByN.rawData(), size_t(n * k)) == 0) {
      return made;
    }
  }
  return passes::addConstant(*model.graph, name, std::move(kByN));
}

/// The nodes of the match that become unread once it is rewritten (erased if so).
std::vector<Node *> matchedNodes(const Match &m) {
  std::vector<Node *> nodes = {m.op, m.x.node, m.w.node};
  if (m.biasDq) nodes.push_back(m.biasDq->node);
  return nodes;
}

/// The match's bias as int32 at the product's scale x_scale * w_scale: an int32 DequantizeLinear at
/// that scale as it is, any other bias rounded to it.
Value *quantizedBias(Graph &graph, const Match &m) {
  const std::vector<double> scales = productScales(m.x, m.w, m.outputs);
  bool asIs = m.biasDq && m.biasDq->dtype == DType::Int32 && m.biasDq->quantized->type().shape().rank() == 1;
  for (size_t c = 0; asIs && c < scales.size(); ++c) {
    asIs = m.biasDq->zeros[m.biasDq->zeros.size() == 1 ? 0 : c] == 0.0 &&
           float(m.biasDq->scales[m.biasDq->scales.size() == 1 ? 0 : c]) == float(scales[c]);
  }
  if (asIs) return m.biasDq->quantized;
  std::vector<double> q(m.bias.size());
  for (size_t c = 0; c < q.size(); ++c) {
    q[c] = std::clamp(std::nearbyint(m.bias[c] / scales[c]), double(std::numeric_limits<int32_t>::min()),
                      double(std::numeric_limits<int32_t>::max()));
  }
  return passes::addConstant(graph, m.op->output(0)->name() + "_bias_quantized",
                             ref::fromDoubles(DType::Int32, {m.outputs}, q));
}

/// Rule A: Q(op(DQ(x), DQ(w), bias)) -> QLinearConv / QLinearMatMul; a Gemm with a bias (which
/// QLinearMatMul lacks) -> tessel QLinearMatMulToFloat with it, the QuantizeLinear kept (it gives
/// back the bytes exactly: the floats are already on its grid).
void rewriteAsQLinear(Model &model, const Match &m, const OutputQuantization &out) {
  Graph &graph = *model.graph;
  std::vector<Value *> inputs = {m.x.quantized,           m.x.scale, zeroPointValue(graph, m.x), weightValue(model, m),
                                 m.w.scale,               zeroPointValue(graph, m.w), out.params.scale,
                                 zeroPointValue(graph, out.params)};
  if (!m.conv && !m.bias.empty()) {
    inputs.push_back(quantizedBias(graph, m));
    passes::replacePattern(graph, m.op->output(0), "QLinearMatMulToFloat", "tessel", inputs, {}, matchedNodes(m));
    passes::importTesselOpset(model);
    return;
  }
  if (!m.bias.empty()) inputs.push_back(quantizedBias(graph, m));
  std::vector<Node *> pattern = out.nodes;
  for (Node *n : matchedNodes(m)) pattern.push_back(n);
  passes::replacePattern(graph, out.params.quantized, m.conv ? "QLinearConv" : "QLinearMatMul", "", inputs,
                         m.conv ? m.op->attributes() : std::vector<std::pair<std::string, Attribute>>{}, pattern);
}

/// Rule B: op(DQ(x), DQ(w), bias) -> Cast(ConvInteger / MatMulInteger) * scale (+ bias).
void rewriteAsIntegerProduct(Model &model, const Match &m) {
  Graph &graph = *model.graph;
  Value *y = m.op->output(0);
  const Shape &shape = y->type().shape();
  const std::string base = m.op->name().empty() ? y->name() : m.op->name();
  const size_t rank = shape.rank();
  Node *product = graph.addNode(m.conv ? "ConvInteger" : "MatMulInteger",
                                {m.x.quantized, weightValue(model, m), zeroPointValue(graph, m.x), zeroPointValue(graph, m.w)},
                                {graph.uniqueName(y->name() + "_int32")}, graph.uniqueName(base + "_integer"));
  if (m.conv) {
    for (const auto &[name, value] : m.op->attributes()) product->setAttr(name, value);
  }
  product->output(0)->setType(Type::tensor(DType::Int32, shape));
  Node *cast = graph.addNode("Cast", {product->output(0)}, {graph.uniqueName(y->name() + "_float")},
                             graph.uniqueName(base + "_cast"));
  cast->setAttr("to", int64_t(DType::Float32));
  cast->output(0)->setType(Type::tensor(DType::Float32, shape));
  // Per output channel, a Conv's constants broadcast as [C, 1, ...] over its [N, C, spatial...].
  std::vector<int64_t> channelShape = {m.outputs};
  if (m.conv) channelShape.insert(channelShape.end(), rank - 2, 1);
  const std::vector<double> scales = productScales(m.x, m.w, m.outputs);
  Value *scale = passes::addConstant(graph, y->name() + "_product_scale",
                                     ref::fromDoubles(DType::Float32, channelShape, scales));
  std::vector<Node *> pattern = matchedNodes(m);
  if (m.bias.empty()) {
    passes::replacePattern(graph, y, "Mul", "", {cast->output(0), scale}, {}, pattern);
    return;
  }
  Node *mul = graph.addNode("Mul", {cast->output(0), scale}, {graph.uniqueName(y->name() + "_scaled")},
                            graph.uniqueName(base + "_scale"));
  mul->output(0)->setType(Type::tensor(DType::Float32, shape));
  Value *bias = passes::addConstant(graph, y->name() + "_bias", ref::fromDoubles(DType::Float32, channelShape, m.bias));
  passes::replacePattern(graph, y, "Add", "", {mul->output(0), bias}, {}, pattern);
}

/// Rule C: Q(Add(DQ(a), DQ(b)) (-> a redundant Relu or Clip)) of one shape and one 8-bit type ->
/// tessel QLinearAdd. Returns whether it rewrote `add`.
bool fuseQuantizedAdd(Model &model, Node *add, const std::unordered_set<const Value *> &returned) {
  Graph &graph = *model.graph;
  if (!passes::isOnnxOp(add, "Add") || !add->input(0) || !add->input(1) || returned.count(add->output(0))) {
    return false;
  }
  std::optional<QuantParams> a = dequantizeOf(model, add->input(0)), b = dequantizeOf(model, add->input(1));
  if (!a || !b || a->scales.size() != 1 || b->scales.size() != 1 || a->dtype != b->dtype) return false;
  if (!passes::sameShape(a->quantized, b->quantized) || !passes::staticSizes(a->quantized)) return false;
  std::optional<OutputQuantization> out = outputQuantizationOf(model, add->output(0), returned);
  if (!out || out->params.dtype != a->dtype) return false;
  std::vector<Node *> pattern = out->nodes;
  pattern.insert(pattern.end(), {add, a->node, b->node});
  passes::replacePattern(graph, out->params.quantized, "QLinearAdd", "tessel",
                         {a->quantized, a->scale, zeroPointValue(graph, *a), b->quantized, b->scale,
                          zeroPointValue(graph, *b), out->params.scale, zeroPointValue(graph, out->params)},
                         {}, pattern);
  passes::importTesselOpset(model);
  return true;
}

/// Rule D: Q(MaxPool(DQ(x))) with the same per-tensor scale, zero point and type on both sides ->
/// MaxPool(x). Dequantizing is increasing (scale > 0), so the maximum commutes with it, and the
/// QuantizeLinear of a dequantized value of the same parameters gives the value back: exact.
bool fuseQuantizedMaxPool(Model &model, Node *pool, const std::unordered_set<const Value *> &returned) {
  Graph &graph = *model.graph;
  if (!passes::isOnnxOp(pool, "MaxPool") || !pool->input(0) || returned.count(pool->output(0))) return false;
  const Value *indices = pool->output(1);
  if (indices && (!indices->uses().empty() || passes::isGraphOutput(graph, indices))) return false;
  std::optional<QuantParams> x = dequantizeOf(model, pool->input(0));
  if (!x || x->scales.size() != 1) return false;
  Node *q = passes::singleUser(graph, pool->output(0));
  if (!q || !passes::isOnnxOp(q, "QuantizeLinear") || q->input(0) != pool->output(0)) return false;
  std::optional<QuantParams> y = readParams(model, q, q->output(0), 0);
  if (!y) return false;
  if (!y->zeroPoint) y->dtype = DType::UInt8;
  if (y->dtype != x->dtype || y->scales.size() != 1 || float(y->scales[0]) != float(x->scales[0]) ||
      y->zeros[0] != x->zeros[0]) {
    return false;
  }
  passes::replacePattern(graph, q->output(0), "MaxPool", "", {x->quantized}, pool->attributes(), {q, pool, x->node});
  return true;
}

/// Rule E: DQ(QLinearMatMul(...)) reading the product's own y_scale and y_zero_point, its only
/// reader -> tessel QLinearMatMulToFloat: the GEMM writes the dequantized values (exactly DQ's)
/// instead of bytes a second pass widens. The transformer blocks' products feed float ops this way.
bool fuseDequantizedMatMul(Model &model, Node *product, const std::unordered_set<const Value *> &returned) {
  Graph &graph = *model.graph;
  if (!passes::isOnnxOp(product, "QLinearMatMul") || product->inputs().size() != 8 || !product->input(6) ||
      !product->input(7) || returned.count(product->output(0)) || passes::isGraphOutput(graph, product->output(0))) {
    return false;
  }
  Node *dq = passes::singleUser(graph, product->output(0));
  if (!dq || !passes::isOnnxOp(dq, "DequantizeLinear") || dq->input(0) != product->output(0)) return false;
  std::optional<QuantParams> p = readParams(model, dq, dq->input(0), 0);
  std::optional<Tensor> scale = constantValueOf(model, *product->input(6));
  std::optional<Tensor> zero = constantValueOf(model, *product->input(7));
  if (!p || p->scales.size() != 1 || !scale || scale->numel() != 1 || !zero || zero->numel() != 1 ||
      zero->dtype() != p->dtype || float(p->scales[0]) != float(ref::toDoubles(*scale)[0]) ||
      p->zeros[0] != ref::toDoubles(*zero)[0]) {
    return false;
  }
  std::vector<Value *> inputs;
  for (size_t i = 0; i < 8; ++i) inputs.push_back(product->input(i));
  passes::replacePattern(graph, dq->output(0), "QLinearMatMulToFloat", "tessel", inputs, {}, {dq, product});
  passes::importTesselOpset(model);
  return true;
}

/// Whether the quantization node `node` (its scale and zero point inputs 1 and 2) has the one scale,
/// zero point and type of QLinearMatMulToFloat `product`'s output grid (inputs 6 and 7).
bool onOutputGrid(const Model &model, Node *node, Value *quantized, const Node &product) {
  std::optional<QuantParams> p = readParams(model, node, quantized, 0);
  if (!p) return false;
  if (!p->zeroPoint) p->dtype = DType::UInt8;
  std::optional<Tensor> scale = constantValueOf(model, *product.input(6));
  std::optional<Tensor> zero = constantValueOf(model, *product.input(7));
  return p->scales.size() == 1 && scale && scale->numel() == 1 && zero && zero->numel() == 1 &&
         zero->dtype() == p->dtype && float(p->scales[0]) == float(ref::toDoubles(*scale)[0]) &&
         p->zeros[0] == ref::toDoubles(*zero)[0];
}

/// Rule F: DQ(Q(y)) of y = QLinearMatMulToFloat(...) with the product's own output parameters, the
/// QuantizeLinear's only reader -> y. y is already on that grid, so the round trip gives it back
/// exactly (what a Gemm with a bias, rewritten by rule A, leaves between it and its readers).
bool dropRoundTrip(Model &model, Node *quantize, const std::unordered_set<const Value *> &returned) {
  Graph &graph = *model.graph;
  if (!passes::isOnnxOp(quantize, "QuantizeLinear") || !quantize->input(0) || !quantize->output(0)) return false;
  Node *product = quantize->input(0)->producer();
  if (!passes::isTesselOp(product, "QLinearMatMulToFloat")) return false;
  Value *q = quantize->output(0);
  if (returned.count(q) || passes::isGraphOutput(graph, q)) return false;
  Node *dq = passes::singleUser(graph, q);
  if (!dq || !passes::isOnnxOp(dq, "DequantizeLinear") || dq->input(0) != q || !dq->output(0)) return false;
  if (!onOutputGrid(model, quantize, q, *product) || !onOutputGrid(model, dq, q, *product)) return false;
  if (returned.count(dq->output(0)) || passes::isGraphOutput(graph, dq->output(0))) return false;
  graph.replaceAllUsesWith(dq->output(0), quantize->input(0));
  graph.eraseNode(dq);
  graph.eraseNode(quantize);
  return true;
}

/// Rule G: DQ(Q(x)) of float32 x with one scale, zero point and 8-bit type on both sides, the
/// QuantizeLinear's only reader -> Mul(Clip(Round(Div(x, scale)), min - zero, max - zero), scale):
/// x put on the grid in float. Exactly the round trip's values: Div is QuantizeLinear's float32
/// division, Round its half-to-even rounding, and the integers after it are exact in float32. One
/// elementwise pass, which fuse-elementwise merges with its neighbours, instead of a pass writing
/// bytes and one reading them back. What reaches this rule are the round trips around products of
/// two activations (attention's), which no rule above makes integer ops.
bool snapToGrid(Model &model, Node *quantize, const std::unordered_set<const Value *> &returned) {
  Graph &graph = *model.graph;
  if (model.opsetFor("") < 11) return false;  // Round is opset 11.
  if (!passes::isOnnxOp(quantize, "QuantizeLinear") || !quantize->input(0) || !quantize->output(0) ||
      quantize->hasAttr("output_dtype") || quantize->hasAttr("block_size")) {
    return false;
  }
  Value *x = quantize->input(0), *q = quantize->output(0);
  if (!x->type().isTensor() || x->type().dtype() != DType::Float32 || returned.count(q)) return false;
  Node *dq = passes::singleUser(graph, q);
  if (!dq || !passes::isOnnxOp(dq, "DequantizeLinear") || dq->input(0) != q || !dq->output(0) ||
      returned.count(dq->output(0))) {
    return false;
  }
  std::optional<QuantParams> in = readParams(model, quantize, q, 0), out = readParams(model, dq, q, 0);
  if (!in || !out || in->scales.size() != 1 || out->scales.size() != 1) return false;
  const DType type = in->dtype == DType::Undefined && !in->zeroPoint ? DType::UInt8 : in->dtype;
  if (!isQuantized8Bit(type) || out->dtype != in->dtype || float(in->scales[0]) != float(out->scales[0]) ||
      in->zeros[0] != out->zeros[0]) {
    return false;
  }
  const Type floatType = Type::tensor(DType::Float32, x->type().shape());
  const std::string base = dq->output(0)->name();
  auto addStep = [&](const char *op, std::vector<Value *> inputs, const std::string &suffix) {
    Node *node = graph.addNode(op, inputs, {graph.uniqueName(base + suffix)}, graph.uniqueName(base + suffix));
    node->output(0)->setType(floatType);
    return node->output(0);
  };
  auto scalar = [&](const std::string &suffix, double value) {
    return passes::addConstant(graph, base + suffix, ref::fromDoubles(DType::Float32, {}, {value}));
  };
  const double zero = in->zeros[0];
  const auto [typeMin, typeMax] = quantizedRange(type);
  Value *scale = scalar("_grid_scale", float(in->scales[0]));
  Value *rounded = addStep("Round", {addStep("Div", {x, scale}, "_on_grid_scale")}, "_rounded");
  Value *clipped = addStep("Clip", {rounded, scalar("_grid_min", typeMin - zero), scalar("_grid_max", typeMax - zero)},
                           "_saturated");
  passes::replacePattern(graph, dq->output(0), "Mul", "", {clipped, scale}, {}, {dq, quantize});
  return true;
}

}  // namespace

Expected<bool> fuseQdq(Model &model) {
  Graph &graph = *model.graph;
  if (model.opsetFor("") < 10) return false;
  std::vector<Node *> products, adds, pools;
  for (const auto &node : graph.nodes()) {
    if (passes::isOnnxOp(node.get(), "Conv") || passes::isOnnxOp(node.get(), "MatMul") ||
        passes::isOnnxOp(node.get(), "Gemm")) {
      products.push_back(node.get());
    }
    if (passes::isOnnxOp(node.get(), "Add")) adds.push_back(node.get());
    if (passes::isOnnxOp(node.get(), "MaxPool")) pools.push_back(node.get());
  }
  const std::unordered_set<const Value *> returned = passes::valuesReturnedBySubgraphs(graph);
  bool changed = false;
  for (Node *op : products) {
    std::optional<Match> m = matchProduct(model, op);
    if (!m || !op->output(0)->type().isTensor() || !op->output(0)->type().shape().rankKnown() ||
        returned.count(op->output(0))) {
      continue;
    }
    if (std::optional<OutputQuantization> out = outputQuantizationOf(model, op->output(0), returned)) {
      rewriteAsQLinear(model, *m, *out);
    } else {
      rewriteAsIntegerProduct(model, *m);
    }
    changed = true;
  }
  for (Node *add : adds) changed = fuseQuantizedAdd(model, add, returned) || changed;
  for (Node *pool : pools) changed = fuseQuantizedMaxPool(model, pool, returned) || changed;
  // Each rule erases nodes, so each collects what it visits after the one before has run.
  auto nodesOf = [&](std::string_view op) {
    std::vector<Node *> found;
    for (const auto &node : graph.nodes()) {
      if (passes::isOnnxOp(node.get(), op)) found.push_back(node.get());
    }
    return found;
  };
  for (Node *product : nodesOf("QLinearMatMul")) changed = fuseDequantizedMatMul(model, product, returned) || changed;
  for (Node *quantize : nodesOf("QuantizeLinear")) changed = dropRoundTrip(model, quantize, returned) || changed;
  for (Node *quantize : nodesOf("QuantizeLinear")) changed = snapToGrid(model, quantize, returned) || changed;
  if (changed) TESSEL_RETURN_IF_ERROR(graph.sortTopologically());
  return changed;
}

}  // namespace tessel
