// Printer of the text IR (grammar in parser.h). One Printer walks a model or a graph and appends to
// a string; nothing here depends on hash-map order, so the output is deterministic.
#include "ir/printer.h"

#include <fmt/format.h>

#include <bit>
#include <cmath>
#include <limits>
#include <unordered_set>

#include "ir/lexer.h"

namespace tessel {

namespace {

using text::isBareName;
using text::isDottedIdentifier;
using text::isIdentifier;
using text::quoteString;

// ---- Scalars ----

template <class T>
uint64_t floatBits(T value) {
  if constexpr (std::is_same_v<T, float>) {
    return std::bit_cast<uint32_t>(value);
  } else if constexpr (std::is_same_v<T, double>) {
    return std::bit_cast<uint64_t>(value);
  } else {
    return value.bits;
  }
}

/// Shortest decimal that reads back to the same value; NaNs by sign, or by bits when their payload
/// is not the one T(quiet NaN) produces.
template <class T>
std::string formatFloating(T value) {
  using Wide = std::conditional_t<std::is_same_v<T, double>, double, float>;
  Wide wide = static_cast<Wide>(value);
  if (!std::isnan(wide)) return fmt::format("{}", wide);
  uint64_t bits = floatBits(value);
  if (bits == floatBits(T(std::numeric_limits<float>::quiet_NaN()))) return "nan";
  if (bits == floatBits(T(-std::numeric_limits<float>::quiet_NaN()))) return "-nan";
  return fmt::format("nan(0x{:x})", bits);
}

/// A float attribute: like formatFloating, but always distinguishable from an integer.
std::string formatFloatAttr(float value) {
  std::string s = formatFloating(value);
  if (s.find_first_of(".eni") == std::string::npos) s += ".0";
  return s;
}

std::string valueRef(const Value *value) {
  if (!value) return "_";
  return "%" + (isBareName(value->name()) ? value->name() : quoteString(value->name()));
}

std::string graphRef(const std::string &name) { return "@" + (isBareName(name) ? name : quoteString(name)); }

std::string identOrQuoted(const std::string &name) { return isIdentifier(name) ? name : quoteString(name); }

/// Opset and op domains: bare when dotted identifiers.
std::string domainRef(const std::string &domain) {
  return domain.empty() ? "ai.onnx" : (isDottedIdentifier(domain) ? domain : quoteString(domain));
}

/// `Op`, `domain.Op`, or when the names are not identifiers, `"Op"` or `"domain":"Op"`.
std::string opRef(const Node &node) {
  const std::string &op = node.opType();
  const std::string &domain = node.domain();
  if (!domain.empty()) {
    if (isDottedIdentifier(domain) && isIdentifier(op)) return domain + "." + op;
    return quoteString(domain) + ":" + quoteString(op);
  }
  // Words the parser reads as the start of another kind of line or of a node suffix.
  bool reserved = op == "return" || op == "const" || op == "_" || op == "name";
  return isIdentifier(op) && !reserved ? op : quoteString(op);
}

std::string printShape(const Shape &shape) {
  if (!shape.rankKnown()) return "[*]";
  std::string out = "[";
  for (size_t i = 0; i < shape.rank(); ++i) {
    if (i) out += ",";
    const Dim &d = shape[i];
    if (d.isStatic()) {
      out += std::to_string(d.size);
    } else if (d.isSymbolic()) {
      out += identOrQuoted(d.symbol);
    } else {
      out += "?";
    }
  }
  return out + "]";
}

// ---- Tensors ----

uint64_t contentHash(const Tensor &tensor) {
  uint64_t hash = 0xcbf29ce484222325ull;  // FNV-1a, 64-bit.
  auto mix = [&](const void *data, size_t n) {
    const auto *bytes = static_cast<const uint8_t *>(data);
    for (size_t i = 0; i < n; ++i) hash = (hash ^ bytes[i]) * 0x100000001b3ull;
  };
  if (tensor.dtype() == DType::String) {
    for (const std::string &s : tensor.span<std::string>()) {
      uint64_t length = s.size();
      mix(&length, sizeof(length));
      mix(s.data(), s.size());
    }
  } else if (tensor.numBytes() > 0) {
    mix(tensor.rawData(), tensor.numBytes());
  }
  return hash;
}

template <class T>
std::string formatElement(const T &value) {
  if constexpr (std::is_same_v<T, std::string>) {
    return quoteString(value);
  } else if constexpr (std::is_same_v<T, bool>) {
    return value ? "true" : "false";
  } else if constexpr (std::is_integral_v<T> && std::is_signed_v<T>) {
    return std::to_string(static_cast<int64_t>(value));
  } else if constexpr (std::is_integral_v<T>) {
    return std::to_string(static_cast<uint64_t>(value));
  } else if constexpr (std::is_same_v<T, std::complex<float>> || std::is_same_v<T, std::complex<double>>) {
    return "(" + formatFloating(value.real()) + ", " + formatFloating(value.imag()) + ")";
  } else {
    return formatFloating(value);
  }
}

void appendElements(std::string &out, const Tensor &tensor) {
  bool handled = visitDType(tensor.dtype(), [&]<class T>(TypeTag<T>) {
    std::span<const T> values = tensor.span<T>();
    for (size_t i = 0; i < values.size(); ++i) {
      out += i ? ", " : " ";
      out += formatElement(values[i]);
    }
  });
  if (handled) return;
  // Element types without a C++ storage type (FNUZ fp8): raw bit patterns.
  const auto *bytes = static_cast<const uint8_t *>(tensor.rawData());
  size_t width = dtypeSize(tensor.dtype());
  for (int64_t i = 0; i < tensor.numel(); ++i) {
    uint64_t bits = 0;
    for (size_t b = 0; b < width; ++b) bits |= static_cast<uint64_t>(bytes[i * width + b]) << (8 * b);
    out += fmt::format("{}0x{:x}", i ? ", " : " ", bits);
  }
}

// ---- Graphs ----

class Printer {
 public:
  explicit Printer(const PrintOptions &options) : options_(options) {}

