// Per-channel affine maps of single ops, for the conv folding passes (see channel_affine.h).
#include "passes/channel_affine.h"

#include <cmath>

#include "ops/reference/helpers.h"
#include "passes/constant_values.h"
#include "passes/fusion_utils.h"

namespace tessel::passes {

namespace {

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

}  // namespace

std::optional<ChannelAffine> channelAffineOf(const Model &model, const Node &node, const Value *y, int64_t channels) {
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

}  // namespace tessel::passes
