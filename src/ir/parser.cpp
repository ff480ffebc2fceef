// Parser of the text IR: models, graphs, nodes and attributes on top of the literal parser. Names
// resolve through a chain of scopes, one per graph being parsed, so a subgraph reads values of its
// enclosing graphs that were defined before the node that holds it.
#include "ir/parser.h"

#include <fstream>
#include <sstream>
#include <unordered_map>
#include <unordered_set>

#include "ir/parser_literals.h"

namespace tessel {

namespace {

using text::LiteralParser;
using text::Token;
using text::TokenKind;

/// The values visible in one graph: its own definitions so far, then its enclosing graphs'.
struct Scope {
  Graph *graph;
  const Scope *parent;
  std::unordered_map<std::string, Value *> names;

  Value *lookup(const std::string &name) const {
    for (const Scope *s = this; s; s = s->parent) {
      auto it = s->names.find(name);
      if (it != s->names.end()) return it->second;
    }
    return nullptr;
  }
};

/// A declared graph output: `%y: f32[2]` in the signature, matched against `return` at the end.
struct DeclaredOutput {
  Token name;
  Type type;
};

class ModelParser : public LiteralParser {
 public:
  using LiteralParser::LiteralParser;

  Expected<Model> parseModel(const std::string &fileName) {
    Model model;
    model.sourcePath = fileName;
    TESSEL_RETURN_IF_ERROR(expectWord("model", "at the start of the file"));
    TESSEL_RETURN_IF_ERROR(expectWord("opset", "after 'model'"));
    TESSEL_RETURN_IF_ERROR(expect(TokenKind::LParen, "after 'opset'").status());
    while (!at(TokenKind::RParen)) {
      if (!model.opsetImports.empty()) TESSEL_RETURN_IF_ERROR(expect(TokenKind::Comma, "between opsets").status());
      Token domain = take();
      if (domain.kind != TokenKind::Ident && domain.kind != TokenKind::String) {
        return errorAt(domain, fmt::format("expected an opset domain, got {}", describeToken(domain)));
      }
      std::string key = domain.text == "ai.onnx" ? "" : domain.text;
      TESSEL_RETURN_IF_ERROR(expect(TokenKind::Equal, "after the opset domain").status());
      TESSEL_ASSIGN_OR_RETURN(int64_t version, parseInt("as the opset version"));
      if (!model.opsetImports.emplace(key, version).second) {
        return errorAt(domain, fmt::format("opset domain '{}' is imported twice", domain.text));
      }
    }
    take();
    while (!at(TokenKind::LBrace)) TESSEL_RETURN_IF_ERROR(parseModelField(model));
    take();
    TESSEL_ASSIGN_OR_RETURN(model.graph, parseFunc(nullptr, nullptr));
    TESSEL_RETURN_IF_ERROR(expect(TokenKind::RBrace, "to close the model").status());
    TESSEL_RETURN_IF_ERROR(expect(TokenKind::Eof, "after the model").status());
    return model;
  }

 private:
  Status parseModelField(Model &model) {
    if (!at(TokenKind::Ident)) return unexpected("a model field or '{'", "in the model header");
    Token field = take();
    TESSEL_RETURN_IF_ERROR(expect(TokenKind::Equal, fmt::format("after '{}'", field.text)).status());
    std::string context = fmt::format("as the value of '{}'", field.text);
    if (field.text == "ir_version") {
      TESSEL_ASSIGN_OR_RETURN(model.irVersion, parseInt(context));
    } else if (field.text == "model_version") {
      TESSEL_ASSIGN_OR_RETURN(model.modelVersion, parseInt(context));
    } else if (field.text == "producer") {
      TESSEL_ASSIGN_OR_RETURN(model.producerName, parseString(context));
    } else if (field.text == "producer_version") {
      TESSEL_ASSIGN_OR_RETURN(model.producerVersion, parseString(context));
    } else if (field.text == "domain") {
      TESSEL_ASSIGN_OR_RETURN(model.domain, parseString(context));
    } else if (field.text == "doc") {
      TESSEL_ASSIGN_OR_RETURN(model.docString, parseString(context));
    } else if (field.text == "metadata") {
      TESSEL_RETURN_IF_ERROR(expect(TokenKind::LBrace, "to open the metadata").status());
      while (!at(TokenKind::RBrace)) {
        if (!model.metadata.empty())
          TESSEL_RETURN_IF_ERROR(expect(TokenKind::Comma, "between metadata entries").status());
        TESSEL_ASSIGN_OR_RETURN(std::string key, parseString("as a metadata key"));
        TESSEL_RETURN_IF_ERROR(expect(TokenKind::Equal, "after the metadata key").status());
        TESSEL_ASSIGN_OR_RETURN(std::string value, parseString("as a metadata value"));
        model.metadata.emplace_back(std::move(key), std::move(value));
      }
      take();
    } else {
      return errorAt(field, fmt::format("unknown model field '{}'", field.text));
    }
    return Status::success();
  }

