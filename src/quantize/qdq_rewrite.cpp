// QDQ insertion. The plan follows quantize_static's rules for Conv, MatMul and Gemm; the rewrite
// adds each pair after the value it quantizes and points every reader at the dequantized value, so
// one pair serves all readers. Nodes are appended, then sorted once at the end.
#include "quantize/qdq_rewrite.h"

#include <algorithm>
#include <set>

#include "ops/registry.h"

namespace tessel {

namespace {

bool isF32(const Value *value) {
  return value && value->type().isTensor() && value->type().dtype() == DType::Float32;
}

bool isGraphOutput(const Graph &graph, const Value *value) {
  return std::find(graph.outputs().begin(), graph.outputs().end(), value) != graph.outputs().end();
}

/// The Relu or Clip that is the only reader of `value`, if there is one: quantize_static quantizes
/// its output instead, whose range the activation bounds (a Relu's starts at 0 and so gets the full
/// uint8 range; ReLU6's ends at 6). Quantizing saturates where the activation clips, so the
/// activation can then go (fuse-qdq drops it).
const Node *onlyReaderActivation(const Graph &graph, const Value *value) {
  if (value->uses().size() != 1 || isGraphOutput(graph, value)) return nullptr;
  const Node *user = value->uses()[0].user;
  const bool activation = user->opType() == "Relu" || user->opType() == "Clip";
  return activation && user->domain().empty() && user->input(0) == value && isF32(user->output(0)) ? user : nullptr;
}

/// The value of a constant operand: an initializer, also one a graph input lists (as models before
/// IR version 4 list every weight; quantize_static takes those as weights too), or a Constant's output.
std::optional<Tensor> constantOf(const Value &value) {
  if (value.hasInitializer()) return value.initializer();
  return constantInputValue(value);
}

/// The output-channel axis of a Conv W, MatMul B or Gemm B of rank `rank`; -1 when it has none.
int64_t weightAxisOf(const Node &node, size_t rank) {
  if (node.opType() == "Conv") return rank >= 3 ? 0 : -1;
  if (node.opType() == "Gemm") return rank == 2 ? (node.attrInt("transB", 0) ? 0 : 1) : -1;
  return rank >= 2 ? static_cast<int64_t>(rank) - 1 : -1;  // MatMul B is [..., K, N].
}

std::optional<QdqNodePlan> planNode(const Graph &graph, Node *node) {
  if (!node->domain().empty() || (node->opType() != "Conv" && node->opType() != "MatMul" && node->opType() != "Gemm"))
    return std::nullopt;
  if (!isF32(node->input(0)) || !isF32(node->input(1)) || !isF32(node->output(0))) return std::nullopt;
  QdqNodePlan plan;
  plan.node = node;
  for (size_t i : {0u, 1u}) {
    Value *input = node->input(i);
    std::optional<Tensor> constant = constantOf(*input);
    if (!constant) {
      plan.activations.push_back(input);
    } else if (i == 1) {
      plan.weight = input;
      plan.weightAxis = weightAxisOf(*node, constant->rank());
    }
    // A constant input 0 stays f32: quantize_static has no rule for it.
  }
  plan.output = node->output(0);
  if (const Node *activation = onlyReaderActivation(graph, plan.output)) plan.output = activation->output(0);
  // The bias is added at the product's scale, so it needs input 0 quantized; a non-constant bias
  // stays f32 (a uint8 activation scale is not the product's).
  Value *bias = node->opType() == "MatMul" ? nullptr : node->input(2);
  const bool inputQuantized = plan.activations.size() > 0 && plan.activations[0] == node->input(0);
  if (bias && inputQuantized && isF32(bias)) {
    std::optional<Tensor> constant = constantOf(*bias);
    if (constant && constant->rank() == 1) plan.bias = bias;
  }
  return plan;
}

/// A scale and zero point initializer pair: scalars per tensor, 1-D per axis.
struct ParamValues {
  Value *scale = nullptr;
  Value *zeroPoint = nullptr;
};

Tensor zeroPointTensor(const QuantParams &p, const std::vector<int64_t> &sizes) {
  Tensor t(p.dtype, sizes);
  for (size_t i = 0; i < p.zeroPoints.size(); ++i) {
    switch (p.dtype) {
      case DType::UInt8: t.data<uint8_t>()[i] = static_cast<uint8_t>(p.zeroPoints[i]); break;
      case DType::Int8: t.data<int8_t>()[i] = static_cast<int8_t>(p.zeroPoints[i]); break;
      default: t.data<int32_t>()[i] = p.zeroPoints[i]; break;
    }
  }
  return t;
}

/// Applies a plan node by node, remembering what it already quantized.
class Rewriter {
 public:
  Rewriter(Graph &graph, const std::map<std::string, FloatRange> &ranges, const QdqOptions &options)
      : graph_(graph), ranges_(ranges), options_(options) {}

