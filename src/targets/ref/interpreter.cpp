// Reference interpreter: one frame of values per graph execution, chained to the enclosing
// frame so subgraphs (If/Loop/Scan bodies) read outer-scope values.
#include "targets/ref/interpreter.h"

#include <unordered_map>

#include "ops/registry.h"

namespace tessel {

struct ReferenceInterpreter::Frame {
  const Frame *parent = nullptr;
  std::unordered_map<const Value *, RuntimeValue> values;

  const RuntimeValue *lookup(const Value *value) const {
    for (const Frame *f = this; f; f = f->parent) {
      auto it = f->values.find(value);
      if (it != f->values.end()) return &it->second;
    }
    return nullptr;
  }
};

Status checkInputMatches(const Value &input, const RuntimeValue &fed) {
  const Type &type = input.type();
  if (type.kind() != Type::Kind::Tensor) return Status::success();
  if (!fed.isTensor()) {
    return makeError(ErrorCode::TypeMismatch, "input '{}' expects a tensor of {}; got {}", input.name(), type.str(),
                     fed.describe());
  }
  const Tensor &t = fed.tensor();
  if (type.dtype() != DType::Undefined && t.dtype() != type.dtype()) {
    return makeError(ErrorCode::TypeMismatch, "input '{}' expects {}; got {}", input.name(), type.str(),
                     fed.describe());
  }
  const Shape &shape = type.shape();
  if (!shape.rankKnown()) return Status::success();
  bool match = shape.rank() == t.rank();
  for (size_t i = 0; match && i < shape.rank(); ++i) {
    if (shape[i].isStatic() && shape[i].size != t.size(i)) match = false;
  }
  if (!match) {
    return makeError(ErrorCode::ShapeMismatch, "input '{}' expects shape {}; got {}", input.name(), shape.str(),
                     formatSizes(t.sizes()));
  }
  return Status::success();
}

Expected<NamedValues> ReferenceInterpreter::run(const NamedValues &feeds) const {
  const Graph &graph = *model_.graph;
  std::vector<RuntimeValue> inputs;
  for (const auto &[name, value] : feeds) {
    bool known = false;
    for (Value *input : graph.inputs()) known = known || input->name() == name;
    if (!known) return makeFileError(ErrorCode::InvalidArgument, model_.sourcePath, "the model has no input named '{}'", name);
  }
  for (Value *input : graph.inputs()) {
    const RuntimeValue *fed = nullptr;
    for (const auto &[name, value] : feeds) {
      if (name == input->name()) fed = &value;
    }
    if (!fed) {
      if (input->hasInitializer()) {
        inputs.emplace_back(input->initializer());
        continue;
      }
      return makeFileError(ErrorCode::InvalidArgument, model_.sourcePath, "input '{}' ({}) was not given", input->name(),
                           input->type().str());
    }
    Status matches = checkInputMatches(*input, *fed);
    if (!matches.ok()) return withLocation(matches, SourceLoc::inFile(model_.sourcePath)).diag();
    inputs.push_back(*fed);
  }
  TESSEL_ASSIGN_OR_RETURN(std::vector<RuntimeValue> outputs, runGraph(graph, std::move(inputs), nullptr));
  NamedValues named;
  for (size_t i = 0; i < outputs.size(); ++i) named.emplace_back(graph.outputs()[i]->name(), std::move(outputs[i]));
  return named;
}

Expected<std::vector<RuntimeValue>> ReferenceInterpreter::runGraph(const Graph &graph,
                                                                   std::vector<RuntimeValue> inputs,
                                                                   const Frame *parent) const {
  if (inputs.size() != graph.inputs().size()) {
    return makeError(ErrorCode::InvalidModel, "graph '{}' takes {} inputs; given {}", graph.name(),
                     graph.inputs().size(), inputs.size());
  }
  Frame frame;
  frame.parent = parent;
  for (size_t i = 0; i < inputs.size(); ++i) frame.values[graph.inputs()[i]] = std::move(inputs[i]);
  for (Value *init : graph.initializers()) {
    if (!frame.values.count(init)) frame.values[init] = RuntimeValue(init->initializer());
  }
  for (const auto &node : graph.nodes()) TESSEL_RETURN_IF_ERROR(runNode(*node, frame));
  std::vector<RuntimeValue> outputs;
  for (Value *out : graph.outputs()) {
    const RuntimeValue *value = frame.lookup(out);
    if (!value) {
      return makeError(ErrorCode::InvalidModel, "graph '{}' output '{}' was never computed", graph.name(), out->name());
    }
    outputs.push_back(*value);
  }
  return outputs;
}

Expected<std::vector<RuntimeValue>> ReferenceInterpreter::runSingleNode(
    const Node &node, std::vector<std::pair<const Value *, RuntimeValue>> values) const {
  Frame frame;
  for (auto &[value, runtime] : values) frame.values[value] = std::move(runtime);
  TESSEL_RETURN_IF_ERROR(runNode(node, frame));
  std::vector<RuntimeValue> outputs;
  for (const Value *out : node.outputs()) {
    auto it = out ? frame.values.find(out) : frame.values.end();
    outputs.push_back(it == frame.values.end() ? RuntimeValue() : std::move(it->second));
  }
  return outputs;
}

Status ReferenceInterpreter::runNode(const Node &node, Frame &frame) const {
  const SourceLoc loc = locationOf(node, model_.sourcePath);
  const int64_t opset = model_.opsetFor(node.domain());
  const OpInfo *info = findOp(node.domain(), node.opType(), opset);
  if (!info || !info->reference) {
    return withLocation(makeError(ErrorCode::UnsupportedOp, "op {} (opset {}) has no reference kernel",
                                  node.opType(), opset), loc);
  }
  std::vector<const RuntimeValue *> inputs;
  for (Value *input : node.inputs()) {
    if (!input) {
      inputs.push_back(nullptr);
      continue;
    }
    const RuntimeValue *value = frame.lookup(input);
    if (!value && input->hasInitializer()) {
      frame.values[input] = RuntimeValue(input->initializer());
      value = &frame.values[input];
    }
    if (!value) {
      return withLocation(makeError(ErrorCode::InvalidModel, "input '{}' has no value when the node runs",
                                    input->name()), loc);
    }
    inputs.push_back(value);
  }
  KernelContext ctx(node, opset, std::move(inputs),
                    [this, &frame](const Graph &graph, std::vector<RuntimeValue> subInputs) {
                      return runGraph(graph, std::move(subInputs), &frame);
                    });
  Status status = info->reference(ctx);
  if (!status.ok()) return withLocation(status, loc);
  for (size_t i = 0; i < node.outputs().size(); ++i) {
    const Value *out = node.outputs()[i];
    if (!out) continue;
    RuntimeValue &produced = ctx.outputs()[i];
    if (produced.isNone() && out->type().kind() != Type::Kind::Optional) {
      return withLocation(makeError(ErrorCode::Internal, "kernel produced no value for output {} ('{}')", i,
                                    out->name()), loc);
    }
    frame.values[out] = std::move(produced);
  }
  return Status::success();
}

}  // namespace tessel
