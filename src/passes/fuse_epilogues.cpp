// Epilogue fusion: a forward walk over anchors (Conv, MatMul, Gemm) that follows the single-reader
// chain after each one, absorbing bias, residual and activation as far as they match.
#include "passes/fuse_epilogues.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <unordered_set>

#include "ops/activation.h"
#include "ops/reference/helpers.h"
#include "passes/constant_values.h"
#include "passes/fusion_utils.h"

namespace tessel {

namespace {

using passes::constantValueOf;
using passes::sameShape;

/// What was matched after the anchor.
struct Epilogue {
  std::vector<Node *> nodes;  // Absorbed nodes, in chain order.
  Value *result = nullptr;    // The value the fused node replaces.
  std::optional<std::vector<double>> bias;
  Value *residual = nullptr;
  Activation activation;
};

/// The bias an Add adds to Y when its other operand is a constant broadcast along `axis` of Y
/// (every other dim 1, no dims beyond Y's rank).
std::optional<std::vector<double>> channelBias(const Model &model, const Value *operand, const Value *y,
                                               size_t axis, int64_t channels) {
  std::optional<Tensor> constant = constantValueOf(model, *operand);
  if (!constant || !isFloatingPoint(constant->dtype()) || constant->numel() != channels) return std::nullopt;
  const size_t rank = y->type().shape().rank();
  if (constant->rank() > rank || constant->rank() < rank - axis) return std::nullopt;
  const size_t offset = rank - constant->rank();
  for (size_t d = 0; d < constant->rank(); ++d) {
    if (d + offset != axis && constant->size(d) != 1) return std::nullopt;
  }
  return ref::toDoubles(*constant);
}

/// The activation `node` applies to `x` (its only data input); nullopt when it is none of ours.
std::optional<Activation> activationOf(const Model &model, const Node &node) {
  const float inf = std::numeric_limits<float>::infinity();
  if (passes::isOnnxOp(&node, "Relu")) return Activation{ActivationKind::Relu};
  if (passes::isOnnxOp(&node, "Sigmoid")) return Activation{ActivationKind::Sigmoid};
  if (passes::isOnnxOp(&node, "Tanh")) return Activation{ActivationKind::Tanh};
  if (passes::isOnnxOp(&node, "LeakyRelu")) return Activation{ActivationKind::LeakyRelu, node.attrFloat("alpha", 0.01f)};
  if (passes::isOnnxOp(&node, "Clip")) {
    float lo = -inf, hi = inf;
    if (model.opsetFor("") < 11) {
      lo = node.attrFloat("min", lo);
      hi = node.attrFloat("max", hi);
    } else {
      for (size_t i : {size_t{1}, size_t{2}}) {
        if (!node.input(i)) continue;
        std::optional<double> bound = passes::scalarConstant(model, node.input(i));
        if (!bound) return std::nullopt;
        (i == 1 ? lo : hi) = static_cast<float>(*bound);
      }
    }
    return Activation{ActivationKind::Clip, lo, hi};
  }
  if (passes::isOnnxOp(&node, "HardSigmoid")) {
    return Activation{ActivationKind::HardSigmoid, node.attrFloat("alpha", 0.2f), node.attrFloat("beta", 0.5f)};
  }
  if (passes::isOnnxOp(&node, "HardSwish")) return Activation{ActivationKind::HardSwish};
  if (node.domain() == "tessel" && node.opType() == "Gelu") {
    std::string approximate = node.attrString("approximate", "none");
    if (approximate != "none" && approximate != "tanh") return std::nullopt;
    return Activation{approximate == "tanh" ? ActivationKind::GeluTanh : ActivationKind::Gelu};
  }
  return std::nullopt;
}

/// Whether `node` divides its input 0 by 6, or multiplies it by 1/6 (either operand order).
bool scalesBySixth(const Model &model, const Node *node, const Value *x) {
  if (passes::isOnnxOp(node, "Div")) return node->input(0) == x && passes::isScalarConstant(model, node->input(1), 6.0);
  if (!passes::isOnnxOp(node, "Mul")) return false;
  const Value *other = node->input(0) == x ? node->input(1) : node->input(0);
  return (node->input(0) == x || node->input(1) == x) && passes::isScalarConstant(model, other, 1.0 / 6.0);
}

/// Whether `node` is Clip(x, 0, 6) (bounds as inputs, or attributes before opset 11).
bool clipsToSix(const Model &model, const Node *node, const Value *x) {
  if (!passes::isOnnxOp(node, "Clip") || node->input(0) != x) return false;
  if (model.opsetFor("") < 11) return node->attrFloat("min", -1) == 0.0f && node->attrFloat("max", 0) == 6.0f;
  return node->input(1) && node->input(2) && passes::isScalarConstant(model, node->input(1), 0.0) &&
         passes::isScalarConstant(model, node->input(2), 6.0);
}

/// The nodes of x * Clip(x + 3, 0, 6) / 6 (the division before or after the product, or as a Mul
/// by 1/6) or of x * HardSigmoid(x, 1/6, 1/2) reading `x` twice, ending at the last; empty when
/// the two readers of `x` are not that.
std::vector<Node *> matchHardSwish(const Model &model, const Value *x) {
  const Graph &graph = *model.graph;
  Node *gate = nullptr, *mul = nullptr;
  for (const Use &use : x->uses()) {
    Node *user = use.user;
    if (passes::isOnnxOp(user, "Mul") && user->input(0) != user->input(1)) {
      mul = user;
    } else {
      gate = user;
    }
  }
  if (!gate || !mul) return {};
  if (passes::isOnnxOp(gate, "HardSigmoid")) {
    const bool sixth = std::abs(gate->attrFloat("alpha", 0.2f) - 1.0f / 6.0f) < 1e-6f && gate->attrFloat("beta", 0.5f) == 0.5f;
    if (!sixth || passes::singleUser(graph, gate->output(0)) != mul) return {};
    return {gate, mul};
  }
  // gate = Add(x, 3), then Clip to [0, 6].
  if (!passes::isOnnxOp(gate, "Add")) return {};
  const Value *three = gate->input(0) == x ? gate->input(1) : gate->input(0);
  if (!passes::isScalarConstant(model, three, 3.0)) return {};
  Node *clip = passes::singleUser(graph, gate->output(0));
  if (!clipsToSix(model, clip, gate->output(0))) return {};
  Node *afterClip = passes::singleUser(graph, clip->output(0));
  if (afterClip == mul) {
    // x * clip, then / 6.
    Node *scale = passes::singleUser(graph, mul->output(0));
    if (!scalesBySixth(model, scale, mul->output(0))) return {};
    return {gate, clip, mul, scale};
  }
  // clip / 6, then x * that.
  if (!scalesBySixth(model, afterClip, clip->output(0)) || passes::singleUser(graph, afterClip->output(0)) != mul) {
    return {};
  }
  return {gate, clip, afterClip, mul};
}

/// Follows the chain after `y` (the anchor's output) and records what can be absorbed.
Epilogue matchEpilogue(const Model &model, Value *y, bool isConv, bool acceptBias) {
  const Graph &graph = *model.graph;
  Epilogue e;
  e.result = y;
  if (!y->type().isTensor() || !y->type().shape().rankKnown() || y->type().shape().rank() < (isConv ? 3u : 1u)) {
    return e;
  }
  const Shape &shape = y->type().shape();
  const size_t axis = isConv ? 1 : shape.rank() - 1;
  if (!shape[axis].isStatic()) return e;
  const int64_t channels = shape[axis].size;
  Value *current = y;
  Node *next = passes::singleUser(graph, current);
  // Bias.
  if (acceptBias && passes::isOnnxOp(next, "Add") && sameShape(next->output(0), y)) {
    const int other = next->input(0) == current ? 1 : 0;
    if (next->input(1 - other) == current && next->input(other) != current) {
      if (auto bias = channelBias(model, next->input(other), y, axis, channels)) {
        e.bias = std::move(bias);
        e.nodes.push_back(next);
        current = next->output(0);
        next = passes::singleUser(graph, current);
      }
    }
  }
  // Residual.
  if (passes::isOnnxOp(next, "Add") && next->input(0) != next->input(1)) {
    Value *other = next->input(0) == current ? next->input(1) : next->input(0);
    if (other && sameShape(other, y) && sameShape(next->output(0), y) &&
        other->type().dtype() == y->type().dtype()) {
      e.residual = other;
      e.nodes.push_back(next);
      current = next->output(0);
      next = passes::singleUser(graph, current);
    }
  }
  e.result = current;
  // Activation: a single reader, or Silu's pair of readers Sigmoid(x) and Mul(x, Sigmoid(x)).
  if (next) {
    if (auto act = activationOf(model, *next); act && next->input(0) == current) {
      e.activation = *act;
      e.nodes.push_back(next);
      e.result = next->output(0);
    }
  } else if (current->uses().size() == 2 && !passes::isGraphOutput(graph, current)) {
    if (std::vector<Node *> hardSwish = matchHardSwish(model, current); !hardSwish.empty()) {
      e.activation = Activation{ActivationKind::HardSwish};
      e.nodes.insert(e.nodes.end(), hardSwish.begin(), hardSwish.end());
      e.result = hardSwish.back()->output(0);
      return e;
    }
    Node *sigmoid = nullptr, *mul = nullptr;
    for (const Use &use : current->uses()) {
      if (passes::isOnnxOp(use.user, "Sigmoid")) sigmoid = use.user;
      if (passes::isOnnxOp(use.user, "Mul")) mul = use.user;
    }
    if (sigmoid && mul && passes::singleUser(graph, sigmoid->output(0)) == mul &&
        (mul->input(0) == current || mul->input(1) == current)) {
      e.activation = Activation{ActivationKind::Silu};
      e.nodes.push_back(sigmoid);
      e.nodes.push_back(mul);
      e.result = mul->output(0);
    }
  }
  return e;
}

std::vector<std::pair<std::string, Attribute>> epilogueAttributes(const Epilogue &e) {
  // Defaults (no activation, no parameters) are left out.
  std::vector<std::pair<std::string, Attribute>> attributes;
  if (e.activation.kind != ActivationKind::None) {
    attributes.emplace_back("activation", Attribute(std::string(e.activation.name())));
    if (std::vector<float> params = e.activation.params(); !params.empty())
      attributes.emplace_back("activation_params", Attribute(std::move(params)));
  }
  return attributes;
}

/// Whether a value the fusion replaces or drops is returned by a subgraph (which no Use records).
bool escapesToSubgraph(const Node &anchor, const Epilogue &e, const std::unordered_set<const Value *> &returned) {
  if (returned.count(anchor.output(0))) return true;
  return std::any_of(e.nodes.begin(), e.nodes.end(), [&](const Node *n) { return returned.count(n->output(0)) > 0; });
}

bool fuseConv(Model &model, Node *conv, const std::unordered_set<const Value *> &returned) {
  Graph &graph = *model.graph;
  if (!conv->input(0) || !conv->input(1)) return false;
  if (!conv->output(0)->type().isTensor() || !isFloatingPoint(conv->output(0)->type().dtype())) return false;
  std::optional<std::vector<double>> convBias;
  if (conv->input(2)) {
    if (auto constant = constantValueOf(model, *conv->input(2))) convBias = ref::toDoubles(*constant);
  }
  // A constant bias Add folds into the Conv's bias only when that one is constant too (or absent).
  const bool acceptBias = !conv->input(2) || convBias.has_value();
  Epilogue e = matchEpilogue(model, conv->output(0), /*isConv=*/true, acceptBias);
  if (e.nodes.empty() || escapesToSubgraph(*conv, e, returned)) return false;
  Value *bias = conv->input(2);
  if (e.bias) {
    std::vector<double> sum = *e.bias;
    if (convBias) {
      for (size_t c = 0; c < sum.size(); ++c) sum[c] += (*convBias)[c];
    }
    const int64_t channels = static_cast<int64_t>(sum.size());
    bias = passes::addConstant(graph, e.result->name() + "_bias",
                               ref::fromDoubles(conv->output(0)->type().dtype(), {channels}, sum));
  }
  std::vector<Value *> inputs = {conv->input(0), conv->input(1), bias};
  if (e.residual) inputs.push_back(e.residual);
  std::vector<std::pair<std::string, Attribute>> attributes = conv->attributes();
  for (auto &attr : epilogueAttributes(e)) attributes.push_back(std::move(attr));
  std::vector<Node *> pattern = e.nodes;
  pattern.push_back(conv);
  passes::replacePattern(graph, e.result, "FusedConv", "tessel", inputs, std::move(attributes), pattern);
  return true;
}

/// A Gemm as MatMul operands: A, B (transposed into a new constant when transB), bias C.
struct GemmOperands {
  Value *a = nullptr;
  Value *b = nullptr;
  Value *c = nullptr;
};

std::optional<GemmOperands> gemmOperands(Model &model, const Node &gemm) {
  if (gemm.attrFloat("alpha", 1.0f) != 1.0f || gemm.attrInt("transA", 0) != 0) return std::nullopt;
  if (gemm.input(2) && gemm.attrFloat("beta", 1.0f) != 1.0f) return std::nullopt;
  if (!gemm.input(0) || !gemm.input(1)) return std::nullopt;
  GemmOperands ops{gemm.input(0), gemm.input(1), gemm.input(2)};
  const Value *y = gemm.output(0);
  if (!y->type().isTensor() || !y->type().shape().rankKnown() || y->type().shape().rank() != 2) return std::nullopt;
  if (ops.c) {
    std::optional<std::vector<int64_t>> cSizes = passes::staticSizes(ops.c);
    const Dim &n = y->type().shape()[1];
    if (!cSizes || cSizes->size() != 1 || !n.isStatic() || (*cSizes)[0] != n.size) return std::nullopt;
  }
  if (gemm.attrInt("transB", 0) != 0) {
    std::optional<Tensor> b = passes::constantValueOf(model, *ops.b);
    if (!b || b->rank() != 2 || !isFloatingPoint(b->dtype())) return std::nullopt;
    const int64_t rows = b->size(0), cols = b->size(1);
    std::vector<double> in = ref::toDoubles(*b), out(in.size());
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t c = 0; c < cols; ++c) out[static_cast<size_t>(c * rows + r)] = in[static_cast<size_t>(r * cols + c)];
    }
    ops.b = passes::addConstant(*model.graph, ops.b->name() + "_t", ref::fromDoubles(b->dtype(), {cols, rows}, out));
  }
  return ops;
}

