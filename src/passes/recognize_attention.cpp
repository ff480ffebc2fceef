// Attention recognition, anchored at each Softmax: walks back from its input through the optional
// mask Add, causal Where and scaling to the score MatMul, and forward to the MatMul with V.
#include "passes/recognize_attention.h"

#include <cmath>
#include <unordered_set>

#include "ops/reference/helpers.h"
#include "passes/constant_values.h"
#include "passes/fusion_utils.h"

namespace tessel {

namespace {

using passes::isOnnxOp;
using passes::producerIs;

/// The matched pattern, filled while walking.
struct Match {
  std::vector<Node *> nodes;
  double scale = 1.0;
  bool causal = false;
  Value *mask = nullptr;
};

/// Strips Mul/Div by scalar constants off `value`, folding them into `match.scale`.
Value *stripScale(const Model &model, Value *value, Match &match) {
  for (;;) {
    // A scaled value read elsewhere too must stay; it then is the operand itself.
    if (!value || value->uses().size() != 1 || passes::isGraphOutput(*model.graph, value)) return value;
    Node *producer = value->producer();
    if (isOnnxOp(producer, "Div")) {
      std::optional<double> c = passes::scalarConstant(model, producer->input(1));
      if (!c || *c == 0.0) return value;
      match.scale /= *c;
      match.nodes.push_back(producer);
      value = producer->input(0);
    } else if (isOnnxOp(producer, "Mul")) {
      const int side = passes::scalarConstantOperand(model, *producer);
      if (side < 0) return value;
      match.scale *= *passes::scalarConstant(model, producer->input(side));
      match.nodes.push_back(producer);
      value = producer->input(1 - side);
    } else {
      return value;
    }
  }
}

const std::vector<Dim> *rank4Dims(const Value *value) {
  if (!value || !value->type().isTensor() || !value->type().shape().rankKnown() ||
      value->type().shape().rank() != 4) {
    return nullptr;
  }
  return &value->type().shape().dims();
}

bool knownEqual(const Dim &a, const Dim &b) { return (a.isStatic() || a.isSymbolic()) && a == b; }

/// Whether `cond` is the causal mask for scores of `sq` x `sk`: true where j <= i + sk - sq.
bool isCausalMask(const Model &model, const Value *cond, int64_t sq, int64_t sk) {
  if (!cond) return false;
  std::optional<Tensor> mask = passes::constantValueOf(model, *cond);
  if (!mask || mask->dtype() != DType::Bool || mask->rank() < 2) return false;
  for (size_t d = 0; d + 2 < mask->rank(); ++d) {
    if (mask->size(d) != 1) return false;
  }
  if (mask->size(mask->rank() - 2) != sq || mask->size(mask->rank() - 1) != sk) return false;
  const bool *values = mask->data<bool>();
  for (int64_t i = 0; i < sq; ++i) {
    for (int64_t j = 0; j < sk; ++j) {
      if (values[i * sk + j] != (j <= i + sk - sq)) return false;
    }
  }
  return true;
}

/// How K is obtained from the second operand of the score MatMul.
enum class KeySource { Direct, RewrittenTranspose, TransposedConstant };

/// K in [B,H,Sk,D] from the second operand of the score MatMul (for TransposedConstant, the
/// constant Kt itself; for RewrittenTranspose, the [B,Sk,H,D] source), or nullptr.
Value *keyFromTransposed(const Model &model, Value *kt, Match &match, KeySource &how) {
  how = KeySource::Direct;
  if (Node *transpose = producerIs(kt, "Transpose")) {
    const std::vector<int64_t> perm = transpose->attrInts("perm");
    Value *source = stripScale(model, transpose->input(0), match);
    if (perm == std::vector<int64_t>{0, 1, 3, 2}) {
      match.nodes.push_back(transpose);
      return source;
    }
    if (perm == std::vector<int64_t>{0, 2, 3, 1}) {
      // [B,Sk,H,D] -> [B,H,D,Sk]; [0,2,1,3] of the same source gives K as [B,H,Sk,D].
      how = KeySource::RewrittenTranspose;
      match.nodes.push_back(transpose);
      return source;
    }
    return nullptr;
  }
  std::optional<Tensor> constant = passes::constantValueOf(model, *kt);
  if (!constant || constant->rank() != 4 || !isFloatingPoint(constant->dtype())) return nullptr;
  how = KeySource::TransposedConstant;
  return kt;
}

/// A new constant holding the constant `kt` [B,H,D,Sk] transposed to [B,H,Sk,D].
Value *transposeKeyConstant(Model &model, const Value *kt) {
  Tensor constant = *passes::constantValueOf(model, *kt);
  Graph &graph = *model.graph;
  const std::vector<int64_t> s = constant.sizes();  // [B,H,D,Sk]
  std::vector<double> in = ref::toDoubles(constant), out(in.size());
  for (int64_t bh = 0; bh < s[0] * s[1]; ++bh) {
    for (int64_t d = 0; d < s[2]; ++d) {
      for (int64_t k = 0; k < s[3]; ++k) {
        out[static_cast<size_t>((bh * s[3] + k) * s[2] + d)] = in[static_cast<size_t>((bh * s[2] + d) * s[3] + k)];
      }
    }
  }
  return passes::addConstant(graph, kt->name() + "_t",
                             ref::fromDoubles(constant.dtype(), {s[0], s[1], s[3], s[2]}, out));
}

bool recognizeAt(Model &model, Node *softmax, const std::unordered_set<const Value *> &returned) {
  Graph &graph = *model.graph;
  Value *probs = softmax->output(0);
  const std::vector<Dim> *scoreDims = rank4Dims(probs);
  if (!scoreDims || !isFloatingPoint(probs->type().dtype())) return false;
  const int64_t axis = softmax->attrInt("axis", model.opsetFor("") >= 13 ? -1 : 1);
  if (axis != -1 && axis != 3) return false;
  Node *pv = passes::singleUser(graph, probs);
  if (!isOnnxOp(pv, "MatMul") || pv->input(0) != probs) return false;
  Match match;
  match.nodes = {pv, softmax};
  Value *scores = softmax->input(0);
  // Mask Add: the operand that leads back to the score MatMul is the scores.
  if (Node *add = producerIs(scores, "Add")) {
    for (int side = 0; side < 2; ++side) {
      Value *inner = add->input(side);
      Node *p = inner ? inner->producer() : nullptr;
      if (!isOnnxOp(p, "Where") && !isOnnxOp(p, "MatMul") && !isOnnxOp(p, "Mul") && !isOnnxOp(p, "Div")) continue;
      if (!passes::sameShape(inner, scores) || !passes::sameShape(add->output(0), scores)) continue;
      const Value *mask = add->input(1 - side);
      if (!mask || !mask->type().isTensor() || !mask->type().shape().rankKnown() || mask->type().shape().rank() > 4) {
        continue;
      }
      match.mask = add->input(1 - side);
      match.nodes.push_back(add);
      scores = inner;
      break;
    }
  }
  // Causal Where.
  if (Node *where = producerIs(scores, "Where")) {
    auto sizes = passes::staticSizes(where->output(0));
    std::optional<double> fill = passes::scalarConstant(model, where->input(2));
    if (!sizes || !fill || *fill > -1e4) return false;
    if (!isCausalMask(model, where->input(0), (*sizes)[2], (*sizes)[3])) return false;
    match.causal = true;
    match.nodes.push_back(where);
    scores = where->input(1);
  }
  scores = stripScale(model, scores, match);
  Node *qk = producerIs(scores, "MatMul");
  if (!qk) return false;
  match.nodes.push_back(qk);
  Value *q = stripScale(model, qk->input(0), match);
  KeySource how = KeySource::Direct;
  Value *kt = stripScale(model, qk->input(1), match);
  Value *k = keyFromTransposed(model, kt, match, how);
  Value *v = pv->input(1);
  if (!k) return false;
  // Shapes: Q [B,H,Sq,D], V [B,H,Sk,Dv]; K [B,H,Sk,D], or [B,Sk,H,D] before a rewritten transpose.
  const std::vector<Dim> *qd = rank4Dims(q), *kd = rank4Dims(k), *vd = rank4Dims(v);
  if (!qd || !kd || !vd) return false;
  std::vector<Dim> kLayout = *kd;
  if (how == KeySource::RewrittenTranspose) kLayout = {(*kd)[0], (*kd)[2], (*kd)[1], (*kd)[3]};
  if (how == KeySource::TransposedConstant) kLayout = {(*kd)[0], (*kd)[1], (*kd)[3], (*kd)[2]};
  if (match.scale == 0.0 || !std::isfinite(match.scale)) return false;  // 0 would mean 1/sqrt(D).
  for (int d : {0, 1}) {
    if (!knownEqual((*qd)[d], kLayout[d]) || !knownEqual((*qd)[d], (*vd)[d])) return false;
  }
  if (!knownEqual((*qd)[3], kLayout[3]) || !knownEqual(kLayout[2], (*vd)[2])) return false;
  // Every intermediate is read only inside the pattern.
  const std::unordered_set<const Node *> members(match.nodes.begin(), match.nodes.end());
  for (const Node *node : match.nodes) {
    if (node != pv && !passes::usedOnlyBy(graph, node->output(0), members, returned)) return false;
  }
  if (returned.count(pv->output(0))) return false;  // A subgraph's return would keep the replaced value.
  if (how == KeySource::TransposedConstant) k = transposeKeyConstant(model, k);
  if (how == KeySource::RewrittenTranspose) {
    Node *keys = graph.addNode("Transpose", {k}, {graph.uniqueName(k->name() + "_bhsd")},
                               graph.uniqueName("Transpose_bhsd"));
    keys->setAttr("perm", Attribute(std::vector<int64_t>{0, 2, 1, 3}));
    keys->output(0)->setType(Type::tensor(k->type().dtype(), Shape(kLayout)));
    k = keys->output(0);
  }
  std::vector<Value *> inputs = {q, k, v};
  if (match.mask) inputs.push_back(match.mask);
  passes::replacePattern(graph, pv->output(0), "Attention", "tessel", inputs,
                         {{"scale", Attribute(static_cast<float>(match.scale))},
                          {"causal", Attribute(int64_t{match.causal ? 1 : 0})}},
                         match.nodes);
  return true;
}

}  // namespace

Expected<bool> recognizeAttention(Model &model) {
  std::vector<Node *> anchors;
  for (const auto &node : model.graph->nodes()) {
    if (isOnnxOp(node.get(), "Softmax")) anchors.push_back(node.get());
  }
  const std::unordered_set<const Value *> returned = passes::valuesReturnedBySubgraphs(*model.graph);
  bool changed = false;
  for (Node *anchor : anchors) {
    if (!recognizeAt(model, anchor, returned)) continue;
    passes::importTesselOpset(model);
    changed = true;
  }
  if (changed) TESSEL_RETURN_IF_ERROR(model.graph->sortTopologically());
  return changed;
}

}  // namespace tessel