  /// Adds `name` to `scope`, failing when the graph already defines it.
  Status define(Scope &scope, const Token &name, Value *value) {
    if (!scope.names.emplace(name.text, value).second) {
      return errorAt(name, fmt::format("value '%{}' is defined twice in graph '@{}'", name.text, scope.graph->name()));
    }
    return Status::success();
  }

  Expected<Token> expectValueName(std::string_view context) {
    TESSEL_ASSIGN_OR_RETURN(Token name, expect(TokenKind::ValueName, context));
    if (name.text.empty()) return errorAt(name, "a value name cannot be empty");
    return name;
  }

  /// `%name` or `_`; nullptr for `_`.
  Expected<Value *> parseUse(const Scope &scope, std::string_view context) {
    if (atWord("_")) {
      take();
      return static_cast<Value *>(nullptr);
    }
    TESSEL_ASSIGN_OR_RETURN(Token name, expectValueName(context));
    Value *value = scope.lookup(name.text);
    if (!value) return errorAt(name, fmt::format("use of undefined value '%{}'", name.text));
    return value;
  }

  Expected<std::shared_ptr<Graph>> parseFunc(const Scope *parent, Node *owner) {
    TESSEL_RETURN_IF_ERROR(expectWord("func", "to start a graph"));
    TESSEL_ASSIGN_OR_RETURN(Token name, expect(TokenKind::GraphName, "after 'func'"));
    auto graph = std::make_shared<Graph>(name.text);
    graph->setParentNode(owner);
    Scope scope{graph.get(), parent, {}};
    TESSEL_RETURN_IF_ERROR(expect(TokenKind::LParen, "to open the graph inputs").status());
    while (!at(TokenKind::RParen)) {
      if (!graph->inputs().empty()) TESSEL_RETURN_IF_ERROR(expect(TokenKind::Comma, "between graph inputs").status());
      TESSEL_ASSIGN_OR_RETURN(Token input, expectValueName("as a graph input"));
      TESSEL_RETURN_IF_ERROR(expect(TokenKind::Colon, "after the graph input name").status());
      TESSEL_ASSIGN_OR_RETURN(Type type, parseType());
      Value *value = graph->addInput(input.text, type);
      TESSEL_RETURN_IF_ERROR(define(scope, input, value));
      if (!at(TokenKind::Equal)) continue;
      take();
      TESSEL_ASSIGN_OR_RETURN(Tensor initializer, parseTensor());
      graph->addInitializer(input.text, std::move(initializer));
      value->setType(std::move(type));  // The declared type, which may be less precise than the default's.
    }
    take();
    TESSEL_RETURN_IF_ERROR(expect(TokenKind::Arrow, "after the graph inputs").status());
    TESSEL_RETURN_IF_ERROR(expect(TokenKind::LParen, "to open the graph outputs").status());
    std::vector<DeclaredOutput> outputs;
    while (!at(TokenKind::RParen)) {
      if (!outputs.empty()) TESSEL_RETURN_IF_ERROR(expect(TokenKind::Comma, "between graph outputs").status());
      TESSEL_ASSIGN_OR_RETURN(Token output, expectValueName("as a graph output"));
      TESSEL_RETURN_IF_ERROR(expect(TokenKind::Colon, "after the graph output name").status());
      TESSEL_ASSIGN_OR_RETURN(Type type, parseType());
      outputs.push_back({std::move(output), std::move(type)});
    }
    take();
    TESSEL_RETURN_IF_ERROR(expect(TokenKind::LBrace, "to open the graph body").status());
    while (!atWord("return")) {
      if (atWord("const")) {
        TESSEL_RETURN_IF_ERROR(parseConst(*graph, scope));
      } else {
        TESSEL_RETURN_IF_ERROR(parseNode(*graph, scope));
      }
    }
    TESSEL_RETURN_IF_ERROR(parseReturn(*graph, scope, outputs));
    TESSEL_RETURN_IF_ERROR(expect(TokenKind::RBrace, fmt::format("to close graph '@{}'", graph->name())).status());
    return graph;
  }

