// Layout assignment: a forward walk converts each eligible convolution (and each pool reading a
// converted output) to its channels-last tessel op behind a pair of boundary Transposes; a second
// walk cancels the Transpose pairs that meet between two converted nodes, so only the region's edges
// keep theirs.
#include "passes/assign_layout.h"

#include <optional>
#include <set>
#include <unordered_set>
#include <vector>

#include "ops/reference/helpers.h"

#include "passes/constant_values.h"
#include "passes/fusion_utils.h"

namespace tessel {

namespace {

using passes::isTesselOp;

const std::vector<int64_t> kToChannelsLast = {0, 2, 3, 1};
const std::vector<int64_t> kToChannelsFirst = {0, 3, 1, 2};

/// Whether `value` is an f32 tensor of known rank 4.
bool isRank4F32(const Value *value) {
  if (!value || !value->type().isTensor() || value->type().dtype() != DType::Float32) return false;
  const Shape &shape = value->type().shape();
  return shape.rankKnown() && shape.rank() == 4;
}

/// Whether `value` is a rank-4 u8 or s8 tensor (a quantized activation).
bool isRank4Quantized(const Value *value) {
  if (!value || !value->type().isTensor()) return false;
  const DType dtype = value->type().dtype();
  const Shape &shape = value->type().shape();
  return isQuantized8Bit(dtype) && shape.rankKnown() && shape.rank() == 4;
}

/// `type` (a rank-4 tensor) with its dims reordered: dim i of the result is dim perm[i] of `type`.
Type permutedType(const Type &type, const std::vector<int64_t> &perm) {
  std::vector<Dim> dims;
  for (int64_t axis : perm) dims.push_back(type.shape()[static_cast<size_t>(axis)]);
  return Type::tensor(type.dtype(), Shape(std::move(dims)));
}

/// A Transpose's perm: the attribute, or the reversal of its input's known rank (ONNX's default).
std::optional<std::vector<int64_t>> transposePerm(const Node &transpose) {
  if (transpose.hasAttr("perm")) return transpose.attrInts("perm");
  const Value *input = transpose.input(0);
  if (!input || !input->type().isTensor() || !input->type().shape().rankKnown()) return std::nullopt;
  std::vector<int64_t> perm;
  for (size_t axis = input->type().shape().rank(); axis-- > 0;) perm.push_back(static_cast<int64_t>(axis));
  return perm;
}

/// Whether applying `first`, then `second`, leaves every axis where it was.
bool composeToIdentity(const std::vector<int64_t> &first, const std::vector<int64_t> &second) {
  if (first.size() != second.size()) return false;
  const int64_t rank = static_cast<int64_t>(first.size());
  for (size_t i = 0; i < second.size(); ++i) {
    const int64_t axis = second[i];
    if (axis < 0 || axis >= rank || first[static_cast<size_t>(axis)] != static_cast<int64_t>(i)) return false;
  }
  return true;
}

/// The elementwise ops that compute the same thing on any layout of their operands, as long as
/// every operand with more than one element is laid out like the output.
bool isLayoutFreeElementwise(const Node &node) {
  static const std::set<std::string, std::less<>> kOnnx = {
      "Abs",  "Neg",   "Exp",       "Log",         "Sqrt",      "Reciprocal", "Relu", "Sigmoid", "Tanh",
      "Erf",  "Floor", "Ceil",      "Round",       "Softplus",  "Softsign",   "Elu",  "Selu",    "Celu",
      "Mish", "LeakyRelu", "HardSigmoid", "HardSwish", "ThresholdedRelu", "Add", "Sub", "Mul",  "Div",
      "Pow",  "Max",   "Min",       "PRelu",       "Clip",      "Identity"};
  if (node.outputs().size() != 1) return false;
  if (node.domain() == "tessel") return node.opType() == "FusedElementwise" || node.opType() == "Gelu";
  return (node.domain().empty() || node.domain() == "ai.onnx") && kOnnx.count(node.opType()) > 0;
}

/// A QuantizeLinear or DequantizeLinear with one scale and zero point: elementwise on any layout.
bool isPerTensorQuantization(const Node &node);

/// Whether `value` is known to hold one element (it broadcasts the same in any layout).
bool isOneElement(const Value *value) {
  std::optional<std::vector<int64_t>> sizes = passes::staticSizes(value);
  if (!sizes) return false;
  for (int64_t size : *sizes) {
    if (size != 1) return false;
  }
  return true;
}

bool isPerTensorQuantization(const Node &node) {
  if (!passes::isOnnxOp(&node, "QuantizeLinear") && !passes::isOnnxOp(&node, "DequantizeLinear")) return false;
  if (node.outputs().size() != 1 || !node.input(0) || !isOneElement(node.input(1))) return false;
  return !node.input(2) || isOneElement(node.input(2));
}

/// `tensor` (rank <= 4, broadcasting against a rank-4 NCHW value) as the rank-4 NHWC constant that
/// broadcasts the same way against its channels-last form.
Tensor toChannelsLastConstant(const Tensor &tensor) {
  std::vector<int64_t> sizes(4 - tensor.rank(), 1);
  for (size_t d = 0; d < tensor.rank(); ++d) sizes.push_back(tensor.size(d));
  const std::vector<double> in = ref::toDoubles(tensor);
  std::vector<double> out(in.size());
  const int64_t n = sizes[0], c = sizes[1], h = sizes[2], w = sizes[3];
  for (int64_t i0 = 0; i0 < n; ++i0) {
    for (int64_t i1 = 0; i1 < c; ++i1) {
      for (int64_t i2 = 0; i2 < h; ++i2) {
        for (int64_t i3 = 0; i3 < w; ++i3) {
          out[static_cast<size_t>(((i0 * h + i2) * w + i3) * c + i1)] =
              in[static_cast<size_t>(((i0 * c + i1) * h + i2) * w + i3)];
        }
      }
    }
  }
  return ref::fromDoubles(tensor.dtype(), {n, h, w, c}, out);
}

class LayoutAssigner {
 public:
  explicit LayoutAssigner(Model &model)
      : model_(model), graph_(*model.graph), returned_(passes::valuesReturnedBySubgraphs(graph_)) {}