  void printModel(const Model &model) {
    out_ += "model opset(";
    bool first = true;
    for (const auto &[domain, version] : model.opsetImports) {
      out_ += fmt::format("{}{}={}", first ? "" : ", ", domainRef(domain), version);
      first = false;
    }
    out_ += fmt::format(") ir_version={}", model.irVersion);
    if (!model.producerName.empty()) out_ += " producer=" + quoteString(model.producerName);
    if (!model.producerVersion.empty()) out_ += " producer_version=" + quoteString(model.producerVersion);
    if (!model.domain.empty()) out_ += " domain=" + quoteString(model.domain);
    if (model.modelVersion != 0) out_ += fmt::format(" model_version={}", model.modelVersion);
    if (!model.docString.empty()) out_ += " doc=" + quoteString(model.docString);
    if (!model.metadata.empty()) {
      out_ += " metadata = {";
      for (size_t i = 0; i < model.metadata.size(); ++i) {
        out_ += fmt::format("{}{} = {}", i ? ", " : "", quoteString(model.metadata[i].first),
                            quoteString(model.metadata[i].second));
      }
      out_ += "}";
    }
    out_ += " {\n";
    printGraph(*model.graph, 0);
    out_ += "\n}\n";
  }

  void printGraph(const Graph &graph, int indent) {
    out_ += "func " + graphRef(graph.name()) + "(";
    for (size_t i = 0; i < graph.inputs().size(); ++i) {
      const Value *input = graph.inputs()[i];
      out_ += (i ? ", " : "") + valueRef(input) + ": " + printType(input->type());
      if (input->hasInitializer()) out_ += " = " + printTensor(input->initializer(), options_);
    }
    out_ += ") -> (";
    for (size_t i = 0; i < graph.outputs().size(); ++i) {
      const Value *output = graph.outputs()[i];
      out_ += (i ? ", " : "") + valueRef(output) + ": " + (output ? printType(output->type()) : "?");
    }
    out_ += ") {\n";
    std::string pad(static_cast<size_t>(indent) + 2, ' ');
    std::unordered_set<const Value *> seen;
    for (const Value *value : graph.initializers()) {
      if (value->isGraphInput() || !seen.insert(value).second) continue;
      out_ += pad + "const " + valueRef(value) + " = " + printTensor(value->initializer(), options_);
      Type tensorType = Type::tensor(value->initializer().dtype(), Shape::fromSizes(value->initializer().sizes()));
      if (!(value->type() == tensorType)) out_ += " : " + printType(value->type());
      out_ += "\n";
    }
    for (const auto &node : graph.nodes()) printNode(*node, indent + 2);
    out_ += pad + "return";
    for (size_t i = 0; i < graph.outputs().size(); ++i) out_ += (i ? ", " : " ") + valueRef(graph.outputs()[i]);
    out_ += "\n" + std::string(static_cast<size_t>(indent), ' ') + "}";
  }

 private:
  void printNode(const Node &node, int indent) {
    out_ += std::string(static_cast<size_t>(indent), ' ');
    for (size_t i = 0; i < node.outputs().size(); ++i) out_ += (i ? ", " : "") + valueRef(node.outputs()[i]);
    if (!node.outputs().empty()) out_ += " = ";
    out_ += opRef(node) + "(";
    for (size_t i = 0; i < node.inputs().size(); ++i) out_ += (i ? ", " : "") + valueRef(node.inputs()[i]);
    out_ += ")";
    printAttributes(node, indent);
    if (!node.name().empty()) out_ += " name=" + quoteString(node.name());
    if (options_.printValueTypes) printOutputTypes(node);
    out_ += "\n";
  }

