// Last-position logits: the LM head reads the last position only; see last_position_logits.h.
#include "passes/last_position_logits.h"

#include <limits>

#include "passes/fusion_utils.h"

namespace tessel {

Expected<bool> keepLastPositionLogits(Model &model) {
  Graph &graph = *model.graph;
  for (size_t i = 0; i < graph.outputs().size(); ++i) {
    Value *logits = graph.outputs()[i];
    if (logits->name() != "logits") continue;
    Node *head = passes::producerIs(logits, "MatMul");
    if (!head || !head->input(1)->hasInitializer() || head->input(1)->initializer().rank() != 2) return false;
    Value *hidden = head->input(0);
    const Shape &shape = hidden->type().shape();
    if (!hidden->type().isTensor() || !shape.rankKnown() || shape.rank() != 3 || !logits->type().isTensor() ||
        !logits->type().shape().rankKnown() || logits->type().shape().rank() != 3)
      return false;
    auto axisConstant = [&](const std::string &hint, int64_t value) {
      return passes::addConstant(graph, hint, Tensor::fromVector<int64_t>({1}, {value}));
    };
    Value *starts = axisConstant("last_position_start", -1);
    Value *ends = axisConstant("last_position_end", std::numeric_limits<int64_t>::max());
    Value *axes = axisConstant("last_position_axis", 1);
    Node *slice = graph.addNode("Slice", {hidden, starts, ends, axes}, {graph.uniqueName(hidden->name() + "_last")},
                                head->name().empty() ? "" : head->name() + "_last_position");
    std::vector<Dim> lastDims = shape.dims();
    lastDims[1] = Dim(1);
    slice->output(0)->setType(Type::tensor(hidden->type().dtype(), Shape(lastDims)));
    head->setInput(0, slice->output(0));
    std::vector<Dim> logitsDims = logits->type().shape().dims();
    logitsDims[1] = Dim(1);
    logits->setType(Type::tensor(logits->type().dtype(), Shape(logitsDims)));
    TESSEL_RETURN_IF_ERROR(graph.sortTopologically());
    return true;
  }
  return false;
}

}  // namespace tessel
