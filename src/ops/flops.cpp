// FLOP estimates from static shapes.
#include "ops/flops.h"

#include <string_view>

namespace tessel {

namespace {

/// Static sizes, with symbolic dims (a batch, a sequence length) taken as 1.
std::optional<std::vector<int64_t>> sizesOf(const Value *value) {
  if (!value || !value->type().isTensor() || !value->type().shape().rankKnown()) return std::nullopt;
  std::vector<int64_t> sizes;
  for (const Dim &d : value->type().shape().dims()) {
    if (d.isStatic()) sizes.push_back(d.size);
    else if (d.isSymbolic()) sizes.push_back(1);
    else return std::nullopt;
  }
  return sizes;
}

bool isContraction(std::string_view op) {
  for (std::string_view c : {"MatMul", "FusedMatMul", "Gemm", "MatMulInteger", "QLinearMatMul", "Conv", "FusedConv",
                             "ConvInteger", "QLinearConv", "ConvTranspose", "Attention"})
    if (op == c) return true;
  return false;
}

}  // namespace

std::optional<int64_t> contractionFlops(const Node &node) {
  const std::string &op = node.opType();
  auto out = sizesOf(node.output(0));
  if (op == "MatMul" || op == "FusedMatMul" || op == "Gemm" || op == "MatMulInteger" || op == "QLinearMatMul") {
    auto a = sizesOf(node.input(0));
    if (!a || !out || a->empty()) return std::nullopt;
    int64_t k = a->back();
    if (op == "Gemm" && node.attrInt("transA", 0) && a->size() == 2) k = (*a)[0];
    return 2 * k * numElements(*out);
  }
  if (op == "Conv" || op == "FusedConv" || op == "ConvInteger" || op == "QLinearConv") {
    auto w = sizesOf(node.input(op == "QLinearConv" ? 3 : 1));
    if (!w || !out || w->size() < 2) return std::nullopt;
    int64_t perOutput = 1;
    for (size_t i = 1; i < w->size(); ++i) perOutput *= (*w)[i];  // C/group * kernel spatial.
    return 2 * perOutput * numElements(*out);
  }
  if (op == "ConvTranspose") {
    auto x = sizesOf(node.input(0));
    auto w = sizesOf(node.input(1));
    if (!x || !w || w->size() < 2) return std::nullopt;
    int64_t perInput = 1;
    for (size_t i = 1; i < w->size(); ++i) perInput *= (*w)[i];  // C_out/group * kernel spatial.
    return 2 * perInput * numElements(*x);
  }
  if (op == "Attention") {  // q [.., Sq, D], k [.., Sk, D], v [.., Sk, Dv].
    auto q = sizesOf(node.input(0)), k = sizesOf(node.input(1)), v = sizesOf(node.input(2));
    if (!q || !k || !v || q->empty() || k->size() < 2 || v->empty()) return std::nullopt;
    const int64_t queries = numElements(*q) / q->back();
    return 2 * queries * (*k)[k->size() - 2] * (q->back() + v->back());
  }
  return std::nullopt;
}

std::optional<int64_t> estimateFlops(const Node &node) {
  if (isContraction(node.opType())) return contractionFlops(node);
  auto out = sizesOf(node.output(0));
  if (!out) return std::nullopt;
  return numElements(*out);
}

}  // namespace tessel
