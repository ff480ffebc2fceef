// Layer-norm and RMS-norm recognition, anchored at a ReduceMean: the mean of x (layer norm) or of
// x^2 (RMS norm); each follows the single path to the normalized, scaled value forward from it.
#include "passes/recognize_layer_norm.h"

#include <unordered_set>

#include "ops/reference/helpers.h"
#include "passes/constant_values.h"
#include "passes/fusion_utils.h"

namespace tessel {

namespace {

using passes::isOnnxOp;
using passes::producerIs;

/// Whether `reduce` is a ReduceMean over the last axis of its rank-known input, keeping dims.
bool isLastAxisMean(const Model &model, const Node *reduce) {
  if (!isOnnxOp(reduce, "ReduceMean") || reduce->attrInt("keepdims", 1) != 1) return false;
  const Value *x = reduce->input(0);
  if (!x || !x->type().isTensor() || !x->type().shape().rankKnown() || x->type().shape().rank() == 0) return false;
  const int64_t rank = static_cast<int64_t>(x->type().shape().rank());
  auto axes = passes::reduceAxes(model, *reduce, rank);
  return axes && axes->size() == 1 && (*axes)[0] == rank - 1;
}

/// The reader of `value` that is the ONNX op `op`; nullptr when there is none or several.
Node *userOf(const Value *value, const char *op) {
  Node *found = nullptr;
  for (const Use &use : value->uses()) {
    if (!isOnnxOp(use.user, op)) continue;
    if (found && found != use.user) return nullptr;
    found = use.user;
  }
  return found;
}

/// The operand of binary `node` other than `value`.
Value *otherOperand(const Node *node, const Value *value) {
  if (node->inputs().size() != 2) return nullptr;
  return node->input(0) == value ? node->input(1) : node->input(1) == value ? node->input(0) : nullptr;
}

/// Whether `param` is 1-D with `size` elements (a scale or bias per normalized element).
bool isLastDimVector(const Value *param, int64_t size) {
  auto sizes = passes::staticSizes(param);
  return sizes && sizes->size() == 1 && (*sizes)[0] == size;
}

/// Extends `pattern` by the division of `numerator` by the root `sqrt` computes: numerator / root,
/// numerator * Reciprocal(root) or numerator * (1 / root); returns the quotient, or nullptr.
Value *takeDivision(const Model &model, const Node *sqrt, const Value *numerator, std::vector<Node *> &pattern) {
  const Graph &graph = *model.graph;
  Node *normalize = passes::singleUser(graph, sqrt->output(0));
  const bool divides = isOnnxOp(normalize, "Div") && normalize->input(1) == sqrt->output(0);
  if (divides && normalize->input(0) == numerator) {
    pattern.push_back(normalize);
    return normalize->output(0);
  }
  if (!isOnnxOp(normalize, "Reciprocal") && !(divides && passes::isScalarConstant(model, normalize->input(0), 1.0))) {
    return nullptr;
  }
  Node *mul = passes::singleUser(graph, normalize->output(0));
  if (!isOnnxOp(mul, "Mul") || otherOperand(mul, normalize->output(0)) != numerator) return nullptr;
  pattern.insert(pattern.end(), {normalize, mul});
  return mul->output(0);
}

/// Extends `pattern` by a Mul or Add (`op`) of `*result` with a vector of the last dim's `size`;
/// returns that vector (and moves `*result` past the node), or nullptr when there is none.
Value *takeAffine(Graph &graph, const char *op, int64_t size, Value **result, std::vector<Node *> &pattern) {
  Node *node = passes::singleUser(graph, *result);
  if (!isOnnxOp(node, op)) return nullptr;
  Value *candidate = otherOperand(node, *result);
  if (!candidate || !isLastDimVector(candidate, size)) return nullptr;
  pattern.push_back(node);
  *result = node->output(0);
  return candidate;
}

/// Replaces `pattern` (ending at `result`) by the tessel normalization `op` of x with `scale`
/// (ones when null) and `bias` (when not null), if only the pattern reads its inner values.
bool replaceNormalization(Model &model, const char *op, Value *x, Value *scale, Value *bias, Value *result,
                          double epsilon, const std::vector<Node *> &pattern,
                          const std::unordered_set<const Value *> &returned) {
  Graph &graph = *model.graph;
  const std::unordered_set<const Node *> members(pattern.begin(), pattern.end());
  for (const Node *node : pattern) {
    if (node->output(0) != result && !passes::usedOnlyBy(graph, node->output(0), members, returned)) return false;
  }
  if (returned.count(result)) return false;  // A subgraph's return would keep the replaced value.
  const DType dtype = x->type().dtype();
  if (!isFloatingPoint(dtype)) return false;
  if (!scale) {
    const int64_t size = x->type().shape().dims().back().size;
    const std::vector<double> ones(static_cast<size_t>(size), 1.0);
    scale = passes::addConstant(graph, result->name() + "_scale", ref::fromDoubles(dtype, {size}, ones));
  }
  std::vector<Value *> inputs = {x, scale};
  if (bias) inputs.push_back(bias);
  passes::replacePattern(graph, result, op, "tessel", inputs,
                         {{"axis", Attribute(int64_t{-1})}, {"epsilon", Attribute(static_cast<float>(epsilon))}},
                         pattern);
  return true;
}

bool recognizeDecomposed(Model &model, Node *mean, const std::unordered_set<const Value *> &returned) {
  Graph &graph = *model.graph;
  if (!isLastAxisMean(model, mean)) return false;
  Value *x = mean->input(0);
  const Dim &last = x->type().shape().dims().back();
  if (!last.isStatic()) return false;
  Node *sub = passes::singleUser(graph, mean->output(0));
  if (!isOnnxOp(sub, "Sub") || sub->input(0) != x || sub->input(1) != mean->output(0)) return false;
  Value *d = sub->output(0);
  std::vector<Node *> pattern = {mean, sub};
  // Variance: ReduceMean(Pow(d, 2)) or ReduceMean(d * d).
  Node *square = userOf(d, "Pow");
  if (square && !passes::isScalarConstant(model, square->input(1), 2.0)) return false;
  if (!square) {
    for (const Use &use : d->uses()) {
      if (isOnnxOp(use.user, "Mul") && use.user->input(0) == d && use.user->input(1) == d) square = use.user;
    }
  }
  if (!square || square->input(0) != d) return false;
  Node *varMean = passes::singleUser(graph, square->output(0));
  if (!isLastAxisMean(model, varMean)) return false;
  Node *addEps = passes::singleUser(graph, varMean->output(0));
  if (!isOnnxOp(addEps, "Add")) return false;
  std::optional<double> epsilon = passes::scalarConstant(model, otherOperand(addEps, varMean->output(0)));
  if (!epsilon) return false;
  Node *sqrt = passes::singleUser(graph, addEps->output(0));
  if (!isOnnxOp(sqrt, "Sqrt")) return false;
  pattern.insert(pattern.end(), {square, varMean, addEps, sqrt});
  // Normalize: d / std, d * Reciprocal(std) or d * (1 / std).
  Value *result = takeDivision(model, sqrt, d, pattern);
  if (!result) return false;
  // Affine: Mul by a scale, Add of a bias.
  Value *scale = takeAffine(graph, "Mul", last.size, &result, pattern);
  Value *bias = takeAffine(graph, "Add", last.size, &result, pattern);
  return replaceNormalization(model, "LayerNormalization", x, scale, bias, result, *epsilon, pattern, returned);
}

/// RMS normalization, anchored at the ReduceMean of x^2 (Pow(x, 2) or x * x) over the last axis:
/// x / Sqrt(mean + eps), x * Reciprocal(Sqrt(...)) or x * (1 / Sqrt(...)), then an optional Mul by
/// a scale (a missing one becomes ones).
bool recognizeRms(Model &model, Node *mean, const std::unordered_set<const Value *> &returned) {
  Graph &graph = *model.graph;
  if (!isLastAxisMean(model, mean)) return false;
  Node *square = mean->input(0)->producer();
  if (isOnnxOp(square, "Pow")) {
    if (!passes::isScalarConstant(model, square->input(1), 2.0)) return false;
  } else if (!isOnnxOp(square, "Mul") || square->input(0) != square->input(1)) {
    return false;
  }
  Value *x = square->input(0);
  const Dim &last = x->type().shape().dims().back();
  if (!last.isStatic()) return false;
  Node *addEps = passes::singleUser(graph, mean->output(0));
  if (!isOnnxOp(addEps, "Add")) return false;
  std::optional<double> epsilon = passes::scalarConstant(model, otherOperand(addEps, mean->output(0)));
  if (!epsilon) return false;
  Node *sqrt = passes::singleUser(graph, addEps->output(0));
  if (!isOnnxOp(sqrt, "Sqrt")) return false;
  std::vector<Node *> pattern = {square, mean, addEps, sqrt};
  Value *result = takeDivision(model, sqrt, x, pattern);
  if (!result) return false;
  Value *scale = takeAffine(graph, "Mul", last.size, &result, pattern);
  return replaceNormalization(model, "RMSNormalization", x, scale, nullptr, result, *epsilon, pattern, returned);
}

bool convertOnnxLayerNorm(Model &model, Node *norm, const std::unordered_set<const Value *> &returned) {
  Graph &graph = *model.graph;
  if (returned.count(norm->output(0))) return false;
  for (size_t i = 1; i < norm->outputs().size(); ++i) {
    const Value *out = norm->output(i);
    if (out && (!out->uses().empty() || passes::isGraphOutput(graph, out))) return false;
  }
  if (norm->attrInt("stash_type", 1) != static_cast<int64_t>(DType::Float32)) return false;
  if (!norm->input(0) || !norm->input(1) || !norm->output(0)) return false;
  std::vector<Value *> inputs = {norm->input(0), norm->input(1)};
  if (norm->input(2)) inputs.push_back(norm->input(2));
  passes::replacePattern(graph, norm->output(0), "LayerNormalization", "tessel", inputs,
                         {{"axis", Attribute(norm->attrInt("axis", -1))},
                          {"epsilon", Attribute(norm->attrFloat("epsilon", 1e-5f))}},
                         {norm});
  return true;
}

}  // namespace

Expected<bool> recognizeLayerNorm(Model &model) {
  const std::unordered_set<const Value *> returned = passes::valuesReturnedBySubgraphs(*model.graph);
  bool changed = false;
  // A match erases ReduceMeans that later positions would visit, so the walk restarts after each.
  for (bool fired = true; fired;) {
    fired = false;
    for (const auto &node : model.graph->nodes()) {
      Node *anchor = node.get();
      if (isOnnxOp(anchor, "LayerNormalization")) {
        fired = convertOnnxLayerNorm(model, anchor, returned);
      } else if (isOnnxOp(anchor, "ReduceMean")) {
        fired = recognizeDecomposed(model, anchor, returned) || recognizeRms(model, anchor, returned);
      }
      if (fired) break;
    }
    if (!fired) break;
    passes::importTesselOpset(model);
    changed = true;
  }
  if (changed) TESSEL_RETURN_IF_ERROR(model.graph->sortTopologically());
  return changed;
}

}  // namespace tessel