  Status parseReturn(Graph &graph, const Scope &scope, const std::vector<DeclaredOutput> &declared) {
    Token keyword = take();
    size_t index = 0;
    while (at(TokenKind::ValueName)) {
      Token name = peek();
      TESSEL_ASSIGN_OR_RETURN(Value * value, parseUse(scope, "in 'return'"));
      if (index >= declared.size() || declared[index].name.text != name.text) {
        return errorAt(
            name, fmt::format("'return' lists '%{}' where the signature of '@{}' declares {}", name.text, graph.name(),
                              index < declared.size() ? "'%" + declared[index].name.text + "'" : "no more outputs"));
      }
      value->setType(declared[index].type);
      graph.addOutput(value);
      ++index;
      if (!at(TokenKind::Comma)) break;
      take();
      if (!at(TokenKind::ValueName)) return unexpected("a value name", "after ',' in 'return'");
    }
    if (index != declared.size()) {
      return errorAt(keyword, fmt::format("'return' lists {} values; the signature of '@{}' declares {}", index,
                                          graph.name(), declared.size()));
    }
    return Status::success();
  }

  Status parseConst(Graph &graph, Scope &scope) {
    take();
    TESSEL_ASSIGN_OR_RETURN(Token name, expectValueName("after 'const'"));
    if (scope.names.count(name.text)) {
      return errorAt(name, fmt::format("value '%{}' is defined twice in graph '@{}'", name.text, scope.graph->name()));
    }
    TESSEL_RETURN_IF_ERROR(expect(TokenKind::Equal, "after the constant's name").status());
    TESSEL_ASSIGN_OR_RETURN(Tensor tensor, parseTensor());
    Value *value = graph.addInitializer(name.text, std::move(tensor));
    TESSEL_RETURN_IF_ERROR(define(scope, name, value));
    if (at(TokenKind::Colon)) {
      take();
      TESSEL_ASSIGN_OR_RETURN(Type type, parseType());
      value->setType(std::move(type));
    }
    return Status::success();
  }

  Status parseNode(Graph &graph, Scope &scope) {
    std::vector<Token> outputNames;  // Kind Ident for `_`.
    if (at(TokenKind::ValueName) || atWord("_")) {
      while (true) {
        if (atWord("_")) {
          outputNames.push_back(take());
        } else {
          TESSEL_ASSIGN_OR_RETURN(Token name, expectValueName("as a node output"));
          outputNames.push_back(std::move(name));
        }
        if (!at(TokenKind::Comma)) break;
        take();
      }
      TESSEL_RETURN_IF_ERROR(expect(TokenKind::Equal, "after the node outputs").status());
    }
    if (!at(TokenKind::Ident) && !at(TokenKind::String)) return unexpected("an op name", "");
    Token op = take();
    std::string opType = op.text, domain;
    size_t dot = op.text.rfind('.');
    if (op.kind == TokenKind::Ident && dot != std::string::npos) {
      domain = op.text.substr(0, dot);
      opType = op.text.substr(dot + 1);
    } else if (op.kind == TokenKind::String && at(TokenKind::Colon)) {  // "domain":"op"
      take();
      domain = std::move(opType);
      TESSEL_ASSIGN_OR_RETURN(opType, parseString("as the op type after its domain"));
    }
    std::string context = fmt::format("of node {}", opType);
    TESSEL_RETURN_IF_ERROR(expect(TokenKind::LParen, fmt::format("after op '{}'", op.text)).status());
    std::vector<Value *> inputs;
    while (!at(TokenKind::RParen)) {
      if (!inputs.empty()) TESSEL_RETURN_IF_ERROR(expect(TokenKind::Comma, "between the inputs " + context).status());
      TESSEL_ASSIGN_OR_RETURN(Value * input, parseUse(scope, "as an input " + context));
      inputs.push_back(input);
    }
    take();
    std::vector<std::string> names;
    std::unordered_set<std::string> seen;
    for (const Token &name : outputNames) {
      bool omitted = name.kind == TokenKind::Ident;
      if (!omitted && (scope.names.count(name.text) || !seen.insert(name.text).second)) {
        return errorAt(name, fmt::format("value '%{}' is defined twice in graph '@{}'", name.text, graph.name()));
      }
      names.push_back(omitted ? "" : name.text);
    }
    Node *node = graph.addNode(opType, std::move(inputs), names, "", domain);
    node->setSourceIndex(static_cast<int>(graph.numNodes()) - 1);
    if (at(TokenKind::LBrace)) TESSEL_RETURN_IF_ERROR(parseAttributes(*node, scope));
    if (atWord("name")) {
      take();
      TESSEL_RETURN_IF_ERROR(expect(TokenKind::Equal, "after 'name'").status());
      TESSEL_ASSIGN_OR_RETURN(std::string name, parseString("as the node name"));
      node->setName(std::move(name));
    }
    if (at(TokenKind::Colon)) TESSEL_RETURN_IF_ERROR(parseOutputTypes(*node));
    for (size_t i = 0; i < outputNames.size(); ++i) {
      if (node->output(i)) TESSEL_RETURN_IF_ERROR(define(scope, outputNames[i], node->output(i)));
    }
    return Status::success();
  }