  /// Converts what qualifies; returns whether anything was.
  bool convertAll() {
    std::vector<Node *> order;
    for (const auto &node : graph_.nodes()) order.push_back(node.get());
    bool changed = false;
    for (Node *node : order) {
      if (isConvertibleConv(*node)) {
        convertConv(node);
        changed = true;
      } else if (isConvertibleQLinearConv(*node)) {
        replaceWithChannelsLast(node, "QLinearConv", quantizedConvInputs(node));
        changed = true;
      } else if (isConvertibleQuantization(*node)) {
        replaceWithChannelsLast(node, node->opType(), quantizationInputs(node), "", /*markChannelsLast=*/false);
        changed = true;
      } else if (isConvertibleQuantizedAdd(*node)) {
        std::vector<Value *> inputs = node->inputs();
        for (size_t i : {size_t{0}, size_t{3}}) inputs[i] = transposed(inputs[i], kToChannelsLast, node->name());
        replaceWithChannelsLast(node, "QLinearAdd", inputs, "tessel", /*markChannelsLast=*/false);
        changed = true;
      } else if (isConvertiblePool(*node)) {
        convertPool(node);
        changed = true;
      } else if (isConvertibleElementwise(*node)) {
        convertElementwise(node);
        changed = true;
      } else if (isConvertibleResize(*node)) {
        convertResize(node);
        changed = true;
      } else if (isConvertibleConcat(*node)) {
        convertConcat(node);
        changed = true;
      }
    }
    return changed;
  }

  /// The Transposes this walk added, which the cleanup may remove once unread.
  const std::unordered_set<const Node *> &added() const { return added_; }

 private:
  bool outputIsReplaceable(const Node &node) const {
    const Value *y = node.output(0);
    return isRank4F32(y) && !returned_.count(y);
  }

