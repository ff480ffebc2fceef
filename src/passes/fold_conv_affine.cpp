// Conv affine folding: a forward walk over convolutions that absorbs, one at a time, the constant
// per-channel scale and shift ops reading each one's output, in double.
#include "passes/fold_conv_affine.h"

#include <cmath>
#include <optional>
#include <unordered_set>

#include "ops/reference/helpers.h"
#include "passes/constant_values.h"
#include "passes/fusion_utils.h"

namespace tessel {

namespace {

using passes::constantValueOf;

/// y -> y * scale[c] + shift[c] per output channel.
struct ChannelAffine {
  std::vector<double> scale, shift;
};

/// `constant` as one value per channel, when it broadcasts along axis 1 of a rank-`rank` Y only.
std::optional<std::vector<double>> perChannel(const Tensor &constant, size_t rank, int64_t channels) {
  if (!isFloatingPoint(constant.dtype()) || constant.rank() > rank) return std::nullopt;
  const size_t offset = rank - constant.rank();
  for (size_t d = 0; d < constant.rank(); ++d) {
    if (d + offset != 1 && constant.size(d) != 1) return std::nullopt;
  }
  std::vector<double> values = ref::toDoubles(constant);
  if (values.size() == 1) return std::vector<double>(static_cast<size_t>(channels), values[0]);
  if (static_cast<int64_t>(values.size()) != channels) return std::nullopt;
  return values;
}

bool isInferenceBatchNorm(const Model &model, const Node &bn) {
  for (size_t i = 1; i < bn.outputs().size(); ++i) {
    const Value *out = bn.output(i);
    if (out && (!out->uses().empty() || passes::isGraphOutput(*model.graph, out))) return false;
  }
  return bn.inputs().size() >= 5 && bn.attrInt("training_mode", 0) == 0 && bn.attrInt("spatial", 1) == 1 &&
         (bn.attrInt("is_test", 1) != 0 || model.opsetFor("") >= 7);
}

/// The affine map `node` applies to `y` (its conv's output), or nullopt when it is not one.
std::optional<ChannelAffine> affineOf(const Model &model, const Node &node, const Value *y, int64_t channels) {
  const size_t rank = y->type().shape().rank();
  const size_t count = static_cast<size_t>(channels);
  if (passes::isOnnxOp(&node, "BatchNormalization")) {
    if (node.input(0) != y || !isInferenceBatchNorm(model, node)) return std::nullopt;
    std::vector<std::vector<double>> params;
    for (size_t i = 1; i <= 4; ++i) {
      std::optional<Tensor> t = node.input(i) ? constantValueOf(model, *node.input(i)) : std::nullopt;
      if (!t || !isFloatingPoint(t->dtype()) || t->numel() != channels) return std::nullopt;
      params.push_back(ref::toDoubles(*t));
    }
    const double epsilon = node.attrFloat("epsilon", 1e-5f);
    ChannelAffine a{std::vector<double>(count), std::vector<double>(count)};
    for (size_t c = 0; c < count; ++c) {
      a.scale[c] = params[0][c] / std::sqrt(params[3][c] + epsilon);
      a.shift[c] = params[1][c] - params[2][c] * a.scale[c];
    }
    return a;
  }
  const bool mul = passes::isOnnxOp(&node, "Mul"), add = passes::isOnnxOp(&node, "Add");
  const bool sub = passes::isOnnxOp(&node, "Sub"), div = passes::isOnnxOp(&node, "Div");
  if ((!mul && !add && !sub && !div) || node.inputs().size() != 2 || node.input(0) == node.input(1)) {
    return std::nullopt;
  }
  const int yIndex = node.input(0) == y ? 0 : 1;
  if ((sub || div) && yIndex != 0) return std::nullopt;
  const Value *other = node.input(1 - yIndex);
  std::optional<Tensor> constant = other ? constantValueOf(model, *other) : std::nullopt;
  if (!constant) return std::nullopt;
  std::optional<std::vector<double>> values = perChannel(*constant, rank, channels);
  if (!values) return std::nullopt;
  ChannelAffine a{std::vector<double>(count, 1.0), std::vector<double>(count, 0.0)};
  for (size_t c = 0; c < count; ++c) {
    const double v = (*values)[c];
    if (mul) a.scale[c] = v;
    if (div && v == 0) return std::nullopt;  // The division's infinities stay where they are.
    if (div) a.scale[c] = 1.0 / v;
    if (add) a.shift[c] = v;
    if (sub) a.shift[c] = -v;
  }
  return a;
}

/// Folds the one reader of `conv`'s output into it; returns the new conv, or null.
Node *foldNext(Model &model, Node *conv, const std::unordered_set<const Value *> &returned) {
  Graph &graph = *model.graph;
  const bool transposed = passes::isOnnxOp(conv, "ConvTranspose");
  Value *y = conv->output(0);
  if (!conv->input(0) || !conv->input(1) || returned.count(y)) return nullptr;
  const Type &type = y->type();
  if (!type.isTensor() || !isFloatingPoint(type.dtype()) || !type.shape().rankKnown() || type.shape().rank() < 3) {
    return nullptr;
  }
  Node *next = passes::singleUser(graph, y);
  if (!next || returned.count(next->output(0)) || !passes::sameShape(next->output(0), y)) return nullptr;
  std::optional<Tensor> weight = constantValueOf(model, *conv->input(1));
  if (!weight || weight->dtype() != type.dtype() || weight->rank() < 3) return nullptr;
  const int64_t group = conv->attrInt("group", 1);
  // Conv W is [M, C/g, k...]; ConvTranspose W is [C, M/g, k...].
  const int64_t channels = transposed ? weight->size(1) * group : weight->size(0);
  if (group <= 0 || !type.shape()[1].isStatic() || type.shape()[1].size != channels) return nullptr;
  std::optional<ChannelAffine> affine = affineOf(model, *next, y, channels);
  if (!affine) return nullptr;
  std::vector<double> bias(static_cast<size_t>(channels), 0.0);
  if (conv->input(2)) {
    std::optional<Tensor> b = constantValueOf(model, *conv->input(2));
    if (!b || b->numel() != channels || !isFloatingPoint(b->dtype())) return nullptr;
    bias = ref::toDoubles(*b);
  }
  std::vector<double> w = ref::toDoubles(*weight);
  const int64_t taps = weight->numel() / (weight->size(0) * weight->size(1));
  for (int64_t i = 0; i < static_cast<int64_t>(w.size()); ++i) {
    int64_t channel = i / (weight->size(1) * taps);  // Conv: the filter.
    if (transposed) {
      const int64_t perGroupIn = weight->size(0) / group;
      channel = (channel / perGroupIn) * weight->size(1) + (i / taps) % weight->size(1);
    }
    w[static_cast<size_t>(i)] *= affine->scale[static_cast<size_t>(channel)];
  }
  for (size_t c = 0; c < bias.size(); ++c) bias[c] = bias[c] * affine->scale[c] + affine->shift[c];
  Value *newWeight = passes::addConstant(graph, conv->input(1)->name() + "_scaled",
                                         ref::fromDoubles(weight->dtype(), weight->sizes(), w));
  Value *newBias = passes::addConstant(graph, next->output(0)->name() + "_bias",
                                       ref::fromDoubles(weight->dtype(), {channels}, bias));
  return passes::replacePattern(graph, next->output(0), conv->opType(), conv->domain(),
                                {conv->input(0), newWeight, newBias}, conv->attributes(), {next, conv});
}

}  // namespace

Expected<bool> foldConvAffine(Model &model) {
  std::vector<Node *> convs;
  for (const auto &node : model.graph->nodes()) {
    if (passes::isOnnxOp(node.get(), "Conv") || passes::isOnnxOp(node.get(), "ConvTranspose")) {
      convs.push_back(node.get());
    }
  }
  const std::unordered_set<const Value *> returned = passes::valuesReturnedBySubgraphs(*model.graph);
  bool changed = false;
  for (Node *conv : convs) {
    while (Node *folded = foldNext(model, conv, returned)) {
      conv = folded;
      changed = true;
    }
  }
  if (changed) TESSEL_RETURN_IF_ERROR(model.graph->sortTopologically());
  return changed;
}

}  // namespace tessel