  Status parseOutputTypes(Node &node) {
    Token colon = take();
    for (size_t i = 0;; ++i) {
      if (i >= node.outputs().size()) {
        return errorAt(colon,
                       fmt::format("node {} has {} outputs but more types", node.opType(), node.outputs().size()));
      }
      if (atWord("_")) {
        take();
        if (node.output(i))
          return errorAt(colon, fmt::format("type {} of node {} is '_' for a present output", i, node.opType()));
      } else {
        TESSEL_ASSIGN_OR_RETURN(Type type, parseType());
        if (!node.output(i))
          return errorAt(colon, fmt::format("type {} of node {} is for an omitted output", i, node.opType()));
        node.output(i)->setType(std::move(type));
      }
      if (!at(TokenKind::Comma)) {
        if (i + 1 != node.outputs().size()) {
          return errorAt(
              colon, fmt::format("node {} has {} outputs but {} types", node.opType(), node.outputs().size(), i + 1));
        }
        return Status::success();
      }
      take();
    }
  }

  Status parseAttributes(Node &node, const Scope &scope) {
    take();
    while (!at(TokenKind::RBrace)) {
      if (!node.attributes().empty()) {
        TESSEL_RETURN_IF_ERROR(
            expect(TokenKind::Comma, fmt::format("between the attributes of node {}", node.opType())).status());
      }
      if (!at(TokenKind::Ident) && !at(TokenKind::String)) return unexpected("an attribute name", "");
      Token name = take();
      if (node.hasAttr(name.text)) return errorAt(name, fmt::format("attribute '{}' is given twice", name.text));
      TESSEL_RETURN_IF_ERROR(expect(TokenKind::Equal, fmt::format("after attribute '{}'", name.text)).status());
      TESSEL_ASSIGN_OR_RETURN(Attribute value, parseAttributeValue(node, scope, name.text));
      node.setAttr(name.text, std::move(value));
    }
    take();
    return Status::success();
  }

  Expected<Attribute> parseAttributeValue(Node &node, const Scope &scope, const std::string &name) {
    std::string context = fmt::format("as the value of attribute '{}'", name);
    if (at(TokenKind::LBracket)) return parseList(node, scope, context);
    for (const char *kind : {"floats", "ints", "strings", "tensors", "graphs", "types"}) {
      if (atWord(kind)) return parseEmptyList(kind);
    }
    TESSEL_ASSIGN_OR_RETURN(Attribute value, parseScalar(node, scope, context));
    return value;
  }

