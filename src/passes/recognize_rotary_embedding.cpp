// Rotary-embedding recognition, anchored at each Add: one operand is x * cos, the other
// rotate_half(x) * sin, with rotate_half's Concat(Neg(second half), first half) read back to x.
#include "passes/recognize_rotary_embedding.h"

#include <unordered_set>

#include "passes/constant_values.h"
#include "passes/fusion_utils.h"

namespace tessel {

namespace {

using passes::isOnnxOp;
using passes::producerIs;

/// Whether `slice` takes elements [start, end) of the last axis (of size `depth`, rank `rank`) of
/// its data with step 1; `end` at or past `depth` means to the end.
bool slicesLastAxis(const Model &model, const Node *slice, int64_t rank, int64_t depth, int64_t start, int64_t end) {
  if (!isOnnxOp(slice, "Slice") || slice->inputs().size() < 4) return false;
  const auto starts = passes::constantInt64s(model, slice->input(1)), ends = passes::constantInt64s(model, slice->input(2)),
             axes = passes::constantInt64s(model, slice->input(3));
  if (!starts || !ends || !axes || starts->size() != 1 || ends->size() != 1 || axes->size() != 1) return false;
  if ((*axes)[0] != -1 && (*axes)[0] != rank - 1) return false;
  if (slice->inputs().size() > 4 && slice->input(4)) {
    const auto steps = passes::constantInt64s(model, slice->input(4));
    if (!steps || *steps != std::vector<int64_t>{1}) return false;
  }
  const int64_t sliceEnd = (*ends)[0] >= depth ? depth : (*ends)[0];
  return (*starts)[0] == start && sliceEnd == end;
}

/// x when `rotated` is Concat(Neg(Slice(x, D/2..D)), Slice(x, 0..D/2)) on the last axis; the four
/// nodes go to `nodes`.
Value *rotateHalfSource(const Model &model, const Value *rotated, std::vector<Node *> &nodes) {
  Node *concat = producerIs(rotated, "Concat");
  if (!concat || concat->inputs().size() != 2) return nullptr;
  Node *neg = producerIs(concat->input(0), "Neg");
  Node *firstHalf = concat->input(1) ? concat->input(1)->producer() : nullptr;
  Node *secondHalf = neg ? neg->input(0)->producer() : nullptr;
  if (!neg || !firstHalf || !secondHalf || firstHalf->input(0) != secondHalf->input(0)) return nullptr;
  Value *x = firstHalf->input(0);
  const auto sizes = x->type().isTensor() && x->type().shape().rankKnown() ? &x->type().shape().dims() : nullptr;
  if (!sizes || sizes->empty() || !sizes->back().isStatic()) return nullptr;
  const int64_t rank = static_cast<int64_t>(sizes->size()), depth = sizes->back().size;
  if (depth % 2 != 0 || depth == 0) return nullptr;
  const int64_t axis = concat->attrInt("axis", 0);
  if (axis != -1 && axis != rank - 1) return nullptr;
  if (!slicesLastAxis(model, secondHalf, rank, depth, depth / 2, depth) ||
      !slicesLastAxis(model, firstHalf, rank, depth, 0, depth / 2)) {
    return nullptr;
  }
  for (Node *node : {concat, neg, secondHalf, firstHalf}) nodes.push_back(node);
  return x;
}

/// Whether `table` broadcasts to x's shape (rank at most x's, each dim 1 or x's).
bool broadcastsTo(const Value *table, const Value *x) {
  if (!table || !table->type().isTensor() || !table->type().shape().rankKnown()) return false;
  const std::vector<Dim> &t = table->type().shape().dims(), &xd = x->type().shape().dims();
  if (t.size() > xd.size()) return false;
  for (size_t i = 0; i < t.size(); ++i) {
    const Dim &a = t[t.size() - 1 - i], &b = xd[xd.size() - 1 - i];
    if (!(a.isStatic() && a.size == 1) && !((a.isStatic() || a.isSymbolic()) && a == b)) return false;
  }
  return true;
}

bool recognizeAt(Model &model, Node *add, const std::unordered_set<const Value *> &returned) {
  Graph &graph = *model.graph;
  for (int side = 0; side < 2; ++side) {
    Node *plain = producerIs(add->input(side), "Mul"), *rotatedMul = producerIs(add->input(1 - side), "Mul");
    if (!plain || !rotatedMul || plain == rotatedMul) continue;
    for (int r = 0; r < 2; ++r) {
      std::vector<Node *> nodes = {add, plain, rotatedMul};
      Value *x = rotateHalfSource(model, rotatedMul->input(r), nodes);
      if (!x) continue;
      Value *sin = rotatedMul->input(1 - r);
      const int xSide = plain->input(0) == x ? 0 : plain->input(1) == x ? 1 : -1;
      if (xSide < 0) continue;
      Value *cos = plain->input(1 - xSide);
      if (!broadcastsTo(cos, x) || !broadcastsTo(sin, x) || !passes::sameShape(add->output(0), x)) continue;
      const std::unordered_set<const Node *> members(nodes.begin(), nodes.end());
      bool contained = true;
      for (const Node *node : nodes) {
        if (node != add && !passes::usedOnlyBy(graph, node->output(0), members, returned)) contained = false;
      }
      if (!contained || returned.count(add->output(0))) continue;
      passes::replacePattern(graph, add->output(0), "RotaryEmbedding", "tessel", {x, cos, sin}, {}, nodes);
      return true;
    }
  }
  return false;
}

}  // namespace

Expected<bool> recognizeRotaryEmbedding(Model &model) {
  return passes::recognizeAtAnchors(model, {"Add"}, true,
                                    [&](Node *anchor, const std::unordered_set<const Value *> &returned) {
                                      return recognizeAt(model, anchor, returned);
                                    });
}

}  // namespace tessel