  void printOutputTypes(const Node &node) {
    bool anyKnown = false;
    for (const Value *out : node.outputs()) anyKnown |= out && out->type().kind() != Type::Kind::Unknown;
    if (!anyKnown) return;
    out_ += " : ";
    for (size_t i = 0; i < node.outputs().size(); ++i) {
      const Value *out = node.output(i);
      out_ += (i ? ", " : "") + (out ? printType(out->type()) : std::string("_"));
    }
  }

  void printAttributes(const Node &node, int indent) {
    if (node.attributes().empty()) return;
    // Subgraphs are multi-line: then each attribute gets its own line.
    bool multiline = !node.subgraphs().empty();
    std::string pad(static_cast<size_t>(indent) + 2, ' ');
    out_ += " {";
    for (size_t i = 0; i < node.attributes().size(); ++i) {
      const auto &[name, attr] = node.attributes()[i];
      if (multiline) {
        out_ += (i ? ",\n" : "\n") + pad;
      } else if (i) {
        out_ += ", ";
      }
      out_ += identOrQuoted(name) + " = ";
      printAttribute(attr, indent + 2);
    }
    if (multiline) out_ += "\n" + std::string(static_cast<size_t>(indent), ' ');
    out_ += "}";
  }

  template <class T, class Fn>
  void printList(const std::vector<T> &items, const char *emptyName, Fn &&printItem) {
    if (items.empty()) {
      out_ += std::string(emptyName) + "[]";
      return;
    }
    out_ += "[";
    for (size_t i = 0; i < items.size(); ++i) {
      if (i) out_ += ", ";
      printItem(items[i]);
    }
    out_ += "]";
  }

  void printAttribute(const Attribute &attr, int indent) {
    using Kind = Attribute::Kind;
    using GraphPtr = Attribute::GraphPtr;
    auto graph = [&](const GraphPtr &g) {
      if (g) return printGraph(*g, indent);
      out_ += "<null graph>";  // Invalid IR (the verifier rejects it), printed rather than crashed on.
    };
    auto type = [&](const Type &t) { out_ += "type<" + printType(t) + ">"; };
    switch (attr.kind()) {
      case Kind::Float: out_ += formatFloatAttr(attr.get<float>()); return;
      case Kind::Int: out_ += std::to_string(attr.get<int64_t>()); return;
      case Kind::String: out_ += quoteString(attr.get<std::string>()); return;
      case Kind::Tensor: out_ += printTensor(attr.get<Tensor>(), options_); return;
      case Kind::Graph: return graph(attr.get<GraphPtr>());
      case Kind::Type: return type(attr.get<Type>());
      case Kind::Floats:
        return printList(attr.get<std::vector<float>>(), "floats", [&](float f) { out_ += formatFloatAttr(f); });
      case Kind::Ints:
        return printList(attr.get<std::vector<int64_t>>(), "ints", [&](int64_t v) { out_ += std::to_string(v); });
      case Kind::Strings:
        return printList(attr.get<std::vector<std::string>>(), "strings",
                         [&](const std::string &s) { out_ += quoteString(s); });
      case Kind::Tensors:
        return printList(attr.get<std::vector<Tensor>>(), "tensors",
                         [&](const Tensor &t) { out_ += printTensor(t, options_); });
      case Kind::Graphs: return printList(attr.get<std::vector<GraphPtr>>(), "graphs", graph);
      case Kind::Types: return printList(attr.get<std::vector<Type>>(), "types", type);
    }
  }

  const PrintOptions &options_;

 public:
  std::string out_;
};

}  // namespace

std::string printType(const Type &type) {
  switch (type.kind()) {
    case Type::Kind::Unknown: return "?";
    case Type::Kind::Tensor: return std::string(dtypeName(type.dtype())) + printShape(type.shape());
    case Type::Kind::Sequence: return "seq<" + printType(type.element()) + ">";
    case Type::Kind::Optional: return "opt<" + printType(type.element()) + ">";
  }
  return "?";
}

std::string printTensor(const Tensor &tensor, const PrintOptions &options) {
  std::string out = "dense<" + std::string(dtypeName(tensor.dtype())) + formatSizes(tensor.sizes());
  if (!tensor.defined() || tensor.numel() == 0) return out + ">";
  if (options.elideLargeTensors && tensor.numel() > options.maxInlineElements) {
    return out + fmt::format(" ... hash=0x{:016x}>", contentHash(tensor));
  }
  out += ":";
  appendElements(out, tensor);
  return out + ">";
}

std::string printModel(const Model &model, const PrintOptions &options) {
  Printer printer(options);
  printer.printModel(model);
  return std::move(printer.out_);
}

std::string printGraph(const Graph &graph, const PrintOptions &options, int indent) {
  Printer printer(options);
  printer.printGraph(graph, indent);
  return std::move(printer.out_) + "\n";
}

}  // namespace tessel
