// Conv affine folding: a forward walk over convolutions that absorbs, one at a time, the constant
// per-channel scale and shift ops reading each one's output, in double.
#include "passes/fold_conv_affine.h"

#include <cmath>
#include <optional>
#include <unordered_set>

#include "ops/reference/helpers.h"
#include "passes/channel_affine.h"
#include "passes/constant_values.h"
#include "passes/fusion_utils.h"

namespace tessel {

namespace {

using passes::constantValueOf;

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
  std::optional<passes::ChannelAffine> affine = passes::channelAffineOf(model, *next, y, channels);
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