bool fuseMatMul(Model &model, Node *anchor, const std::unordered_set<const Value *> &returned) {
  Graph &graph = *model.graph;
  if (!anchor->input(0) || !anchor->input(1)) return false;
  const bool isGemm = passes::isOnnxOp(anchor, "Gemm");
  std::optional<GemmOperands> gemm;
  if (isGemm) {
    // Check the epilogue first so that a Gemm that will not fuse gets no transposed copy.
    if (anchor->attrInt("transB", 0) != 0 && !passes::constantValueOf(model, *anchor->input(1))) return false;
  }
  if (!anchor->output(0)->type().isTensor() || !isFloatingPoint(anchor->output(0)->type().dtype())) return false;
  Epilogue e = matchEpilogue(model, anchor->output(0), /*isConv=*/false, /*acceptBias=*/!(isGemm && anchor->input(2)));
  if (e.nodes.empty() && !(isGemm && anchor->input(2))) return false;
  if (escapesToSubgraph(*anchor, e, returned)) return false;
  if (isGemm) {
    gemm = gemmOperands(model, *anchor);
    if (!gemm) return false;
  }
  Value *a = isGemm ? gemm->a : anchor->input(0);
  Value *b = isGemm ? gemm->b : anchor->input(1);
  Value *bias = isGemm ? gemm->c : nullptr;
  if (e.bias) {
    const int64_t n = static_cast<int64_t>(e.bias->size());
    bias = passes::addConstant(graph, e.result->name() + "_bias",
                               ref::fromDoubles(anchor->output(0)->type().dtype(), {n}, *e.bias));
  }
  std::vector<Value *> inputs = {a, b};
  if (bias || e.residual) inputs.push_back(bias);
  if (e.residual) inputs.push_back(e.residual);
  std::vector<Node *> pattern = e.nodes;
  pattern.push_back(anchor);
  passes::replacePattern(graph, e.result, "FusedMatMul", "tessel", inputs, epilogueAttributes(e), pattern);
  return true;
}

