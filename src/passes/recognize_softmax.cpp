// Softmax recognition, anchored at the ReduceMax of x.
#include "passes/recognize_softmax.h"

#include <unordered_set>

#include "passes/constant_values.h"
#include "passes/fusion_utils.h"

namespace tessel {

namespace {

using passes::isOnnxOp;

/// Whether `reduce` reduces only the last axis of its rank-`rank` input, keeping dims.
bool reducesLastAxis(const Model &model, const Node *reduce, int64_t rank) {
  if (reduce->attrInt("keepdims", 1) != 1) return false;
  auto axes = passes::reduceAxes(model, *reduce, rank);
  return axes && axes->size() == 1 && (*axes)[0] == rank - 1;
}

bool recognizeAt(Model &model, Node *max, const std::unordered_set<const Value *> &returned) {
  Graph &graph = *model.graph;
  Value *x = max->input(0);
  if (!x || !x->type().isTensor() || !isFloatingPoint(x->type().dtype()) || !x->type().shape().rankKnown()) {
    return false;
  }
  const int64_t rank = static_cast<int64_t>(x->type().shape().rank());
  if (rank == 0 || !reducesLastAxis(model, max, rank)) return false;
  Node *sub = passes::singleUser(graph, max->output(0));
  if (!isOnnxOp(sub, "Sub") || sub->input(0) != x || sub->input(1) != max->output(0)) return false;
  Node *exp = passes::singleUser(graph, sub->output(0));
  if (!isOnnxOp(exp, "Exp")) return false;
  Value *e = exp->output(0);
  if (e->uses().size() != 2) return false;
  Node *sum = nullptr, *div = nullptr;
  for (const Use &use : e->uses()) {
    if (isOnnxOp(use.user, "ReduceSum") && use.inputIndex == 0) sum = use.user;
    if (isOnnxOp(use.user, "Div") && use.inputIndex == 0) div = use.user;
  }
  if (!sum || !div || !reducesLastAxis(model, sum, rank) || div->input(1) != sum->output(0)) return false;
  std::vector<Node *> pattern = {max, sub, exp, sum, div};
  const std::unordered_set<const Node *> members(pattern.begin(), pattern.end());
  for (const Node *node : pattern) {
    if (node != div && !passes::usedOnlyBy(graph, node->output(0), members, returned)) return false;
  }
  if (returned.count(div->output(0))) return false;  // A subgraph's return would keep the replaced value.
  const int64_t axis = model.opsetFor("") >= 11 ? -1 : rank - 1;
  passes::replacePattern(graph, div->output(0), "Softmax", "", {x}, {{"axis", Attribute(axis)}}, pattern);
  return true;
}

}  // namespace

Expected<bool> recognizeSoftmax(Model &model) {
  return passes::recognizeAtAnchors(model, {"ReduceMax"}, false,
                                    [&](Node *anchor, const std::unordered_set<const Value *> &returned) {
                                      return recognizeAt(model, anchor, returned);
                                    });
}

}  // namespace tessel
