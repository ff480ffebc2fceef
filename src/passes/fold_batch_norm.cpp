// BatchNormalization folding: per Conv -> BatchNormalization pair, the statistics become a
// per-output-channel scale of the weights and a new bias, computed in double.
#include "passes/fold_batch_norm.h"

#include <cmath>
#include <unordered_set>

#include "ops/reference/helpers.h"
#include "passes/constant_values.h"
#include "passes/fusion_utils.h"

namespace tessel {

namespace {

using passes::constantValueOf;

bool isInferenceMode(const Model &model, const Node &bn) {
  for (size_t i = 1; i < bn.outputs().size(); ++i) {
    const Value *out = bn.output(i);
    if (out && (!out->uses().empty() || passes::isGraphOutput(*model.graph, out))) return false;
  }
  if (bn.attrInt("training_mode", 0) != 0) return false;
  if (bn.attrInt("spatial", 1) != 1) return false;
  return bn.attrInt("is_test", 1) != 0 || model.opsetFor("") >= 7;
}

/// The constant `value` as doubles when it holds `count` floating-point values.
std::optional<std::vector<double>> channelConstant(const Model &model, const Value *value, int64_t count) {
  if (!value) return std::nullopt;
  std::optional<Tensor> tensor = constantValueOf(model, *value);
  if (!tensor || !isFloatingPoint(tensor->dtype()) || tensor->numel() != count) return std::nullopt;
  return ref::toDoubles(*tensor);
}

bool foldOne(Model &model, Node *bn, const std::unordered_set<const Value *> &returned) {
  Graph &graph = *model.graph;
  if (bn->inputs().size() < 5 || !isInferenceMode(model, *bn) || returned.count(bn->output(0))) return false;
  Node *conv = passes::producerIs(bn->input(0), "Conv");
  if (!conv || !conv->input(1) || passes::singleUser(graph, conv->output(0)) != bn) return false;
  if (returned.count(conv->output(0))) return false;
  std::optional<Tensor> weight = constantValueOf(model, *conv->input(1));
  if (!weight || !isFloatingPoint(weight->dtype()) || weight->rank() < 3) return false;
  const int64_t channels = weight->size(0);
  std::vector<double> convBias(static_cast<size_t>(channels), 0.0);
  if (conv->input(2)) {
    auto bias = channelConstant(model, conv->input(2), channels);
    if (!bias) return false;
    convBias = *bias;
  }
  auto scale = channelConstant(model, bn->input(1), channels);
  auto shift = channelConstant(model, bn->input(2), channels);
  auto mean = channelConstant(model, bn->input(3), channels);
  auto var = channelConstant(model, bn->input(4), channels);
  if (!scale || !shift || !mean || !var) return false;
  const double epsilon = bn->attrFloat("epsilon", 1e-5f);
  std::vector<double> w = ref::toDoubles(*weight);
  const size_t perChannel = w.size() / static_cast<size_t>(channels);
  std::vector<double> bias(static_cast<size_t>(channels));
  for (size_t c = 0; c < static_cast<size_t>(channels); ++c) {
    const double s = (*scale)[c] / std::sqrt((*var)[c] + epsilon);
    for (size_t i = 0; i < perChannel; ++i) w[c * perChannel + i] *= s;
    bias[c] = (convBias[c] - (*mean)[c]) * s + (*shift)[c];
  }
  Value *newWeight = passes::addConstant(graph, conv->input(1)->name() + "_bn",
                                         ref::fromDoubles(weight->dtype(), weight->sizes(), w));
  Value *newBias = passes::addConstant(graph, bn->output(0)->name() + "_bias",
                                       ref::fromDoubles(weight->dtype(), {channels}, bias));
  std::vector<std::pair<std::string, Attribute>> attributes = conv->attributes();
  passes::replacePattern(graph, bn->output(0), "Conv", conv->domain(), {conv->input(0), newWeight, newBias},
                         std::move(attributes), {bn, conv});
  return true;
}

}  // namespace

Expected<bool> foldBatchNorm(Model &model) {
  std::vector<Node *> norms;
  for (const auto &node : model.graph->nodes()) {
    if (passes::isOnnxOp(node.get(), "BatchNormalization")) norms.push_back(node.get());
  }
  const std::unordered_set<const Value *> returned = passes::valuesReturnedBySubgraphs(*model.graph);
  bool changed = false;
  for (Node *bn : norms) changed = foldOne(model, bn, returned) || changed;
  if (changed) TESSEL_RETURN_IF_ERROR(model.graph->sortTopologically());
  return changed;
}

}  // namespace tessel