  QuantizedNode rewrite(const QdqNodePlan &plan) {
    Node &node = *plan.node;
    const std::string name = node.name().empty() ? node.output(0)->name() : node.name();
    QuantizedNode done{name, node.opType(), {}, {}, {}, {}};
    for (Value *activation : plan.activations) done.inputs.push_back(quantizeActivation(activation));
    if (plan.weight) done.weight = quantizeWeight(node, plan.weight, plan.weightAxis);
    if (plan.bias) done.bias = quantizeBiasOf(node, plan.bias, done.inputs[0].params, weightScales(done));
    done.output = quantizeActivation(plan.output);
    return done;
  }

  /// Drops the float constants the rewrite left without readers (a graph input stays: it is part of
  /// the model's interface).
  void dropUnusedConstants() {
    for (Value *constant : replacedConstants_) {
      if (!constant->uses().empty() || isGraphOutput(graph_, constant) || constant->isGraphInput()) continue;
      if (Node *producer = constant->producer()) graph_.eraseNode(producer);  // A Constant node.
      else graph_.removeInitializer(constant);
    }
  }

 private:
  ParamValues addParams(const std::string &base, const QuantParams &p) {
    const std::vector<int64_t> sizes = p.perAxis() ? std::vector<int64_t>{static_cast<int64_t>(p.scales.size())}
                                                   : std::vector<int64_t>{};
    return {graph_.addInitializer(graph_.uniqueName(base + "_scale"), Tensor::fromVector<float>(sizes, p.scales)),
            graph_.addInitializer(graph_.uniqueName(base + "_zero_point"), zeroPointTensor(p, sizes))};
  }

  Value *addDequantize(const std::string &base, Value *quantized, const ParamValues &params, const QuantParams &p,
                       const std::string &outputName, const Type &type) {
    Node *dq = graph_.addNode("DequantizeLinear", {quantized, params.scale, params.zeroPoint}, {outputName},
                              graph_.uniqueName(base + "_DequantizeLinear"));
    if (p.perAxis()) dq->setAttr("axis", Attribute(p.axis));
    dq->output(0)->setType(type);
    return dq->output(0);
  }

  QuantizedTensor quantizeActivation(Value *value) {
    if (auto it = activations_.find(value); it != activations_.end()) return it->second;
    auto range = ranges_.find(value->name());
    TESSEL_CHECK(range != ranges_.end(), "no calibrated range for '{}'", value->name());
    const std::string base = value->name();
    const QuantParams p = activationParams(range->second, options_.symmetricActivations);
    const std::vector<Use> readers = value->uses();
    // A graph output keeps its name, so the model's interface does not change (the DequantizeLinear
    // takes it; a graph input returned as an output as it is keeps its own).
    const bool output = isGraphOutput(graph_, value) && !value->isGraphInput();
    if (output) graph_.renameValue(value, graph_.uniqueName(base + "_QuantizeLinear_Input"));
    const ParamValues params = addParams(base, p);
    Node *q = graph_.addNode("QuantizeLinear", {value, params.scale, params.zeroPoint},
                             {graph_.uniqueName(base + "_quantized")}, graph_.uniqueName(base + "_QuantizeLinear"));
    q->output(0)->setType(Type::tensor(p.dtype, value->type().shape()));
    Value *dq = addDequantize(base, q->output(0), params, p, output ? base : graph_.uniqueName(base + "_dequantized"),
                              value->type());
    for (const Use &use : readers) use.user->setInput(use.inputIndex, dq);
    for (size_t i = 0; output && i < graph_.outputs().size(); ++i)
      if (graph_.outputs()[i] == value) graph_.setOutput(i, dq);
    return activations_[value] = QuantizedTensor{base, dq->name(), p};
  }

