// Attention recognition, anchored at each Softmax: walks back from its input through the optional
// mask Add, causal Where and scaling to the score MatMul, and forward to the MatMul with V.
// Rank-3 attention over [B*H, S, D] (as PyTorch exports nn.MultiheadAttention, in ViT) is
// recognized too: Reshapes give its operands and result the rank 4 that Attention takes. K and V
// repeated over groups of query heads (grouped-query attention's repeat_kv) are read before the
// repetition.
#include "passes/recognize_attention.h"

#include <cmath>
#include <numeric>
#include <unordered_set>
#include <utility>

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

/// The dims of `value` when it is a tensor of rank `rank`, else nullptr.
const std::vector<Dim> *dimsOfRank(const Value *value, size_t rank) {
  if (!value || !value->type().isTensor() || !value->type().shape().rankKnown() ||
      value->type().shape().rank() != rank) {
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

/// The axes of an Unsqueeze node (a constant second input from opset 13, else the attribute).
std::optional<std::vector<int64_t>> unsqueezeAxes(const Model &model, const Node &node) {
  if (node.inputs().size() < 2) return node.attrInts("axes");
  return passes::constantInt64s(model, node.input(1));
}

/// The K or V heads of grouped-query attention before their repetition: when `value` [B, H, S, D]
/// is Reshape(Expand(Unsqueeze(x, axes = [2]), [B, Hkv, H / Hkv, S, D]), [B, H, S, D]), as PyTorch
/// exports Llama's repeat_kv (query head h then reads K/V head h / (H / Hkv)), returns x
/// [B, Hkv, S, D] and adds the three nodes to `match`; else returns `value`. The dims must be static:
/// the passes see them so once a plan or a compile fixes the input shapes.
Value *stripRepeatedHeads(const Model &model, Value *value, Match &match) {
  Node *reshape = producerIs(value, "Reshape");
  Node *expand = reshape ? producerIs(reshape->input(0), "Expand") : nullptr;
  Node *unsqueeze = expand ? producerIs(expand->input(0), "Unsqueeze") : nullptr;
  if (!unsqueeze) return value;
  Value *source = unsqueeze->input(0);
  const std::optional<std::vector<int64_t>> axes = unsqueezeAxes(model, *unsqueeze);
  const auto x = passes::staticSizes(source), repeated = passes::staticSizes(expand->output(0)),
             y = passes::staticSizes(value);
  if (!axes || *axes != std::vector<int64_t>{2} || !x || !repeated || !y || x->size() != 4 || y->size() != 4) {
    return value;
  }
  const int64_t kvHeads = (*x)[1], heads = (*y)[1];
  if (kvHeads <= 0 || heads % kvHeads != 0) return value;
  const std::vector<int64_t> wantRepeated = {(*x)[0], kvHeads, heads / kvHeads, (*x)[2], (*x)[3]};
  const std::vector<int64_t> wantY = {(*x)[0], heads, (*x)[2], (*x)[3]};
  if (*repeated != wantRepeated || *y != wantY) return value;
  for (Node *node : {reshape, expand, unsqueeze}) match.nodes.push_back(node);
  return source;
}

/// How K is obtained from the second operand of the score MatMul.
enum class KeySource { Direct, RewrittenTranspose, TransposedConstant };

/// The Transpose that turns the source of PyTorch's fused K transpose into K: [B,Sk,H,D] to
/// [B,H,Sk,D] at rank 4, [Sk,B*H,D] to [B*H,Sk,D] at rank 3.
std::vector<int64_t> keyRewritePerm(size_t rank) {
  return rank == 4 ? std::vector<int64_t>{0, 2, 1, 3} : std::vector<int64_t>{1, 0, 2};
}

/// K in [B,H,Sk,D] (rank 4) or [B*H,Sk,D] (rank 3) from the second operand of the score MatMul
/// (for TransposedConstant, the constant Kt itself; for RewrittenTranspose, the source that
/// keyRewritePerm turns into K), or nullptr.
Value *keyFromTransposed(const Model &model, Value *kt, size_t rank, Match &match, KeySource &how) {
  how = KeySource::Direct;
  if (Node *transpose = producerIs(kt, "Transpose")) {
    const std::vector<int64_t> perm = transpose->attrInts("perm");
    Value *source = stripScale(model, transpose->input(0), match);
    std::vector<int64_t> swapLast(rank);
    std::iota(swapLast.begin(), swapLast.end(), int64_t{0});
    std::swap(swapLast[rank - 2], swapLast[rank - 1]);
    if (perm == swapLast) {
      match.nodes.push_back(transpose);
      return source;
    }
    // The fused transpose is the rewrite followed by the swap of the last two axes:
    // [0,2,3,1] at rank 4, [1,2,0] at rank 3.
    std::vector<int64_t> fused = keyRewritePerm(rank);
    std::swap(fused[rank - 2], fused[rank - 1]);
    if (perm == fused) {
      how = KeySource::RewrittenTranspose;
      match.nodes.push_back(transpose);
      return source;
    }
    return nullptr;
  }
  std::optional<Tensor> constant = passes::constantValueOf(model, *kt);
  if (!constant || constant->rank() != rank || !isFloatingPoint(constant->dtype())) return nullptr;
  how = KeySource::TransposedConstant;
  return kt;
}

/// A new constant holding the constant `kt` [..., D, Sk] transposed to [..., Sk, D].
Value *transposeKeyConstant(Model &model, const Value *kt) {
  Tensor constant = *passes::constantValueOf(model, *kt);
  Graph &graph = *model.graph;
  std::vector<int64_t> sizes = constant.sizes();
  const size_t rank = sizes.size();
  const int64_t depth = sizes[rank - 2], keys = sizes[rank - 1];
  const int64_t batch = numElements(std::vector<int64_t>(sizes.begin(), sizes.end() - 2));
  std::vector<double> in = ref::toDoubles(constant), out(in.size());
  for (int64_t b = 0; b < batch; ++b) {
    for (int64_t d = 0; d < depth; ++d) {
      for (int64_t k = 0; k < keys; ++k) {
        out[static_cast<size_t>((b * keys + k) * depth + d)] = in[static_cast<size_t>((b * depth + d) * keys + k)];
      }
    }
  }
  std::swap(sizes[rank - 2], sizes[rank - 1]);
  return passes::addConstant(graph, kt->name() + "_t", ref::fromDoubles(constant.dtype(), sizes, out));
}

/// The shape input of a Reshape to `dims`: their sizes, -1 for the one that is not static;
/// nullopt when more than one is not, or one is 0 (which Reshape would read as "copy").
std::optional<std::vector<int64_t>> reshapeTarget(const std::vector<Dim> &dims) {
  std::vector<int64_t> target;
  bool inferred = false;
  for (const Dim &dim : dims) {
    if (dim.isStatic() && dim.size == 0) return std::nullopt;
    if (!dim.isStatic()) {
      if (inferred) return std::nullopt;
      inferred = true;
    }
    target.push_back(dim.isStatic() ? dim.size : -1);
  }
  return target;
}

/// `dims` with a leading 1: the rank-4 form [1, B*H, S, D] of a rank-3 operand.
std::vector<Dim> withLeadingOne(const std::vector<Dim> &dims) {
  std::vector<Dim> out = {Dim(1)};
  out.insert(out.end(), dims.begin(), dims.end());
  return out;
}

std::string derivedName(const std::string &nodeName, const std::string &suffix) {
  return nodeName.empty() ? "" : nodeName + "/" + suffix;
}

/// A new constant holding the shape input of a Reshape to `dims` (checked by reshapeTarget).
Value *shapeConstant(Graph &graph, const std::string &hint, const std::vector<Dim> &dims) {
  const std::vector<int64_t> target = *reshapeTarget(dims);
  return passes::addConstant(graph, hint + "_shape",
                             Tensor::fromVector<int64_t>({static_cast<int64_t>(target.size())}, target));
}

/// The rank-3 operand `value` reshaped to [1, dims...] by a new Reshape named after the Attention
/// node `attentionName` and the operand's `role`.
Value *toRank4(Graph &graph, Value *value, const std::vector<Dim> &dims, const std::string &attentionName,
               const std::string &role) {
  const std::vector<Dim> rank4 = withLeadingOne(dims);
  Node *reshape = graph.addNode("Reshape", {value, shapeConstant(graph, value->name(), rank4)},
                                {graph.uniqueName(value->name() + "_rank4")},
                                derivedName(attentionName, role + "_to_rank4"));
  reshape->output(0)->setType(Type::tensor(value->type().dtype(), Shape(rank4)));
  return reshape->output(0);
}

bool recognizeAt(Model &model, Node *softmax, const std::unordered_set<const Value *> &returned) {
  Graph &graph = *model.graph;
  Value *probs = softmax->output(0);
  // Rank 4 is [B,H,S,S]; rank 3 is [B*H,S,S].
  const std::vector<Dim> *scoreDims = dimsOfRank(probs, 4);
  if (!scoreDims) scoreDims = dimsOfRank(probs, 3);
  if (!scoreDims || !isFloatingPoint(probs->type().dtype())) return false;
  const size_t rank = scoreDims->size();
  const int64_t axis = softmax->attrInt("axis", model.opsetFor("") >= 13 ? -1 : 1);
  if (axis != -1 && axis != static_cast<int64_t>(rank) - 1) return false;
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
      // At rank 3 the mask broadcasts to [1,B*H,Sq,Sk] as it did to [B*H,Sq,Sk].
      if (!mask || !mask->type().isTensor() || !mask->type().shape().rankKnown() ||
          mask->type().shape().rank() > rank) {
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
    if (!isCausalMask(model, where->input(0), (*sizes)[rank - 2], (*sizes)[rank - 1])) return false;
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
  Value *k = keyFromTransposed(model, kt, rank, match, how);
  Value *v = pv->input(1);
  if (!k) return false;
  if (rank == 4 && how == KeySource::Direct) {
    k = stripRepeatedHeads(model, k, match);
    v = stripRepeatedHeads(model, v, match);
  }
  // Shapes: Q [...,Sq,D], V [...,Sk,Dv]; K [...,Sk,D], or its source before a rewritten transpose.
  const std::vector<Dim> *qd = dimsOfRank(q, rank), *kd = dimsOfRank(k, rank), *vd = dimsOfRank(v, rank);
  const std::vector<Dim> *yd = dimsOfRank(pv->output(0), rank);
  if (!qd || !kd || !vd || !yd) return false;
  std::vector<Dim> kLayout = *kd;
  const std::vector<int64_t> rewrite = keyRewritePerm(rank);
  if (how == KeySource::RewrittenTranspose) {
    for (size_t d = 0; d < rank; ++d) kLayout[d] = (*kd)[static_cast<size_t>(rewrite[d])];
  }
  if (how == KeySource::TransposedConstant) std::swap(kLayout[rank - 2], kLayout[rank - 1]);
  if (match.scale == 0.0 || !std::isfinite(match.scale)) return false;  // 0 would mean 1/sqrt(D).
  for (size_t d = 0; d + 2 < rank; ++d) {
    if (!knownEqual(kLayout[d], (*vd)[d])) return false;
    // The heads of Q may be a multiple of K's and V's (grouped-query attention).
    const bool groupedHeads = rank == 4 && d == 1 && (*qd)[d].isStatic() && kLayout[d].isStatic() &&
                              kLayout[d].size > 0 && (*qd)[d].size % kLayout[d].size == 0;
    if (!knownEqual((*qd)[d], kLayout[d]) && !groupedHeads) return false;
  }
  if (!knownEqual((*qd)[rank - 1], kLayout[rank - 1]) || !knownEqual(kLayout[rank - 2], (*vd)[rank - 2])) return false;
  // At rank 3 the operands and the result are reshaped by constant shapes.
  if (rank == 3) {
    for (const std::vector<Dim> *dims : {qd, &std::as_const(kLayout), vd, yd}) {
      if (!reshapeTarget(*dims)) return false;
    }
  }
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
    keys->setAttr("perm", Attribute(rewrite));
    keys->output(0)->setType(Type::tensor(k->type().dtype(), Shape(kLayout)));
    k = keys->output(0);
  }
  std::vector<std::pair<std::string, Attribute>> attributes = {
      {"scale", Attribute(static_cast<float>(match.scale))}, {"causal", Attribute(int64_t{match.causal ? 1 : 0})}};
  if (rank == 4) {
    std::vector<Value *> inputs = {q, k, v};
    if (match.mask) inputs.push_back(match.mask);
    passes::replacePattern(graph, pv->output(0), "Attention", "tessel", inputs, std::move(attributes), match.nodes);
    return true;
  }
  // Rank 3: Attention over [1,B*H,S,D] views (Reshapes alias their input), its result reshaped back.
  Value *y = pv->output(0);
  std::vector<Value *> inputs = {toRank4(graph, q, *qd, pv->name(), "q"), toRank4(graph, k, kLayout, pv->name(), "k"),
                                 toRank4(graph, v, *vd, pv->name(), "v")};
  if (match.mask) inputs.push_back(match.mask);
  Node *attention = graph.addNode("Attention", inputs, {graph.uniqueName(y->name() + "_rank4")}, pv->name(), "tessel");
  for (auto &[name, value] : attributes) attention->setAttr(name, std::move(value));
  attention->output(0)->setType(Type::tensor(y->type().dtype(), Shape(withLeadingOne(*yd))));
  Value *shape = shapeConstant(graph, y->name(), *yd);
  Node *back = passes::replacePattern(graph, y, "Reshape", "", {attention->output(0), shape}, {}, match.nodes);
  back->setName(derivedName(attention->name(), "to_rank3"));
  return true;
}

}  // namespace

Expected<bool> recognizeAttention(Model &model) {
  return passes::recognizeAtAnchors(model, {"Softmax"}, true,
                                    [&](Node *anchor, const std::unordered_set<const Value *> &returned) {
                                      return recognizeAt(model, anchor, returned);
                                    });
}

}  // namespace tessel
