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

}  // namespace

std::optional<int64_t> estimateFlops(const Node &node) {
  const std::string &op = node.opType();
  auto out = sizesOf(node.output(0));
  if (op == "MatMul" || op == "Gemm" || op == "MatMulInteger" || op == "QLinearMatMul") {
    auto a = sizesOf(node.input(op == "QLinearMatMul" ? 0 : 0));
    if (!a || !out || a->empty()) return std::nullopt;
    int64_t k = a->back();
    if (op == "Gemm" && node.attrInt("transA", 0) && a->size() == 2) k = (*a)[0];
    return 2 * k * numElements(*out);
  }
  if (op == "Conv" || op == "ConvInteger" || op == "QLinearConv") {
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
  if (!out) return std::nullopt;
  return numElements(*out);
}

}  // namespace tessel
