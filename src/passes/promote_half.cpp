// See promote_half.h.
#include "passes/promote_half.h"

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "ops/reference/helpers.h"

namespace tessel {

namespace {

bool isHalf(DType dtype) { return dtype == DType::Float16 || dtype == DType::BFloat16; }

bool holdsHalf(const Type &type) {
  if (type.isTensor()) return isHalf(type.dtype());
  if (type.kind() == Type::Kind::Sequence || type.kind() == Type::Kind::Optional) return holdsHalf(type.element());
  return false;
}

/// `type` with each half element type made float32.
Type promoted(const Type &type) {
  if (type.isTensor()) return isHalf(type.dtype()) ? Type::tensor(DType::Float32, type.shape()) : type;
  if (type.kind() == Type::Kind::Sequence) return Type::sequence(promoted(type.element()));
  if (type.kind() == Type::Kind::Optional) return Type::optional(promoted(type.element()));
  return type;
}

Tensor promotedTensor(const Tensor &tensor) {
  return ref::fromDoubles(DType::Float32, tensor.sizes(), ref::toDoubles(tensor));
}

class Promoter {
 public:
  bool changed = false;

  void promoteGraph(Graph &graph, bool topLevel) {
    // Top-level inputs keep their type (callers feed it); read through a Cast to float32.
    if (topLevel) {
      for (Value *input : std::vector<Value *>(graph.inputs())) {
        if (!input->type().isTensor() || !isHalf(input->type().dtype()) || input->uses().empty()) continue;
        Node *cast = graph.addNode("Cast", {input}, {graph.uniqueName(input->name() + "_fp32")},
                                   input->name() + "/to_fp32");
        cast->setAttr("to", Attribute(static_cast<int64_t>(DType::Float32)));
        cast->output(0)->setType(promoted(input->type()));
        redirectReaders(input, cast->output(0), cast);
        changed = true;
      }
    }
    for (const auto &value : graph.values()) {
      if (!holdsHalf(value->type()) || (topLevel && value->isGraphInput())) continue;
      if (value->hasInitializer()) value->setInitializer(promotedTensor(value->initializer()));
      if (value->type().isTensor()) halfTypes_.emplace(value.get(), value->type());
      value->setType(promoted(value->type()));
      changed = true;
    }
    for (const auto &node : graph.nodes()) {
      promoteAttributes(*node);
      for (Graph *sub : node->subgraphs()) promoteGraph(*sub, false);
    }
    restorePrintedOperands(graph);
    dropNoOpCasts(graph);
    // Top-level outputs keep their declared type: the float32 result is converted back.
    if (topLevel) {
      for (size_t i = 0; i < graph.outputs().size(); ++i) {
        Value *out = graph.outputs()[i];
        auto declared = declaredOutputs_.find(out);
        if (declared == declaredOutputs_.end() || out->isGraphInput()) continue;
        const std::string name = out->name();
        graph.renameValue(out, graph.uniqueName(name + "_fp32"));
        Node *cast = graph.addNode("Cast", {out}, {name}, name + "/to_declared");
        cast->setAttr("to", Attribute(static_cast<int64_t>(declared->second.dtype())));
        cast->output(0)->setType(declared->second);
        graph.setOutput(i, cast->output(0));
      }
    }
  }

  /// Remembers the declared types of the top-level half outputs, before they are promoted.
  void recordOutputs(const Graph &graph) {
    for (Value *out : graph.outputs())
      if (out->type().isTensor() && isHalf(out->type().dtype())) declaredOutputs_.emplace(out, out->type());
  }