  bool isConvertibleConv(const Node &node) const {
    const bool fused = isTesselOp(&node, "FusedConv");
    if (!fused && !passes::isOnnxOp(&node, "Conv")) return false;
    if (fused && node.attrInt("channels_last", 0) != 0) return false;
    const Value *x = node.input(0), *w = node.input(1);
    if (!isRank4F32(x) || !outputIsReplaceable(node)) return false;
    // An initializer or a Constant node's output (paddle2onnx writes weights as Constant nodes).
    const std::optional<Tensor> constantWeight = w ? passes::constantValueOf(model_, *w) : std::nullopt;
    if (!constantWeight) return false;
    const Tensor &weight = *constantWeight;
    if (weight.dtype() != DType::Float32 || weight.rank() != 4) return false;
    if (fused && node.input(3) && !isRank4F32(node.input(3))) return false;
    const int64_t group = node.attrInt("group", 1);
    if (group == 1) return true;
    // Depthwise with multiplier 1 is the only grouped form with a channels-last kernel.
    const Dim &cin = x->type().shape()[1];
    return cin.isStatic() && group == cin.size && weight.size(0) == group && weight.size(1) == 1;
  }

  /// ONNX's QLinearConv of a rank-4 activation with constant rank-4 weights, group 1 or depthwise.
  bool isConvertibleQLinearConv(const Node &node) const {
    if (!passes::isOnnxOp(&node, "QLinearConv") || node.inputs().size() < 8) return false;
    const Value *x = node.input(0), *y = node.output(0);
    if (!isRank4Quantized(x) || !isRank4Quantized(y) || returned_.count(y)) return false;
    const std::optional<Tensor> weight = node.input(3) ? passes::constantValueOf(model_, *node.input(3)) : std::nullopt;
    if (!weight || weight->rank() != 4) return false;
    const int64_t group = node.attrInt("group", 1);
    if (group == 1) return true;
    const Dim &cin = x->type().shape()[1];
    return cin.isStatic() && group == cin.size && weight->size(0) == group && weight->size(1) == 1;
  }

  std::vector<Value *> quantizedConvInputs(Node *node) {
    std::vector<Value *> inputs = node->inputs();
    inputs[0] = transposed(inputs[0], kToChannelsLast, node->name());
    return inputs;
  }

  /// A per-tensor QuantizeLinear or DequantizeLinear of a converted output.
  bool isConvertibleQuantization(const Node &node) const {
    if (!isPerTensorQuantization(node)) return false;
    const Value *x = node.input(0), *y = node.output(0);
    if (!(isRank4F32(x) || isRank4Quantized(x)) || !(isRank4F32(y) || isRank4Quantized(y)) || returned_.count(y)) {
      return false;
    }
    const Node *producer = x->producer();
    return producer && toChannelsFirst_.count(producer);
  }

  /// A tessel QLinearAdd (elementwise, one scale and zero point per operand) reading at least one
  /// converted output.
  bool isConvertibleQuantizedAdd(const Node &node) const {
    if (!isTesselOp(&node, "QLinearAdd") || node.inputs().size() != 8) return false;
    const Value *y = node.output(0);
    if (!isRank4Quantized(y) || returned_.count(y)) return false;
    bool fromRegion = false;
    for (size_t i : {size_t{0}, size_t{3}}) {
      const Value *input = node.input(i);
      if (!isRank4Quantized(input)) return false;
      const Node *producer = input->producer();
      fromRegion = fromRegion || (producer && toChannelsFirst_.count(producer));
    }
    return fromRegion;
  }

  std::vector<Value *> quantizationInputs(Node *node) {
    std::vector<Value *> inputs = node->inputs();
    inputs[0] = transposed(inputs[0], kToChannelsLast, node->name());
    return inputs;
  }

