// Dynamically quantized products in float32; see float_dynamic_quantization.h.
#include "passes/float_dynamic_quantization.h"

#include <algorithm>
#include <optional>

#include "ops/reference/helpers.h"
#include "passes/constant_values.h"
#include "passes/fusion_utils.h"

namespace tessel {

namespace {

/// One ConvInteger / MatMulInteger reading the quantized values, with its weights as floats less
/// their zero points, and the Casts to float32 that read its result.
struct Product {
  Node *node = nullptr;
  Tensor centeredWeights;
  std::vector<Node *> casts;
};

/// `w` less its zero point `zero` (absent, one value, or one per output channel: axis 0 of a
/// ConvInteger's weights, the last axis of a MatMulInteger's), as float32; nullopt for another form.
std::optional<Tensor> centeredWeights(const Tensor &w, const std::optional<Tensor> &zero, bool conv) {
  std::vector<double> values = ref::toDoubles(w);
  std::vector<double> zeros = zero ? ref::toDoubles(*zero) : std::vector<double>{0.0};
  if (w.rank() < 2) return std::nullopt;
  const int64_t channels = conv ? w.size(0) : w.size(w.rank() - 1);
  if (zeros.size() != 1 && (zero->rank() != 1 || static_cast<int64_t>(zeros.size()) != channels)) return std::nullopt;
  const int64_t inner = conv ? w.numel() / channels : 1;
  for (size_t i = 0; i < values.size(); ++i) {
    const int64_t channel = (static_cast<int64_t>(i) / inner) % channels;
    values[i] -= zeros.size() == 1 ? zeros[0] : zeros[static_cast<size_t>(channel)];
  }
  return ref::fromDoubles(DType::Float32, w.sizes(), values);
}

/// The product `node` reading `values` (quantized by a DynamicQuantizeLinear of zero point `zero`),
/// when the rewrite applies to it.
std::optional<Product> readProduct(const Model &model, Node *node, const Value *values, const Value *zero) {
  const bool conv = passes::isOnnxOp(node, "ConvInteger");
  if (!conv && !passes::isOnnxOp(node, "MatMulInteger")) return std::nullopt;
  if (node->input(0) != values || node->input(2) != zero || !node->input(1)) return std::nullopt;
  std::optional<Tensor> w = passes::constantValueOf(model, *node->input(1));
  if (!w || (w->dtype() != DType::UInt8 && w->dtype() != DType::Int8)) return std::nullopt;
  std::optional<Tensor> wZero;
  if (node->input(3)) {
    wZero = passes::constantValueOf(model, *node->input(3));
    if (!wZero) return std::nullopt;
  }
  if (!conv && w->rank() != 2) return std::nullopt;  // MatMul's float weights as the accelerator reads them.
  Product p;
  p.node = node;
  std::optional<Tensor> centered = centeredWeights(*w, wZero, conv);
  if (!centered) return std::nullopt;
  p.centeredWeights = std::move(*centered);
  const Value *result = node->output(0);
  if (result->uses().empty() || passes::isGraphOutput(*node->graph(), result)) return std::nullopt;
  for (const Use &use : result->uses()) {
    if (!passes::isOnnxOp(use.user, "Cast") || use.user->attrInt("to", 0) != static_cast<int64_t>(DType::Float32))
      return std::nullopt;
    p.casts.push_back(use.user);
  }
  return p;
}

}  // namespace

Expected<bool> floatDynamicQuantization(Model &model) {
  Graph &graph = *model.graph;
  std::vector<Node *> quantizers;
  for (const auto &node : graph.nodes())
    if (passes::isOnnxOp(node.get(), "DynamicQuantizeLinear")) quantizers.push_back(node.get());
  bool changed = false;
  for (Node *dq : quantizers) {
    Value *x = dq->input(0), *values = dq->output(0), *scale = dq->output(1), *zero = dq->output(2);
    if (!x || !values || !scale || !zero || values->uses().empty() || passes::isGraphOutput(graph, values) ||
        passes::isGraphOutput(graph, zero))
      continue;
    std::vector<Product> products;
    bool applies = true;
    for (const Use &use : values->uses()) {
      std::optional<Product> p = readProduct(model, use.user, values, zero);
      if (!p || std::any_of(products.begin(), products.end(), [&](const Product &q) { return q.node == p->node; })) {
        applies = false;
        break;
      }
      products.push_back(std::move(*p));
    }
    for (const Use &use : zero->uses())
      applies = applies && std::any_of(products.begin(), products.end(), [&](const Product &p) { return p.node == use.user; });
    if (!applies) continue;

    // The scale keeps its name (the Mul after each product reads it); the old value is renamed away.
    const std::string scaleName = scale->name();
    graph.renameValue(scale, graph.uniqueName(scaleName + "_integer"));
    Node *centered = graph.addNode("DynamicQuantizeCentered", {x},
                                   {graph.uniqueName(values->name() + "_centered"), scaleName}, dq->name(), "tessel");
    centered->output(0)->setType(Type::tensor(DType::Float32, x->type().shape()));
    centered->output(1)->setType(scale->type());
    graph.replaceAllUsesWith(scale, centered->output(1));
    for (Product &p : products) {
      const bool conv = passes::isOnnxOp(p.node, "ConvInteger");
      Value *w = passes::addConstant(graph, p.node->input(1)->name() + "_centered", std::move(p.centeredWeights));
      // The product's float result takes the first Cast's name; the other Casts read it too.
      Value *first = p.casts.front()->output(0);
      const std::string name = first->name();
      graph.renameValue(first, graph.uniqueName(name + "_integer"));
      Node *product = graph.addNode(conv ? "Conv" : "MatMul", {centered->output(0), w}, {name}, p.node->name());
      if (conv)
        for (const auto &[attr, value] : p.node->attributes()) product->setAttr(attr, value);
      product->output(0)->setType(first->type());
      for (Node *cast : p.casts) {
        graph.replaceAllUsesWith(cast->output(0), product->output(0));
        graph.eraseNode(cast);
      }
      graph.eraseNode(p.node);
    }
    graph.eraseNode(dq);
    changed = true;
  }
  if (!changed) return false;
  passes::importTesselOpset(model);
  TESSEL_RETURN_IF_ERROR(graph.sortTopologically());
  return true;
}

}  // namespace tessel
