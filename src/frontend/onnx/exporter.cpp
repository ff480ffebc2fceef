// Model -> ModelProto. Each graph is written in two steps: first every value it defines (inputs,
// initializers, node outputs) gets its ONNX name in a scope that chains to the enclosing graphs,
// then inputs, initializers, nodes (subgraphs recursively, in a child scope), value_info and
// outputs are written. Naming everything first lets a subgraph refer to any outer value by name,
// and lets a node read a value defined later in the list (the importer accepts either order).
#include "frontend/onnx/exporter.h"

#include <climits>
#include <fstream>
#include <unordered_map>
#include <unordered_set>

#include "ops/onnx_schema_bridge.h"

namespace tessel {

namespace {

/// The ONNX names of the values one graph defines, chained to the enclosing graphs' scopes.
struct Scope {
  const Scope *parent = nullptr;
  std::unordered_map<const Value *, std::string> names;
  std::unordered_set<std::string> used;

  const std::string *lookup(const Value *value) const {
    for (const Scope *s = this; s; s = s->parent) {
      auto it = s->names.find(value);
      if (it != s->names.end()) return &it->second;
    }
    return nullptr;
  }
  bool isUsed(const std::string &name) const {
    for (const Scope *s = this; s; s = s->parent) {
      if (s->used.count(name)) return true;
    }
    return false;
  }
};

class Exporter {
 public:
  explicit Exporter(const InitializerSink &sink = {}) : sink_(sink) {}

  Status exportModel(const Model &model, onnx::ModelProto &proto) {
    if (model.opsetImports.empty()) {
      return makeError(ErrorCode::InvalidModel, "the model imports no opset; ONNX needs at least one opset_import");
    }
    if (!model.graph) return makeError(ErrorCode::InvalidModel, "the model has no graph");
    proto.set_ir_version(model.irVersion);
    for (const auto &[domain, version] : model.opsetImports) {
      auto *opset = proto.add_opset_import();
      opset->set_domain(domain);
      opset->set_version(version);
    }
    proto.set_producer_name(model.producerName);
    proto.set_producer_version(model.producerVersion);
    proto.set_domain(model.domain);
    proto.set_model_version(model.modelVersion);
    proto.set_doc_string(model.docString);
    for (const auto &[key, value] : model.metadata) {
      auto *entry = proto.add_metadata_props();
      entry->set_key(key);
      entry->set_value(value);
    }
    exportGraph(*model.graph, nullptr, *proto.mutable_graph());
    return status_;
  }

 private:
  const InitializerSink &sink_;

  /// Records the first error; later ones are usually consequences of it.
  void fail(Diagnostic diag) {
    if (status_.ok()) status_ = std::move(diag);
  }

  /// Gives `value` its ONNX name in `scope`: its own name unless empty or taken by another value.
  void define(const Value *value, Scope &scope) {
    if (!value || scope.names.count(value)) return;
    const std::string hint = value->name().empty() ? "value" : value->name();
    std::string name = hint;
    for (int64_t counter = 0; name.empty() || scope.isUsed(name); ++counter) {
      name = hint + "_" + std::to_string(counter);
    }
    scope.used.insert(name);
    scope.names.emplace(value, std::move(name));
  }

  /// Defines, in `scope`, every value `graph` defines.
  void defineValues(const Graph &graph, Scope &scope) {
    for (const Value *input : graph.inputs()) define(input, scope);
    for (const Value *init : graph.initializers()) define(init, scope);
    for (const auto &node : graph.nodes()) {
      for (const Value *out : node->outputs()) define(out, scope);
    }
  }

  std::string nameOf(const Value *value, const Scope &scope, const Graph &graph, const Node *reader) {
    if (!value) return "";
    if (const std::string *name = scope.lookup(value)) return *name;
    Diagnostic diag = makeError(ErrorCode::InvalidModel,
                                "value '{}' is read in graph '{}' but is not defined there or in an enclosing graph",
                                value->name(), graph.name());
    if (reader) diag.loc = locationOf(*reader, "");
    fail(std::move(diag));
    return value->name();
  }

  void writeValueInfo(const std::string &name, const Type &type, onnx::ValueInfoProto &info) {
    info.set_name(name);
    if (type.kind() != Type::Kind::Unknown) onnx_bridge::typeToProto(type, *info.mutable_type());
  }