  bool isConvertiblePool(const Node &node) const {
    const bool maxPool = passes::isOnnxOp(&node, "MaxPool");
    if (!maxPool && !passes::isOnnxOp(&node, "AveragePool") && !passes::isOnnxOp(&node, "GlobalAveragePool")) {
      return false;
    }
    // MaxPool also of quantized values (the cpu target pools their bytes).
    const bool quantized = maxPool && isRank4Quantized(node.input(0)) && isRank4Quantized(node.output(0));
    if (quantized ? returned_.count(node.output(0)) != 0 : !isRank4F32(node.input(0)) || !outputIsReplaceable(node)) {
      return false;
    }
    const Node *producer = node.input(0)->producer();
    if (!producer || !toChannelsFirst_.count(producer)) return false;
    if (maxPool) {
      if (node.attrInt("storage_order", 0) != 0) return false;
      const Value *indices = node.output(1);
      if (indices && (!indices->uses().empty() || passes::isGraphOutput(graph_, indices) || returned_.count(indices))) {
        return false;
      }
    }
    return true;
  }

  /// An elementwise op reading at least one converted output, whose other operands are one-element,
  /// constant (rank <= 4), or rank-4 values that need a Transpose, no more of those than of the
  /// converted ones.
  bool isConvertibleElementwise(const Node &node) const {
    if (!isLayoutFreeElementwise(node) || !outputIsReplaceable(node)) return false;
    int fromRegion = 0, others = 0;
    for (const Value *input : node.inputs()) {
      if (!input || isOneElement(input)) continue;
      if (std::optional<Tensor> constant = passes::constantValueOf(model_, *input)) {
        if (constant->rank() > 4) return false;
        continue;
      }
      if (!isRank4F32(input)) return false;
      const Node *producer = input->producer();
      if (producer && toChannelsFirst_.count(producer)) {
        ++fromRegion;
      } else {
        ++others;
      }
    }
    return fromRegion > 0 && others <= fromRegion;
  }

  /// A Resize of a converted output by constant scales or sizes (rank 4, N and C unchanged) and no
  /// region of interest.
  bool isConvertibleResize(const Node &node) const {
    if (!passes::isOnnxOp(&node, "Resize") || !outputIsReplaceable(node) || !isRank4F32(node.input(0))) return false;
    const Node *producer = node.input(0)->producer();
    if (!producer || !toChannelsFirst_.count(producer)) return false;
    if (node.attrString("coordinate_transformation_mode", "") == "tf_crop_and_resize") return false;
    const size_t first = model_.opsetFor("") < 11 ? 1 : 2;  // scales (then sizes); roi before them.
    for (size_t i = 1; i < node.inputs().size(); ++i) {
      const Value *input = node.input(i);
      if (!input) continue;
      std::optional<Tensor> constant = passes::constantValueOf(model_, *input);
      if (!constant) return false;
      if (i < first) {
        if (constant->numel() != 0) return false;  // A roi: only tf_crop_and_resize reads it.
        continue;
      }
      if (constant->numel() == 0) continue;
      if (constant->rank() != 1 || constant->numel() != 4) return false;
      const std::vector<double> values = ref::toDoubles(*constant);
      const Shape &x = node.input(0)->type().shape();
      const bool sizes = i == 3;
      for (size_t axis : {size_t{0}, size_t{1}}) {
        const double unchanged = sizes ? (x[axis].isStatic() ? double(x[axis].size) : -1.0) : 1.0;
        if (values[axis] != unchanged) return false;
      }
    }
    return true;
  }

  /// The Resize of the channels-last input, its scales or sizes permuted like the data.
  void convertResize(Node *node) {
    std::vector<Value *> inputs = node->inputs();
    inputs[0] = transposed(inputs[0], kToChannelsLast, node->name());
    const size_t first = model_.opsetFor("") < 11 ? 1 : 2;
    for (size_t i = first; i < inputs.size(); ++i) {
      if (!inputs[i]) continue;
      const Tensor constant = *passes::constantValueOf(model_, *inputs[i]);
      if (constant.numel() == 0) continue;
      const std::vector<double> values = ref::toDoubles(constant);
      std::vector<double> permuted;
      for (int64_t axis : kToChannelsLast) permuted.push_back(values[static_cast<size_t>(axis)]);
      inputs[i] = passes::addConstant(graph_, inputs[i]->name() + "_nhwc",
                                      ref::fromDoubles(constant.dtype(), {4}, permuted));
    }
    replaceWithChannelsLast(node, "Resize", inputs, "", /*markChannelsLast=*/false);
  }

