// Structural comparison of models, graphs, attributes and tensors; see equality.h.
#include "ir/equality.h"

#include <cstring>

#include <fmt/format.h>

namespace tessel {

namespace {

/// Sets `why` to the formatted reason and returns false, so callers can `return differ(...)`.
template <class... Args>
bool differ(std::string &why, fmt::format_string<Args...> format, Args &&...args) {
  why = fmt::format(format, std::forward<Args>(args)...);
  return false;
}

/// Prefixes `why` with where the difference is.
bool within(std::string &why, const std::string &where) {
  why = where + ": " + why;
  return false;
}

std::string valueName(const Value *value) { return value ? "'" + value->name() + "'" : "(omitted)"; }

/// Compares two value lists (inputs, outputs) by name, and by type when `types` is set.
bool valueListsEqual(const std::vector<Value *> &a, const std::vector<Value *> &b, bool types, const char *what,
                     std::string &why) {
  if (a.size() != b.size()) return differ(why, "{} {} vs {}", a.size(), what, b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    if (!a[i] || !b[i]) {
      if (a[i] != b[i]) return differ(why, "{} {} is {} vs {}", what, i, valueName(a[i]), valueName(b[i]));
      continue;
    }
    if (a[i]->name() != b[i]->name()) {
      return differ(why, "{} {} is {} vs {}", what, i, valueName(a[i]), valueName(b[i]));
    }
    if (types && !(a[i]->type() == b[i]->type())) {
      return differ(why, "{} {} ('{}') has type {} vs {}", what, i, a[i]->name(), a[i]->type().str(),
                    b[i]->type().str());
    }
  }
  return true;
}

template <class T>
bool vectorsEqual(const std::vector<T> &a, const std::vector<T> &b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if constexpr (std::is_same_v<T, float>) {
      if (std::memcmp(&a[i], &b[i], sizeof(float)) != 0) return false;
    } else if (!(a[i] == b[i])) {
      return false;
    }
  }
  return true;
}

bool nodesEqual(const Node &a, const Node &b, std::string &why) {
  if (a.opType() != b.opType() || a.domain() != b.domain()) {
    return differ(why, "op {}:{} vs {}:{}", a.domain(), a.opType(), b.domain(), b.opType());
  }
  if (a.name() != b.name()) return differ(why, "name '{}' vs '{}'", a.name(), b.name());
  if (!valueListsEqual(a.inputs(), b.inputs(), /*types=*/false, "input", why)) return false;
  if (!valueListsEqual(a.outputs(), b.outputs(), /*types=*/true, "output", why)) return false;
  const auto &attrsA = a.attributes();
  const auto &attrsB = b.attributes();
  if (attrsA.size() != attrsB.size()) return differ(why, "{} attributes vs {}", attrsA.size(), attrsB.size());
  for (size_t i = 0; i < attrsA.size(); ++i) {
    if (attrsA[i].first != attrsB[i].first) {
      return differ(why, "attribute {} is '{}' vs '{}'", i, attrsA[i].first, attrsB[i].first);
    }
    if (!attributesEqual(attrsA[i].second, attrsB[i].second, why)) {
      return within(why, "attribute '" + attrsA[i].first + "'");
    }
  }
  return true;
}

}  // namespace

bool tensorsEqual(const Tensor &a, const Tensor &b) {
  if (a.dtype() != b.dtype() || a.sizes() != b.sizes()) return false;
  if (!a.defined()) return true;
  if (a.dtype() == DType::String) {
    auto sa = a.span<std::string>();
    auto sb = b.span<std::string>();
    return std::equal(sa.begin(), sa.end(), sb.begin());
  }
  return a.numBytes() == 0 || std::memcmp(a.rawData(), b.rawData(), a.numBytes()) == 0;
}

