// The cast reference; see cast_reference.h.
#include "targets/nc/compiler/cast_reference.h"

#include <map>

#include "frontend/onnx/exporter.h"
#include "frontend/onnx/importer.h"
#include "targets/nc/compiler/conv_forms.h"

namespace tessel::nc::compiler {
namespace {

/// The ONNX TensorProto code of a cast type the graph can round through, or 0.
int64_t onnxCode(DType castType) {
  switch (castType) {
    case DType::BF16: return 16;
    case DType::F16: return 10;
    default: return 0;
  }
}

tessel::DType irDtype(DType castType) {
  return castType == DType::F16 ? tessel::DType::Float16 : tessel::DType::BFloat16;
}

/// The inputs of `node` the device rounds to the matmul dtype.
std::vector<size_t> roundedInputs(const Node &node, const LoweringOptions &options) {
  const std::string &op = node.opType();
  if (op == "MatMul" || op == "Gemm" || op == "FusedMatMul") return {0, 1};
  if ((op == "Conv" || op == "FusedConv") && (node.attrInt("group", 1) == 1 || depthwiseOnPe(node, options))) return {0, 1};
  return {};
}

}  // namespace

Expected<CastReference> castReference(const Model &model, const std::function<bool(size_t)> &onDevice,
                                      const LoweringOptions &options) {
  CastReference ref;
  ref.exact = true;
  if (options.autoCast == AutoCast::None) return ref;
  const int64_t code = onnxCode(options.castType);
  if (code == 0 || options.autoCast == AutoCast::All) {
    ref.exact = false;
    ref.unmodelled = code == 0 ? fmt::format("rounding to {} is not modelled", dtypeName(options.castType))
                               : "--auto-cast all rounds every activation, which is not modelled";
    return ref;
  }
  // A copy of the model to rewrite (export and import keep the node order).
  TESSEL_ASSIGN_OR_RETURN(std::string bytes, exportOnnxBytes(model));
  TESSEL_ASSIGN_OR_RETURN(ref.model, importOnnxBytes(bytes, model.sourcePath));
  Graph &graph = *ref.model->graph;
  std::vector<Node *> nodes;
  for (const auto &node : graph.nodes()) nodes.push_back(node.get());
  std::map<Value *, Value *> rounded;  // A value and its rounded copy, shared by its readers.
  for (size_t i = 0; i < nodes.size(); ++i) {
    Node *node = nodes[i];
    if (!onDevice(i)) continue;
    if (node->opType() == "Attention") {
      ref.exact = false;
      ref.unmodelled = fmt::format("Attention '{}' rounds inside the op", node->name());
    }
    if (node->opType() == "Gemm" && node->attrFloat("alpha", 1.0f) != 1.0f) {
      ref.exact = false;  // The device rounds alpha * B, not B.
      ref.unmodelled = fmt::format("Gemm '{}' rounds alpha * B", node->name());
    }
    for (size_t input : roundedInputs(*node, options)) {
      Value *v = node->input(input);
      if (!v || !v->type().isTensor() || v->type().dtype() != tessel::DType::Float32) continue;
      auto [it, added] = rounded.try_emplace(v, nullptr);
      if (added) {
        Node *down = graph.addNode("Cast", {v}, {v->name() + "/rounded_" + std::string(dtypeName(options.castType))},
                                   v->name() + "/round_down");
        down->setAttr("to", Attribute(code));
        down->output(0)->setType(Type::tensor(irDtype(options.castType), v->type().shape()));
        Node *up = graph.addNode("Cast", {down->output(0)}, {v->name() + "/rounded"}, v->name() + "/round_up");
        up->setAttr("to", Attribute(int64_t{1}));
        up->output(0)->setType(v->type());
        it->second = up->output(0);
        ++ref.roundedValues;
      }
      node->setInput(input, it->second);
    }
  }
  if (ref.roundedValues == 0) {
    ref.model.reset();  // Nothing on the device rounds: the model is its own reference.
    return ref;
  }
  TESSEL_RETURN_IF_ERROR(graph.sortTopologically());
  return ref;
}

}  // namespace tessel::nc::compiler
