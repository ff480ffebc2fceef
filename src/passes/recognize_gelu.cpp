// GELU recognition: anchored at each Erf or Tanh, walk back to x through the argument and forward
// through (1 + .) and the two multiplies, collecting the matched nodes.
#include "passes/recognize_gelu.h"

#include <cmath>
#include <unordered_set>

#include "passes/constant_values.h"
#include "passes/fusion_utils.h"

namespace tessel {

namespace {

using passes::isScalarConstant;
using passes::producerIs;

constexpr double kSqrt2 = 1.4142135623730951;
constexpr double kSqrt2OverPi = 0.7978845608028654;

/// The operand of binary `node` that is not the scalar constant `constant`, or nullptr.
Value *otherThanConstant(const Model &model, const Node *node, double constant) {
  if (!node || node->inputs().size() != 2) return nullptr;
  if (isScalarConstant(model, node->input(1), constant)) return node->input(0);
  if (isScalarConstant(model, node->input(0), constant)) return node->input(1);
  return nullptr;
}

/// The operand of binary `node` other than `value`, or nullptr when `value` is not one of them.
Value *otherOperand(const Node *node, const Value *value) {
  if (!node || node->inputs().size() != 2) return nullptr;
  if (node->input(0) == value) return node->input(1);
  if (node->input(1) == value) return node->input(0);
  return nullptr;
}

/// x from erf's argument x / sqrt2 or x * (1 / sqrt2).
Value *erfArgument(const Model &model, Value *argument, std::vector<Node *> &pattern) {
  if (Node *div = producerIs(argument, "Div"); div && isScalarConstant(model, div->input(1), kSqrt2)) {
    pattern.push_back(div);
    return div->input(0);
  }
  if (Node *mul = producerIs(argument, "Mul")) {
    if (Value *x = otherThanConstant(model, mul, 1.0 / kSqrt2)) {
      pattern.push_back(mul);
      return x;
    }
  }
  return nullptr;
}

/// Whether `cube` is x^3 as Pow(x, 3), x * x * x or x * (x * x).
bool isCube(const Model &model, Value *cube, Value *x, std::vector<Node *> &pattern) {
  if (Node *pow = producerIs(cube, "Pow"); pow && pow->input(0) == x && isScalarConstant(model, pow->input(1), 3.0)) {
    pattern.push_back(pow);
    return true;
  }
  Node *outer = producerIs(cube, "Mul");
  if (!outer) return false;
  Value *square = otherOperand(outer, x);
  Node *inner = producerIs(square, "Mul");
  if (!inner || inner->input(0) != x || inner->input(1) != x) return false;
  pattern.push_back(outer);
  pattern.push_back(inner);
  return true;
}

/// x from tanh's argument sqrt(2/pi) * (x + 0.044715 * x^3).
Value *tanhArgument(const Model &model, Value *argument, std::vector<Node *> &pattern) {
  Node *scale = producerIs(argument, "Mul");
  Value *inner = otherThanConstant(model, scale, kSqrt2OverPi);
  Node *add = producerIs(inner, "Add");
  if (!add) return nullptr;
  for (int side = 0; side < 2; ++side) {
    Value *x = add->input(side);
    Node *cubeScale = producerIs(add->input(1 - side), "Mul");
    Value *cube = otherThanConstant(model, cubeScale, 0.044715);
    std::vector<Node *> cubeNodes;
    if (!cube || !isCube(model, cube, x, cubeNodes)) continue;
    pattern.insert(pattern.end(), {scale, add, cubeScale});
    pattern.insert(pattern.end(), cubeNodes.begin(), cubeNodes.end());
    return x;
  }
  return nullptr;
}

/// From t = 1 + f(x): the value of x * 0.5 * t, whichever way the multiplies group.
Value *halfProduct(const Model &model, const Graph &graph, Value *t, Value *x, std::vector<Node *> &pattern) {
  Node *first = passes::singleUser(graph, t);
  if (!passes::isOnnxOp(first, "Mul")) return nullptr;
  Value *other = otherOperand(first, t);
  if (other == x) {  // (x * t) * 0.5
    Node *half = passes::singleUser(graph, first->output(0));
    if (!passes::isOnnxOp(half, "Mul") || otherThanConstant(model, half, 0.5) != first->output(0)) return nullptr;
    pattern.insert(pattern.end(), {first, half});
    return half->output(0);
  }
  if (Node *halfX = producerIs(other, "Mul"); halfX && otherThanConstant(model, halfX, 0.5) == x) {  // (x*0.5) * t
    pattern.insert(pattern.end(), {first, halfX});
    return first->output(0);
  }
  if (isScalarConstant(model, other, 0.5)) {  // x * (t * 0.5)
    Node *last = passes::singleUser(graph, first->output(0));
    if (!passes::isOnnxOp(last, "Mul") || otherOperand(last, first->output(0)) != x) return nullptr;
    pattern.insert(pattern.end(), {first, last});
    return last->output(0);
  }
  return nullptr;
}

bool recognizeAt(Model &model, Node *anchor, const std::unordered_set<const Value *> &returned) {
  Graph &graph = *model.graph;
  const bool isTanh = passes::isOnnxOp(anchor, "Tanh");
  std::vector<Node *> pattern = {anchor};
  Value *x = isTanh ? tanhArgument(model, anchor->input(0), pattern) : erfArgument(model, anchor->input(0), pattern);
  if (!x) return false;
  Node *plusOne = passes::singleUser(graph, anchor->output(0));
  if (!passes::isOnnxOp(plusOne, "Add") || otherOperand(plusOne, anchor->output(0)) == nullptr ||
      !isScalarConstant(model, otherOperand(plusOne, anchor->output(0)), 1.0)) {
    return false;
  }
  pattern.push_back(plusOne);
  Value *result = halfProduct(model, graph, plusOne->output(0), x, pattern);
  if (!result) return false;
  const std::unordered_set<const Node *> members(pattern.begin(), pattern.end());
  for (const Node *node : pattern) {
    const Value *out = node->output(0);
    if (out != result && !passes::usedOnlyBy(graph, out, members, returned)) return false;
  }
  if (returned.count(result)) return false;  // A subgraph's return would keep the replaced value.
  passes::replacePattern(graph, result, "Gelu", "tessel", {x},
                         {{"approximate", Attribute(std::string(isTanh ? "tanh" : "none"))}}, pattern);
  return true;
}

}  // namespace

Expected<bool> recognizeGelu(Model &model) {
  return passes::recognizeAtAnchors(model, {"Erf", "Tanh"}, true,
                                    [&](Node *anchor, const std::unordered_set<const Value *> &returned) {
                                      return recognizeAt(model, anchor, returned);
                                    });
}

}  // namespace tessel