  /// A single attribute value (not a list).
  Expected<Attribute> parseScalar(Node &node, const Scope &scope, const std::string &context) {
    if (at(TokenKind::Integer)) {
      TESSEL_ASSIGN_OR_RETURN(int64_t value, parseInt(context));
      return Attribute(value);
    }
    if (at(TokenKind::Float) || at(TokenKind::Minus) || atWord("inf") || atWord("nan")) {
      TESSEL_ASSIGN_OR_RETURN(float value, parseFloat(context));
      return Attribute(value);
    }
    if (at(TokenKind::String)) return Attribute(take().text);
    if (atWord("dense")) {
      TESSEL_ASSIGN_OR_RETURN(Tensor tensor, parseTensor());
      return Attribute(std::move(tensor));
    }
    if (atWord("func")) {
      TESSEL_ASSIGN_OR_RETURN(Attribute::GraphPtr graph, parseFunc(&scope, &node));
      return Attribute(std::move(graph));
    }
    if (atWord("type")) {
      take();
      TESSEL_RETURN_IF_ERROR(expect(TokenKind::Less, "after 'type'").status());
      TESSEL_ASSIGN_OR_RETURN(Type type, parseType());
      TESSEL_RETURN_IF_ERROR(expect(TokenKind::Greater, "to close 'type<'").status());
      return Attribute(std::move(type));
    }
    return unexpected("an attribute value", context);
  }

  Expected<Attribute> parseEmptyList(const std::string &kind) {
    take();
    TESSEL_RETURN_IF_ERROR(expect(TokenKind::LBracket, fmt::format("after '{}'", kind)).status());
    TESSEL_RETURN_IF_ERROR(expect(TokenKind::RBracket, fmt::format("in the empty list '{}[]'", kind)).status());
    if (kind == "floats") return Attribute(std::vector<float>{});
    if (kind == "ints") return Attribute(std::vector<int64_t>{});
    if (kind == "strings") return Attribute(std::vector<std::string>{});
    if (kind == "tensors") return Attribute(std::vector<Tensor>{});
    if (kind == "graphs") return Attribute(std::vector<Attribute::GraphPtr>{});
    return Attribute(std::vector<Type>{});
  }

  /// `[a, b, ...]`: the first element fixes the kind; every other element must have it too.
  Expected<Attribute> parseList(Node &node, const Scope &scope, const std::string &context) {
    Token open = take();
    if (at(TokenKind::RBracket)) {
      return errorAt(open, "an empty list needs its kind, e.g. 'ints[]' or 'floats[]'");
    }
    std::vector<Attribute> items;
    while (true) {
      Token start = peek();
      TESSEL_ASSIGN_OR_RETURN(Attribute item, parseScalar(node, scope, "in the list " + context));
      // A float list may hold integer spellings after its first element.
      if (!items.empty() && items[0].is<float>() && item.is<int64_t>()) {
        item = Attribute(static_cast<float>(item.get<int64_t>()));
      }
      if (!items.empty() && item.kind() != items[0].kind()) {
        return errorAt(start, fmt::format("list element is a {} but the list holds {}s", attributeKindName(item.kind()),
                                          attributeKindName(items[0].kind())));
      }
      items.push_back(std::move(item));
      if (at(TokenKind::RBracket)) break;
      TESSEL_RETURN_IF_ERROR(expect(TokenKind::Comma, "between list elements").status());
    }
    take();
    return std::visit([&](const auto &first) -> Attribute { return collect<std::decay_t<decltype(first)>>(items); },
                      items[0].storage());
  }

  template <class T>
  static Attribute collect(const std::vector<Attribute> &items) {
    if constexpr (std::is_same_v<T, float> || std::is_same_v<T, int64_t> || std::is_same_v<T, std::string> ||
                  std::is_same_v<T, Tensor> || std::is_same_v<T, Attribute::GraphPtr> || std::is_same_v<T, Type>) {
      std::vector<T> values;
      values.reserve(items.size());
      for (const Attribute &item : items) values.push_back(item.get<T>());
      return Attribute(std::move(values));
    } else {
      return Attribute();  // Lists never hold lists: parseScalar does not return one.
    }
  }
};

}  // namespace

Expected<Model> parseModel(std::string_view text, const std::string &fileName) {
  ModelParser parser(text, fileName);
  return parser.parseModel(fileName);
}

Expected<Model> parseModelFile(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return makeFileError(ErrorCode::FileNotFound, path, "cannot open the file");
  std::ostringstream buffer;
  buffer << in.rdbuf();
  if (in.bad()) return makeFileError(ErrorCode::IoError, path, "cannot read the file");
  return parseModel(buffer.str(), path);
}

Expected<Type> parseType(std::string_view text) {
  LiteralParser parser(text, "<type>");
  TESSEL_ASSIGN_OR_RETURN(Type type, parser.parseType());
  TESSEL_RETURN_IF_ERROR(parser.expect(TokenKind::Eof, "after the type").status());
  return type;
}

}  // namespace tessel