/// A tessel QLinearMatMulToFloat (fuse-qdq's) takes the chain after its floats the same way: the
/// bias as input 9, the residual as input 10, the activation as attributes.
bool fuseDequantizedMatMul(Model &model, Node *anchor, const std::unordered_set<const Value *> &returned) {
  Graph &graph = *model.graph;
  if (anchor->inputs().size() > 9 || anchor->hasAttr("activation")) return false;
  Epilogue e = matchEpilogue(model, anchor->output(0), /*isConv=*/false, /*acceptBias=*/true);
  if (e.nodes.empty() || escapesToSubgraph(*anchor, e, returned)) return false;
  std::vector<Value *> inputs = anchor->inputs();
  Value *bias = nullptr;
  if (e.bias) {
    bias = passes::addConstant(graph, e.result->name() + "_bias",
                               ref::fromDoubles(DType::Float32, {int64_t(e.bias->size())}, *e.bias));
  }
  if (bias || e.residual) {
    inputs.resize(9, nullptr);
    inputs.push_back(bias);
  }
  if (e.residual) inputs.push_back(e.residual);
  std::vector<Node *> pattern = e.nodes;
  pattern.push_back(anchor);
  passes::replacePattern(graph, e.result, "QLinearMatMulToFloat", "tessel", inputs, epilogueAttributes(e), pattern);
  return true;
}

bool isDequantizedMatMul(const Node *node) { return passes::isTesselOp(node, "QLinearMatMulToFloat"); }

}  // namespace

Expected<bool> fuseEpilogues(Model &model) {
  std::vector<Node *> anchors;
  for (const auto &node : model.graph->nodes()) {
    Node *n = node.get();
    if (passes::isOnnxOp(n, "Conv") || passes::isOnnxOp(n, "MatMul") || passes::isOnnxOp(n, "Gemm") ||
        isDequantizedMatMul(n)) {
      anchors.push_back(n);
    }
  }
  const std::unordered_set<const Value *> returned = passes::valuesReturnedBySubgraphs(*model.graph);
  bool changed = false;
  for (Node *anchor : anchors) {
    const bool fused = passes::isOnnxOp(anchor, "Conv") ? fuseConv(model, anchor, returned)
                       : isDequantizedMatMul(anchor)    ? fuseDequantizedMatMul(model, anchor, returned)
                                                        : fuseMatMul(model, anchor, returned);
    if (fused) {
      passes::importTesselOpset(model);
      changed = true;
    }
  }
  if (changed) TESSEL_RETURN_IF_ERROR(model.graph->sortTopologically());
  return changed;
}

}  // namespace tessel