  void exportNode(const Node &node, const Scope &scope, const Graph &graph, onnx::NodeProto &proto) {
    proto.set_op_type(node.opType());
    if (!node.domain().empty()) proto.set_domain(node.domain());
    if (!node.name().empty()) proto.set_name(node.name());
    for (const Value *input : node.inputs()) proto.add_input(nameOf(input, scope, graph, &node));
    for (const Value *output : node.outputs()) proto.add_output(output ? *scope.lookup(output) : "");
    onnx_bridge::GraphWriter writeSubgraph = [&](const Graph &subgraph, onnx::GraphProto &subproto) {
      exportGraph(subgraph, &scope, subproto);
    };
    for (const auto &[name, attr] : node.attributes()) {
      onnx_bridge::attributeToProto(name, attr, *proto.add_attribute(), writeSubgraph);
    }
  }

  void exportGraph(const Graph &graph, const Scope *parent, onnx::GraphProto &proto) {
    Scope scope;
    scope.parent = parent;
    defineValues(graph, scope);
    proto.set_name(graph.name());

    for (const Value *input : graph.inputs()) writeValueInfo(scope.names.at(input), input->type(), *proto.add_input());
    for (const Value *init : graph.initializers()) {
      auto *tensor = proto.add_initializer();
      const std::string &name = scope.names.at(init);
      const Tensor &t = init->initializer();
      if (parent == nullptr && sink_.take && t.dtype() != DType::String && t.numBytes() >= sink_.bytes && sink_.take(name, t)) {
        tensor->set_data_type(static_cast<int32_t>(t.dtype()));
        for (int64_t s : t.sizes()) tensor->add_dims(s);
      } else {
        onnx_bridge::tensorToProto(t, *tensor);
      }
      tensor->set_name(name);
    }
    for (const auto &node : graph.nodes()) exportNode(*node, scope, graph, *proto.add_node());

    std::unordered_set<const Value *> declared(graph.inputs().begin(), graph.inputs().end());
    declared.insert(graph.outputs().begin(), graph.outputs().end());
    for (const auto &node : graph.nodes()) {
      for (const Value *out : node->outputs()) {
        if (!out || declared.count(out) || out->type().kind() == Type::Kind::Unknown) continue;
        writeValueInfo(scope.names.at(out), out->type(), *proto.add_value_info());
      }
    }
    for (const Value *output : graph.outputs()) {
      writeValueInfo(nameOf(output, scope, graph, nullptr), output ? output->type() : Type(), *proto.add_output());
    }
  }

  Status status_;
};

}  // namespace

Expected<onnx::ModelProto> exportOnnxProto(const Model &model, const InitializerSink &sink) {
  onnx::ModelProto proto;
  Exporter exporter(sink);
  TESSEL_RETURN_IF_ERROR(exporter.exportModel(model, proto));
  return proto;
}

Expected<std::string> exportOnnxBytes(const Model &model) {
  TESSEL_ASSIGN_OR_RETURN(onnx::ModelProto proto, exportOnnxProto(model));
  const size_t sizeBytes = proto.ByteSizeLong();
  if (sizeBytes > static_cast<size_t>(INT_MAX)) {
    return makeError(ErrorCode::InvalidArgument,
                     "the model serializes to {} bytes, over protobuf's 2 GiB limit; tessel cannot yet export "
                     "tensors as external data",
                     sizeBytes);
  }
  std::string bytes;
  if (!proto.SerializeToString(&bytes)) {
    return makeError(ErrorCode::Internal, "protobuf failed to serialize the model ({} bytes)", sizeBytes);
  }
  return bytes;
}

Status exportOnnxFile(const Model &model, const std::string &path) {
  TESSEL_ASSIGN_OR_RETURN(std::string bytes, exportOnnxBytes(model));
  SourceLoc where;
  where.file = path;
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) return Diagnostic{ErrorCode::IoError, "cannot open the file for writing", where};
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  out.close();
  if (!out) return Diagnostic{ErrorCode::IoError, fmt::format("failed writing {} bytes", bytes.size()), where};
  return Status::success();
}

}  // namespace tessel