bool attributesEqual(const Attribute &a, const Attribute &b, std::string &why) {
  if (a.kind() != b.kind()) {
    return differ(why, "kind {} vs {}", attributeKindName(a.kind()), attributeKindName(b.kind()));
  }
  using Kind = Attribute::Kind;
  switch (a.kind()) {
    case Kind::Float: {
      float fa = a.get<float>(), fb = b.get<float>();
      if (std::memcmp(&fa, &fb, sizeof(float)) != 0) return differ(why, "{} vs {}", fa, fb);
      return true;
    }
    case Kind::Int:
      if (a.get<int64_t>() != b.get<int64_t>()) return differ(why, "{} vs {}", a.get<int64_t>(), b.get<int64_t>());
      return true;
    case Kind::String:
      if (a.get<std::string>() != b.get<std::string>()) {
        return differ(why, "\"{}\" vs \"{}\"", a.get<std::string>(), b.get<std::string>());
      }
      return true;
    case Kind::Tensor:
      if (!tensorsEqual(a.get<Tensor>(), b.get<Tensor>())) return differ(why, "tensors differ");
      return true;
    case Kind::Graph:
      return graphsEqual(*a.get<Attribute::GraphPtr>(), *b.get<Attribute::GraphPtr>(), why);
    case Kind::Type:
      if (!(a.get<Type>() == b.get<Type>())) return differ(why, "{} vs {}", a.get<Type>().str(), b.get<Type>().str());
      return true;
    case Kind::Floats:
      if (!vectorsEqual(a.get<std::vector<float>>(), b.get<std::vector<float>>())) return differ(why, "floats differ");
      return true;
    case Kind::Ints:
      if (!vectorsEqual(a.get<std::vector<int64_t>>(), b.get<std::vector<int64_t>>())) return differ(why, "ints differ");
      return true;
    case Kind::Strings:
      if (!vectorsEqual(a.get<std::vector<std::string>>(), b.get<std::vector<std::string>>())) {
        return differ(why, "strings differ");
      }
      return true;
    case Kind::Types:
      if (!vectorsEqual(a.get<std::vector<Type>>(), b.get<std::vector<Type>>())) return differ(why, "types differ");
      return true;
    case Kind::Tensors: {
      const auto &ta = a.get<std::vector<Tensor>>();
      const auto &tb = b.get<std::vector<Tensor>>();
      if (ta.size() != tb.size()) return differ(why, "{} tensors vs {}", ta.size(), tb.size());
      for (size_t i = 0; i < ta.size(); ++i) {
        if (!tensorsEqual(ta[i], tb[i])) return differ(why, "tensor {} differs", i);
      }
      return true;
    }
    case Kind::Graphs: {
      const auto &ga = a.get<std::vector<Attribute::GraphPtr>>();
      const auto &gb = b.get<std::vector<Attribute::GraphPtr>>();
      if (ga.size() != gb.size()) return differ(why, "{} graphs vs {}", ga.size(), gb.size());
      for (size_t i = 0; i < ga.size(); ++i) {
        if (!graphsEqual(*ga[i], *gb[i], why)) return within(why, fmt::format("graph {}", i));
      }
      return true;
    }
  }
  return true;
}

bool graphsEqual(const Graph &a, const Graph &b, std::string &why) {
  const std::string where = "graph '" + a.name() + "'";
  if (a.name() != b.name()) return differ(why, "graph '{}' vs '{}'", a.name(), b.name());
  if (!valueListsEqual(a.inputs(), b.inputs(), /*types=*/true, "input", why)) return within(why, where);
  if (!valueListsEqual(a.initializers(), b.initializers(), /*types=*/true, "initializer", why)) {
    return within(why, where);
  }
  for (size_t i = 0; i < a.initializers().size(); ++i) {
    const Value *va = a.initializers()[i];
    if (va->isGraphInput() != b.initializers()[i]->isGraphInput()) {
      return within(why = fmt::format("initializer '{}' is a graph input in only one", va->name()), where);
    }
    if (!tensorsEqual(va->initializer(), b.initializers()[i]->initializer())) {
      return within(why = fmt::format("initializer '{}' has different contents", va->name()), where);
    }
  }
  if (a.numNodes() != b.numNodes()) return within(why = fmt::format("{} nodes vs {}", a.numNodes(), b.numNodes()), where);
  size_t index = 0;
  for (auto ia = a.nodes().begin(), ib = b.nodes().begin(); ia != a.nodes().end(); ++ia, ++ib, ++index) {
    if (!nodesEqual(**ia, **ib, why)) {
      return within(why, fmt::format("{}: node #{} '{}' ({})", where, index, (*ia)->name(), (*ia)->opType()));
    }
  }
  if (!valueListsEqual(a.outputs(), b.outputs(), /*types=*/true, "output", why)) return within(why, where);
  return true;
}

bool modelsEqual(const Model &a, const Model &b, std::string &why) {
  if (a.opsetImports != b.opsetImports) return differ(why, "opset imports differ");
  if (a.irVersion != b.irVersion) return differ(why, "ir_version {} vs {}", a.irVersion, b.irVersion);
  if (a.producerName != b.producerName || a.producerVersion != b.producerVersion) {
    return differ(why, "producer '{} {}' vs '{} {}'", a.producerName, a.producerVersion, b.producerName,
                  b.producerVersion);
  }
  if (a.domain != b.domain) return differ(why, "domain '{}' vs '{}'", a.domain, b.domain);
  if (a.modelVersion != b.modelVersion) return differ(why, "model_version {} vs {}", a.modelVersion, b.modelVersion);
  if (a.docString != b.docString) return differ(why, "doc_string differs");
  if (a.metadata != b.metadata) return differ(why, "metadata differs");
  if (!a.graph || !b.graph) {
    if (a.graph != b.graph) return differ(why, "only one model has a graph");
    return true;
  }
  return graphsEqual(*a.graph, *b.graph, why);
}

}  // namespace tessel
