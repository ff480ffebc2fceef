// Shape folding: read the answer of Shape, Size and Gather-of-Shape off the inferred types.
#include "passes/fold_shapes.h"

#include <algorithm>
#include <unordered_set>

#include "passes/constant_values.h"

namespace tessel {

namespace {

bool isDefaultDomain(const Node &node) { return node.domain().empty() || node.domain() == "ai.onnx"; }

/// The [start, end) range of dims a Shape node returns for a rank-`rank` input (as refShape).
std::pair<int64_t, int64_t> shapeRange(const Node &shape, int64_t rank) {
  auto clampToRank = [&](int64_t v) { return std::clamp<int64_t>(v < 0 ? v + rank : v, 0, rank); };
  return {clampToRank(shape.attrInt("start", 0)), clampToRank(shape.attrInt("end", rank))};
}

/// The static sizes of `value`'s dims, or nothing when its rank is unknown; symbolic dims are -1.
std::optional<std::vector<int64_t>> dimsOf(const Value *value) {
  if (!value || !value->type().isTensor() || !value->type().shape().rankKnown()) return std::nullopt;
  std::vector<int64_t> dims;
  for (const Dim &dim : value->type().shape().dims()) dims.push_back(dim.isStatic() ? dim.size : -1);
  return dims;
}

/// The dims of x that Shape(x) returns, -1 where symbolic; nothing when `node` is not such a Shape.
std::optional<std::vector<int64_t>> shapeDims(const Node *node) {
  if (!node || node->opType() != "Shape" || !isDefaultDomain(*node)) return std::nullopt;
  std::optional<std::vector<int64_t>> dims = dimsOf(node->input(0));
  if (!dims) return std::nullopt;
  auto [start, end] = shapeRange(*node, static_cast<int64_t>(dims->size()));
  return std::vector<int64_t>(dims->begin() + start, dims->begin() + std::max(start, end));
}

bool allStatic(const std::vector<int64_t> &dims) {
  return std::all_of(dims.begin(), dims.end(), [](int64_t d) { return d >= 0; });
}

Tensor int64Vector(const std::vector<int64_t> &values) {
  return Tensor::fromVector<int64_t>({static_cast<int64_t>(values.size())}, values);
}

std::optional<Tensor> foldShape(const Node &node) {
  std::optional<std::vector<int64_t>> dims = shapeDims(&node);
  if (!dims || !allStatic(*dims)) return std::nullopt;
  return int64Vector(*dims);
}

std::optional<Tensor> foldSize(const Node &node) {
  if (node.opType() != "Size" || !isDefaultDomain(node)) return std::nullopt;
  std::optional<std::vector<int64_t>> dims = dimsOf(node.input(0));
  if (!dims || !allStatic(*dims)) return std::nullopt;
  return Tensor::scalar<int64_t>(numElements(*dims));
}

/// Gather(Shape(x), indices) with axis 0 and constant in-range indices naming static dims.
std::optional<Tensor> foldGatherOfShape(const Model &model, const Node &node) {
  if (node.opType() != "Gather" || !isDefaultDomain(node) || node.inputs().size() != 2) return std::nullopt;
  if (node.attrInt("axis", 0) != 0 || !node.input(0) || !node.input(1)) return std::nullopt;
  std::optional<std::vector<int64_t>> dims = shapeDims(node.input(0)->producer());
  if (!dims) return std::nullopt;
  std::optional<Tensor> indices = passes::constantValueOf(model, *node.input(1));
  if (!indices || (indices->dtype() != DType::Int64 && indices->dtype() != DType::Int32)) return std::nullopt;
  const auto n = static_cast<int64_t>(dims->size());
  Tensor result(DType::Int64, indices->sizes());
  int64_t *out = result.data<int64_t>();
  for (int64_t i = 0; i < indices->numel(); ++i) {
    int64_t index = indices->scalarAsInt64(i);
    if (index < 0) index += n;
    if (index < 0 || index >= n || (*dims)[static_cast<size_t>(index)] < 0) return std::nullopt;
    out[i] = (*dims)[static_cast<size_t>(index)];
  }
  return result;
}

}  // namespace

Expected<bool> foldShapes(Model &model) {
  Graph &graph = *model.graph;
  std::vector<std::pair<Node *, Tensor>> folds;
  for (const auto &node : graph.nodes()) {
    std::optional<Tensor> value = foldShape(*node);
    if (!value) value = foldSize(*node);
    if (!value) value = foldGatherOfShape(model, *node);
    if (value) folds.emplace_back(node.get(), std::move(*value));
  }
  // From the back, so a Shape whose Gathers all folded is erased instead of left as a constant.
  const std::unordered_set<const Value *> returned = passes::valuesReturnedBySubgraphs(graph);
  bool changed = false;
  for (auto it = folds.rbegin(); it != folds.rend(); ++it) {
    auto &[node, value] = *it;
    const Value *out = node->output(0);
    std::vector<std::optional<Tensor>> constants(node->outputs().size());
    if (out && (!out->uses().empty() || passes::isGraphOutput(graph, out) || returned.count(out))) {
      constants[0] = std::move(value);
    }
    changed |= passes::replaceWithInitializers(graph, node, std::move(constants));
  }
  return changed;
}

}  // namespace tessel