  /// A Concat along the channels of rank-4 f32 values, at least as many of them converted as not.
  bool isConvertibleConcat(const Node &node) const {
    if (!passes::isOnnxOp(&node, "Concat") || !outputIsReplaceable(node)) return false;
    const int64_t axis = node.attrInt("axis", 0);
    if (axis != 1 && axis != -3) return false;
    int fromRegion = 0, others = 0;
    for (const Value *input : node.inputs()) {
      if (!isRank4F32(input)) return false;
      const Node *producer = input->producer();
      (producer && toChannelsFirst_.count(producer) ? fromRegion : others) += 1;
    }
    return fromRegion > 0 && others <= fromRegion;
  }

  void convertConcat(Node *node) {
    std::vector<Value *> inputs = node->inputs();
    for (Value *&input : inputs) input = transposed(input, kToChannelsLast, node->name());
    Node *nhwc = replaceWithChannelsLast(node, "Concat", inputs, "", /*markChannelsLast=*/false);
    nhwc->setAttr("axis", Attribute(int64_t{3}));
  }

  /// The same op on channels-last operands: one-element ones as they are, other constants
  /// permuted, the rest through a Transpose. A FusedElementwise body's rank-4 values are retyped.
  void convertElementwise(Node *node) {
    std::vector<Value *> inputs = node->inputs();
    for (Value *&input : inputs) {
      if (!input || isOneElement(input)) continue;
      if (std::optional<Tensor> constant = passes::constantValueOf(model_, *input)) {
        input = passes::addConstant(graph_, input->name() + "_nhwc", toChannelsLastConstant(*constant));
        continue;
      }
      input = transposed(input, kToChannelsLast, node->name());
    }
    Node *nhwc = replaceWithChannelsLast(node, node->opType(), inputs, node->domain(), /*markChannelsLast=*/false);
    for (Graph *body : nhwc->subgraphs()) {
      body->setParentNode(nhwc);
      for (const auto &value : body->values()) {
        if (!value->hasInitializer() && value->type().isTensor() && value->type().shape().rankKnown() &&
            value->type().shape().rank() == 4) {
          value->setType(permutedType(value->type(), kToChannelsLast));
        }
      }
    }
  }

  void convertConv(Node *conv) {
    std::vector<Value *> inputs = conv->inputs();
    inputs[0] = transposed(inputs[0], kToChannelsLast, conv->name());
    if (inputs.size() > 3 && inputs[3]) inputs[3] = transposed(inputs[3], kToChannelsLast, conv->name());
    // A Conv's attributes are FusedConv's too, with no activation.
    replaceWithChannelsLast(conv, "FusedConv", inputs);
  }

  void convertPool(Node *pool) {
    replaceWithChannelsLast(pool, pool->opType(), {transposed(pool->input(0), kToChannelsLast, pool->name())});
  }

  /// Replaces `node` with `opType` of `domain` reading `inputs` (with channels_last = 1 when
  /// `markChannelsLast`), whose NHWC output a new Transpose turns back into `node`'s output value
  /// (its name, type and readers). Returns the new node.
  Node *replaceWithChannelsLast(Node *node, const std::string &opType, const std::vector<Value *> &inputs,
                                const std::string &domain = "tessel", bool markChannelsLast = true) {
    // `opType` and `domain` may be `node`'s own strings, which erasing it below frees.
    const bool tesselOp = domain == "tessel";
    Value *y = node->output(0);
    Node *nhwc = graph_.addNode(opType, inputs, {graph_.uniqueName(y->name() + "_nhwc")}, node->name(), domain);
    for (const auto &[name, value] : node->attributes()) nhwc->setAttr(name, value);
    if (markChannelsLast) nhwc->setAttr("channels_last", Attribute(int64_t{1}));
    nhwc->setSourceIndex(node->sourceIndex());
    nhwc->output(0)->setType(permutedType(y->type(), kToChannelsLast));
    // The new output takes y's name now; y keeps it only until its producer is erased below.
    Node *back = graph_.addNode("Transpose", {nhwc->output(0)}, {y->name()}, derivedName(node->name(), "to_nchw"));
    back->setAttr("perm", Attribute(kToChannelsFirst));
    back->output(0)->setType(y->type());
    graph_.replaceAllUsesWith(y, back->output(0));
    graph_.eraseNode(node);
    toChannelsFirst_.insert(back);
    added_.insert(back);
    if (tesselOp) passes::importTesselOpset(model_);
    return nhwc;
  }

