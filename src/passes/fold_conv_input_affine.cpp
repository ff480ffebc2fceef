// Input-side conv affine folding: per conv that reads no padding, the constant per-channel scale
// and shift ops producing its input fold into its weights and bias, one at a time, in double.
#include "passes/fold_conv_input_affine.h"

#include <unordered_set>

#include "ops/reference/helpers.h"
#include "passes/channel_affine.h"
#include "passes/constant_values.h"
#include "passes/fusion_utils.h"

namespace tessel {

namespace {

/// Whether every tap of `conv` reads an input element: no padding, explicit or automatic.
bool readsNoPadding(const Node &conv) {
  const std::string autoPad = conv.attrString("auto_pad", "NOTSET");
  if (autoPad != "NOTSET" && autoPad != "VALID") return false;
  for (int64_t pad : conv.attrInts("pads")) {
    if (pad != 0) return false;
  }
  return true;
}

/// Folds the one op producing `conv`'s input, when it is a per-input-channel affine of a value
/// read only there, into the weights and bias; returns the new conv, or null. Only for a Conv
/// that reads no padding: a shifted input would otherwise differ from the zeros padded in.
Node *foldPrevious(Model &model, Node *conv, const std::unordered_set<const Value *> &returned) {
  Graph &graph = *model.graph;
  if (!readsNoPadding(*conv) || !conv->input(0) || !conv->input(1)) return nullptr;
  Value *x = conv->input(0);
  Node *prev = x->producer();
  if (!prev || prev->graph() != &graph || passes::singleUser(graph, x) != conv || returned.count(x)) return nullptr;
  const Type &type = x->type();
  if (!type.isTensor() || !type.shape().rankKnown() || type.shape().rank() < 3 || !type.shape()[1].isStatic()) {
    return nullptr;
  }
  // The affine's data operand: the input that is not the constant.
  Value *data = nullptr;
  for (Value *input : prev->inputs()) {
    if (input && !passes::constantValueOf(model, *input)) data = input;
  }
  if (!data || !passes::sameShape(data, x)) return nullptr;
  const int64_t inChannels = type.shape()[1].size;
  std::optional<passes::ChannelAffine> affine = passes::channelAffineOf(model, *prev, data, inChannels);
  std::optional<Tensor> weight = passes::constantValueOf(model, *conv->input(1));
  if (!affine || !weight || weight->dtype() != type.dtype() || weight->rank() < 3) return nullptr;
  const int64_t outChannels = weight->size(0), perGroup = weight->size(1);
  const int64_t group = conv->attrInt("group", 1);
  if (group <= 0 || perGroup * group != inChannels || outChannels % group != 0) return nullptr;
  std::vector<double> bias(static_cast<size_t>(outChannels), 0.0);
  if (conv->input(2)) {
    std::optional<Tensor> b = passes::constantValueOf(model, *conv->input(2));
    if (!b || b->numel() != outChannels || !isFloatingPoint(b->dtype())) return nullptr;
    bias = ref::toDoubles(*b);
  }
  // W'[m, c, k] = W[m, c, k] * scale[c'], B'[m] = B[m] + sum over c, k of W[m, c, k] * shift[c'],
  // with c' = group(m) * C/g + c.
  std::vector<double> w = ref::toDoubles(*weight);
  const int64_t taps = weight->numel() / (outChannels * perGroup);
  for (int64_t m = 0; m < outChannels; ++m) {
    const int64_t firstChannel = m / (outChannels / group) * perGroup;
    for (int64_t c = 0; c < perGroup; ++c) {
      const size_t channel = static_cast<size_t>(firstChannel + c);
      for (int64_t k = 0; k < taps; ++k) {
        double &v = w[static_cast<size_t>((m * perGroup + c) * taps + k)];
        bias[static_cast<size_t>(m)] += v * affine->shift[channel];
        v *= affine->scale[channel];
      }
    }
  }
  Value *newWeight = passes::addConstant(graph, conv->input(1)->name() + "_scaled",
                                         ref::fromDoubles(weight->dtype(), weight->sizes(), w));
  Value *newBias = passes::addConstant(graph, conv->output(0)->name() + "_bias",
                                       ref::fromDoubles(weight->dtype(), {outChannels}, bias));
  std::vector<Value *> inputs = {data, newWeight, newBias};
  if (conv->input(3)) inputs.push_back(conv->input(3));  // FusedConv's residual.
  return passes::replacePattern(graph, conv->output(0), conv->opType(), conv->domain(), inputs, conv->attributes(),
                                {conv, prev});
}

}  // namespace

Expected<bool> foldConvInputAffine(Model &model) {
  std::vector<Node *> convs;
  for (const auto &node : model.graph->nodes()) {
    Node *n = node.get();
    const bool fused = n->domain() == "tessel" && n->opType() == "FusedConv" && n->attrInt("channels_last", 0) == 0;
    if (passes::isOnnxOp(n, "Conv") || fused) convs.push_back(n);
  }
  const std::unordered_set<const Value *> returned = passes::valuesReturnedBySubgraphs(*model.graph);
  bool changed = false;
  for (Node *conv : convs) {
    while (Node *folded = foldPrevious(model, conv, returned)) {
      conv = folded;
      changed = true;
    }
  }
  if (changed) TESSEL_RETURN_IF_ERROR(model.graph->sortTopologically());
  return changed;
}

}  // namespace tessel
