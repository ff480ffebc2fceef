// KV-cache in place: each cached present becomes a KvCacheUpdate of its past; see kv_cache_in_place.h.
#include "passes/kv_cache_in_place.h"

#include "passes/fusion_utils.h"

namespace tessel {

namespace {

/// The Concat making graph output `present` from a past graph input along axis 2, or null.
Node *cacheConcat(const Value *present) {
  Node *concat = passes::producerIs(present, "Concat");
  if (!concat || concat->inputs().size() != 2) return nullptr;
  const Value *past = concat->input(0);
  if (!past || !past->isGraphInput() || past->hasInitializer() || !past->type().isTensor()) return nullptr;
  const Shape &shape = past->type().shape();
  if (!shape.rankKnown() || shape.rank() != 4) return nullptr;
  const int64_t axis = concat->attrInt("axis", 0);
  return axis == 2 || axis == -2 ? concat : nullptr;
}

}  // namespace

Expected<bool> writeKvCacheInPlace(Model &model) {
  Graph &graph = *model.graph;
  std::vector<size_t> outputs;
  for (size_t i = 0; i < graph.outputs().size(); ++i)
    if (cacheConcat(graph.outputs()[i])) outputs.push_back(i);
  if (outputs.empty()) return false;
  if (graph.findValue(kCachePositionInput))
    return makeError(ErrorCode::InvalidModel, "kv-cache-in-place: the model already has a value '{}'",
                     kCachePositionInput);
  Value *position = graph.addInput(kCachePositionInput, Type::tensor(DType::Int64, Shape::fromSizes({1})));
  passes::importTesselOpset(model);
  for (size_t i : outputs) {
    Value *present = graph.outputs()[i];
    Node *concat = present->producer();
    Value *past = concat->input(0);
    const std::string name = present->name();
    // The Concat keeps feeding attention under a new name; the output's name goes to the update.
    graph.renameValue(present, graph.uniqueName(name + "_with_past"));
    Node *update = graph.addNode("KvCacheUpdate", {past, concat->input(1), position}, {name},
                                 concat->name().empty() ? "" : concat->name() + "_in_place", "tessel");
    update->output(0)->setType(past->type());
    graph.setOutput(i, update->output(0));
  }
  TESSEL_RETURN_IF_ERROR(graph.sortTopologically());
  return true;
}

}  // namespace tessel