  /// `value` transposed by `perm`: the output of a Transpose that already does it, or of a new one.
  Value *transposed(Value *value, const std::vector<int64_t> &perm, const std::string &readerName) {
    for (const Use &use : value->uses()) {
      const Node *user = use.user;
      if (user->graph() != &graph_ || !passes::isOnnxOp(user, "Transpose") || use.inputIndex != 0) continue;
      if (transposePerm(*user) == perm) return user->output(0);
    }
    Node *transpose = graph_.addNode("Transpose", {value}, {graph_.uniqueName(value->name() + "_nhwc")},
                                     derivedName(readerName, "to_nhwc"));
    transpose->setAttr("perm", Attribute(perm));
    transpose->output(0)->setType(permutedType(value->type(), perm));
    added_.insert(transpose);
    return transpose->output(0);
  }

  static std::string derivedName(const std::string &nodeName, const std::string &suffix) {
    return nodeName.empty() ? "" : nodeName + "/" + suffix;
  }

  Model &model_;
  Graph &graph_;
  const std::unordered_set<const Value *> returned_;
  std::unordered_set<const Node *> toChannelsFirst_;  // The NHWC -> NCHW Transposes added.
  std::unordered_set<const Node *> added_;
};

/// Moves the readers of each Transpose that undoes the Transpose producing its input to that
/// Transpose's input, then erases the Transposes left unread among those and `added`. Precondition:
/// the graph is in topological order.
bool cancelTransposePairs(Graph &graph, const std::unordered_set<const Node *> &added) {
  const std::unordered_set<const Value *> returned = passes::valuesReturnedBySubgraphs(graph);
  std::vector<Node *> transposes;
  for (const auto &node : graph.nodes()) {
    if (passes::isOnnxOp(node.get(), "Transpose")) transposes.push_back(node.get());
  }
  bool changed = false;
  std::unordered_set<const Node *> candidates = added;
  for (Node *second : transposes) {
    Node *first = passes::producerIs(second->input(0), "Transpose");
    if (!first || !first->input(0) || first->graph() != &graph) continue;
    Value *out = second->output(0);
    if (out->uses().empty() || passes::isGraphOutput(graph, out) || returned.count(out)) continue;
    std::optional<std::vector<int64_t>> firstPerm = transposePerm(*first), secondPerm = transposePerm(*second);
    if (!firstPerm || !secondPerm || !composeToIdentity(*firstPerm, *secondPerm)) continue;
    graph.replaceAllUsesWith(out, first->input(0));
    candidates.insert(second);
    candidates.insert(first);
    changed = true;
  }
  // From the back, so that a Transpose whose only reader was another one is unread by then.
  for (auto it = transposes.rbegin(); it != transposes.rend(); ++it) {
    Node *transpose = *it;
    const Value *out = transpose->output(0);
    if (!candidates.count(transpose) || !out->uses().empty() || passes::isGraphOutput(graph, out) ||
        returned.count(out)) {
      continue;
    }
    graph.eraseNode(transpose);
    changed = true;
  }
  return changed;
}

}  // namespace

Expected<bool> assignLayout(Model &model) {
  LayoutAssigner assigner(model);
  const bool converted = assigner.convertAll();
  if (converted) TESSEL_RETURN_IF_ERROR(model.graph->sortTopologically());
  const bool cancelled = cancelTransposePairs(*model.graph, assigner.added());
  return converted || cancelled;
}

}  // namespace tessel