  /// Replaces input `index` of `node` (a float constant) with DequantizeLinear(quantized).
  QuantizedTensor replaceConstant(Node &node, size_t index, const QuantizedConstant &q) {
    Value *constant = node.input(index);
    const std::string base = constant->name();
    Value *values = graph_.addInitializer(graph_.uniqueName(base + "_quantized"), q.values);
    Value *dq = addDequantize(base, values, addParams(base, q.params), q.params,
                              graph_.uniqueName(base + "_dequantized"), constant->type());
    node.setInput(index, dq);
    replacedConstants_.insert(constant);
    return {base, dq->name(), q.params};
  }

  QuantizedTensor quantizeWeight(Node &node, Value *weight, int64_t channelAxis) {
    const int64_t axis = options_.perChannel ? channelAxis : -1;
    // A weight shared by nodes that quantize it alike is quantized once.
    if (auto it = weights_.find({weight, axis}); it != weights_.end()) {
      node.setInput(1, graph_.findValue(it->second.dequantized));
      return it->second;
    }
    const QuantizedConstant q = tessel::quantizeWeight(*constantOf(*weight), axis);
    return weights_[{weight, axis}] = replaceConstant(node, 1, q);
  }

  /// The scales of input 1: the weight's, or a quantized activation's.
  static std::vector<float> weightScales(const QuantizedNode &done) {
    if (done.weight) return done.weight->params.scales;
    return done.inputs.back().params.scales;
  }

  std::optional<QuantizedTensor> quantizeBiasOf(Node &node, Value *bias, const QuantParams &input,
                                                const std::vector<float> &weightScales) {
    const Tensor value = *constantOf(*bias);
    // Per-channel weight scales need one bias element per channel (a broadcast Gemm C has fewer).
    if (weightScales.size() > 1 && static_cast<size_t>(value.numel()) != weightScales.size()) return std::nullopt;
    return replaceConstant(node, 2, tessel::quantizeBias(value, input.scales[0], weightScales));
  }

  Graph &graph_;
  const std::map<std::string, FloatRange> &ranges_;
  const QdqOptions &options_;
  std::map<const Value *, QuantizedTensor> activations_;
  std::map<std::pair<const Value *, int64_t>, QuantizedTensor> weights_;
  std::set<Value *> replacedConstants_;
};

}  // namespace

QdqPlan planQdq(const Model &model) {
  const Graph &graph = *model.graph;
  QdqPlan plan;
  std::set<std::string> seen;
  for (const auto &node : graph.nodes()) {
    std::optional<QdqNodePlan> nodePlan = planNode(graph, node.get());
    if (!nodePlan) continue;
    std::vector<Value *> tensors = nodePlan->activations;
    tensors.push_back(nodePlan->output);
    for (const Value *t : tensors)
      if (seen.insert(t->name()).second) plan.activationTensors.push_back(t->name());
    plan.nodes.push_back(std::move(*nodePlan));
  }
  return plan;
}

std::vector<QuantizedNode> applyQdq(Model &model, const QdqPlan &plan, const std::map<std::string, FloatRange> &ranges,
                                    const QdqOptions &options) {
  TESSEL_CHECK(model.opsetFor("") >= 13, "QDQ needs ai.onnx opset 13 for per-axis DequantizeLinear; the model has {}",
               model.opsetFor(""));
  Rewriter rewriter(*model.graph, ranges, options);
  std::vector<QuantizedNode> nodes;
  for (const QdqNodePlan &nodePlan : plan.nodes) nodes.push_back(rewriter.rewrite(nodePlan));
  rewriter.dropUnusedConstants();
  Status sorted = model.graph->sortTopologically();
  TESSEL_CHECK(sorted.ok(), "QDQ insertion made a cycle: {}", sorted.str());
  return nodes;
}

}  // namespace tessel