 private:
  void promoteAttributes(Node &node) {
    const bool onnx = node.domain().empty() || node.domain() == "ai.onnx";
    if (!onnx) return;
    const std::string &op = node.opType();
    if (op == "Cast" && isHalf(static_cast<DType>(node.attrInt("to", 0)))) {
      node.setAttr("to", Attribute(static_cast<int64_t>(DType::Float32)));
      changed = true;
    }
    const Tensor *value = node.attrTensor("value");
    if ((op == "Constant" || op == "ConstantOfShape") && value && isHalf(value->dtype())) {
      node.setAttr("value", Attribute(promotedTensor(*value)));
      changed = true;
    }
    const bool generator = op == "RandomNormal" || op == "RandomUniform" || op == "RandomNormalLike" ||
                           op == "RandomUniformLike" || op == "EyeLike" || op == "Bernoulli" || op == "Multinomial";
    if (generator && node.hasAttr("dtype") && isHalf(static_cast<DType>(node.attrInt("dtype", 0)))) {
      node.setAttr("dtype", Attribute(static_cast<int64_t>(DType::Float32)));
      changed = true;
    }
  }

  /// Points every reader of `from` except `keep` at `to`.
  static void redirectReaders(Value *from, Value *to, const Node *keep) {
    for (const Use &use : std::vector<Use>(from->uses()))
      if (use.user != keep && !printsItsInput(*use.user)) use.user->setInput(use.inputIndex, to);
  }

  /// Removes the Casts promotion made float32 -> float32 (a Cast between half and float32 before):
  /// their readers read the input. One whose output the graph returns stays, keeping the name.
  void dropNoOpCasts(Graph &graph) {
    std::vector<Node *> noOps;
    for (const auto &node : graph.nodes()) {
      const Value *in = node->input(0);
      if (node->opType() != "Cast" || !(node->domain().empty() || node->domain() == "ai.onnx") || !in ||
          !in->type().isTensor() || in->type().dtype() != DType::Float32 ||
          static_cast<DType>(node->attrInt("to", 0)) != DType::Float32)
        continue;
      const auto &outs = graph.outputs();
      if (std::find(outs.begin(), outs.end(), node->output(0)) == outs.end()) noOps.push_back(node.get());
    }
    for (Node *cast : noOps) {
      graph.replaceAllUsesWith(cast->output(0), cast->input(0));
      graph.eraseNode(cast);
    }
  }

  /// A Cast to string prints the value in its own type's shortest form, so it reads the half value.
  static bool printsItsInput(const Node &node) {
    return node.opType() == "Cast" && (node.domain().empty() || node.domain() == "ai.onnx") &&
           static_cast<DType>(node.attrInt("to", 0)) == DType::String;
  }

  /// Gives each Cast to string that reads a promoted value a Cast back to the value's half type.
  void restorePrintedOperands(Graph &graph) {
    std::vector<Node *> printers;
    for (const auto &node : graph.nodes())
      if (printsItsInput(*node) && node->input(0) && halfTypes_.count(node->input(0))) printers.push_back(node.get());
    for (Node *printer : printers) {
      Value *promotedValue = printer->input(0);
      Node *back = graph.addNode("Cast", {promotedValue}, {graph.uniqueName(promotedValue->name() + "_half")});
      back->setAttr("to", Attribute(static_cast<int64_t>(halfTypes_.at(promotedValue).dtype())));
      back->output(0)->setType(halfTypes_.at(promotedValue));
      printer->setInput(0, back->output(0));
    }
  }

  std::map<const Value *, Type> declaredOutputs_;
  std::map<const Value *, Type> halfTypes_;  // Each promoted tensor's type before.
};

}  // namespace

bool computesHalf(const Graph &graph) {
  for (const auto &value : graph.values())
    if (holdsHalf(value->type()) && !(graph.parentNode() == nullptr && value->isGraphInput())) return true;
  for (const auto &node : graph.nodes()) {
    for (const Graph *sub : node->subgraphs())
      if (computesHalf(*sub)) return true;
    if (node->opType() == "Cast" && isHalf(static_cast<DType>(node->attrInt("to", 0)))) return true;
  }
  return false;
}

Expected<bool> promoteHalf(Model &model) {
  Promoter promoter;
  promoter.recordOutputs(*model.graph);
  promoter.promoteGraph(*model.graph, true);
  if (promoter.changed) TESSEL_RETURN_IF_ERROR(model.graph->sortTopologically());  // The input Casts.
  return promoter.changed;
}

}  // namespace tessel
