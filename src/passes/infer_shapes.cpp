// Type and shape inference pass: a loop over the top-level nodes that calls the registry's
// per-node inference (ONNX's schemas, or the registry row of a tessel op), comparing every type of the model before and after to report a change.
#include "passes/infer_shapes.h"

#include <vector>

#include "ops/registry.h"

namespace tessel {

namespace {

/// Every value a node or subgraph defines, at any depth, with its current type.
void snapshotTypes(const Graph &graph, std::vector<std::pair<const Value *, Type>> &types) {
  for (const Value *input : graph.inputs()) types.emplace_back(input, input->type());
  for (const auto &node : graph.nodes()) {
    for (const Value *output : node->outputs()) {
      if (output) types.emplace_back(output, output->type());
    }
    for (const Graph *sub : node->subgraphs()) snapshotTypes(*sub, types);
  }
}

bool hasUntypedInput(const Node &node) {
  for (const Value *input : node.inputs()) {
    if (input && input->type().kind() == Type::Kind::Unknown) return true;
  }
  return false;
}

}  // namespace

Expected<bool> inferShapes(Model &model) {
  std::vector<std::pair<const Value *, Type>> before;
  snapshotTypes(*model.graph, before);
  for (const auto &node : model.graph->nodes()) {
    if (hasUntypedInput(*node)) continue;  // Nothing to infer from; a later run may know more.
    int64_t opset = model.opsetFor(node->domain());
    if (opset < 0) {
      Diagnostic diag =
          makeError(ErrorCode::UnsupportedOpset, "the model imports no opset for domain '{}'", node->domain());
      diag.loc = locationOf(*node, model.sourcePath);
      return diag;
    }
    // tessel's own ops have no ONNX schema: their registry rows carry the inference.
    const OpInfo *own = node->domain() == "tessel" ? findOp(node->domain(), node->opType(), opset) : nullptr;
    Status status = own && own->infer ? own->infer(*node, opset) : inferOnnx(*node, opset);
    if (status.ok()) continue;
    if (status.diag().code == ErrorCode::UnsupportedOp) continue;  // No schema: the types stay as they are.
    return withLocation(status, locationOf(*node, model.sourcePath)).diag();
  }
  std::vector<std::pair<const Value *, Type>> after;
  snapshotTypes(*model.graph, after);
  for (size_t i = 0; i < before.size(); ++i) {
    if (!(before[i].second == after[i].second)) return true;
  }
  return false;
}

}  // namespace tessel
