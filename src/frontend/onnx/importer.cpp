// ModelProto -> Model. Order of work: parse, check opsets, ONNX shape inference (on a copy, so a
// failure there leaves the model loadable), then convert graphs recursively with a scope chain so
// subgraphs can read outer values, and finally sort each graph topologically (rejecting cycles).
#include "frontend/onnx/importer.h"

#include <algorithm>
#include <filesystem>
#include <map>
#include <fstream>
#include <sstream>
#include <unordered_map>

#include <onnx/defs/schema.h>
#include <onnx/onnx_pb.h>
#include <onnx/shape_inference/implementation.h>

#include "frontend/onnx/tensor_proto.h"
#include "ops/onnx_schema_bridge.h"
#include "ops/registry.h"

namespace tessel {

namespace {

using onnx_frontend::tensorFromProto;
using onnx_frontend::tensorFromSparseProto;
using onnx_bridge::typeFromProto;

/// Names visible while importing one graph: its own values, then its enclosing graphs'.
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

class Importer {
 public:
  Importer(const std::string &path, Model &model) : path_(path), model_(model) {
    baseDir_ = std::filesystem::path(path).parent_path().string();
    if (baseDir_.empty()) baseDir_ = ".";
  }

  Status importModel(const onnx::ModelProto &proto) {
    if (proto.functions_size() > 0) {
      return fileError(ErrorCode::UnsupportedOp, "model-local functions ({} defined, first '{}') are not supported",
                       proto.functions_size(), proto.functions(0).name());
    }
    model_.irVersion = proto.ir_version();
    model_.producerName = proto.producer_name();
    model_.producerVersion = proto.producer_version();
    model_.domain = proto.domain();
    model_.modelVersion = proto.model_version();
    model_.docString = proto.doc_string();
    for (const auto &kv : proto.metadata_props()) model_.metadata.emplace_back(kv.key(), kv.value());
    if (!proto.has_graph()) return fileError(ErrorCode::InvalidModel, "the model has no graph");
    TESSEL_ASSIGN_OR_RETURN(model_.graph, importGraph(proto.graph(), nullptr, nullptr));
    return Status::success();
  }

  /// Reads opset_import into the model; rejects versions outside the supported range.
  Status importOpsets(const onnx::ModelProto &proto) {
    for (const auto &opset : proto.opset_import()) {
      std::string domain = opset.domain() == "ai.onnx" ? "" : opset.domain();
      if (domain.empty() && (opset.version() < kMinOnnxOpset || opset.version() > kMaxOnnxOpset)) {
        return fileError(ErrorCode::UnsupportedOpset, "the model imports ai.onnx opset {}; tessel supports {} to {}",
                         opset.version(), kMinOnnxOpset, kMaxOnnxOpset);
      }
      model_.opsetImports[domain] = opset.version();
    }
    if (proto.opset_import_size() == 0) {
      return fileError(ErrorCode::InvalidModel, "the model imports no opset (opset_import is empty)");
    }
    return Status::success();
  }

 private:
  template <class... Args>
  Diagnostic fileError(ErrorCode code, fmt::format_string<Args...> format, Args &&...args) {
    Diagnostic d = makeError(code, format, std::forward<Args>(args)...);
    d.loc.file = path_;
    return d;
  }

  Diagnostic nodeError(const onnx::NodeProto &node, int index, Diagnostic diag) {
    diag.loc = SourceLoc{path_, node.name(), node.op_type(), index};
    return diag;
  }

  Expected<Attribute> convertAttribute(const onnx::AttributeProto &a, const Scope &scope, Node *owner) {
    using A = onnx::AttributeProto;
    switch (a.type()) {
      case A::FLOAT: return Attribute(a.f());
      case A::INT: return Attribute(static_cast<int64_t>(a.i()));
      case A::STRING: return Attribute(a.s());
      case A::TENSOR: {
        TESSEL_ASSIGN_OR_RETURN(Tensor t, tensorFromProto(a.t(), baseDir_));
        return Attribute(std::move(t));
      }
      case A::SPARSE_TENSOR: {
        TESSEL_ASSIGN_OR_RETURN(Tensor t, tensorFromSparseProto(a.sparse_tensor(), baseDir_));
        return Attribute(std::move(t));
      }
      case A::GRAPH: {
        TESSEL_ASSIGN_OR_RETURN(std::shared_ptr<Graph> g, importGraph(a.g(), &scope, owner));
        return Attribute(std::move(g));
      }
      case A::TYPE_PROTO: return Attribute(typeFromProto(a.tp()));
      case A::FLOATS: return Attribute(std::vector<float>(a.floats().begin(), a.floats().end()));
      case A::INTS: return Attribute(std::vector<int64_t>(a.ints().begin(), a.ints().end()));
      case A::STRINGS: return Attribute(std::vector<std::string>(a.strings().begin(), a.strings().end()));
      case A::TENSORS: {
        std::vector<Tensor> tensors;
        for (const auto &t : a.tensors()) {
          TESSEL_ASSIGN_OR_RETURN(Tensor converted, tensorFromProto(t, baseDir_));
          tensors.push_back(std::move(converted));
        }
        return Attribute(std::move(tensors));
      }
      case A::GRAPHS: {
        std::vector<Attribute::GraphPtr> graphs;
        for (const auto &g : a.graphs()) {
          TESSEL_ASSIGN_OR_RETURN(Attribute::GraphPtr converted, importGraph(g, &scope, owner));
          graphs.push_back(std::move(converted));
        }
        return Attribute(std::move(graphs));
      }
      case A::TYPE_PROTOS: {
        std::vector<Type> types;
        for (const auto &t : a.type_protos()) types.push_back(typeFromProto(t));
        return Attribute(std::move(types));
      }
      default:
        return makeError(ErrorCode::InvalidModel, "attribute '{}' has unknown type {}", a.name(),
                         static_cast<int>(a.type()));
    }
  }

  /// Rejects ops that neither ONNX nor tessel's registry knows at the imported opset.
  Status checkOpKnown(const onnx::NodeProto &node) {
    const std::string domain = node.domain() == "ai.onnx" ? "" : node.domain();
    int64_t opset = model_.opsetFor(domain);
    if (opset < 0) {
      return makeError(ErrorCode::UnsupportedOpset, "op domain '{}' is not imported by the model (no opset_import)",
                       domain);
    }
    if (findOp(domain, node.op_type(), opset)) return Status::success();
    if (domain.empty() && opset > onnxLibraryMaxOpset()) {
      // ONNX's library knows only older schemas here, whose semantics may have changed since.
      const OpInfo *known = findOpAnyVersion(domain, node.op_type());
      if (known) {
        int64_t newest = known->untilVersion;
        for (const OpInfo &row : allOps()) {
          if (row.domain == known->domain && row.name == known->name) newest = std::max(newest, row.untilVersion);
        }
        return makeError(ErrorCode::UnsupportedOp, "op {} is not supported at opset {}: tessel implements it up to "
                         "opset {}", node.op_type(), opset, newest);
      }
      return makeError(ErrorCode::UnsupportedOp, "op {} is not supported at opset {} (tessel's registry lacks it)",
                       node.op_type(), opset);
    }
    const onnx::OpSchema *schema =
        onnx::OpSchemaRegistry::Schema(node.op_type(), static_cast<int>(opset), domain);
    if (schema && !schema->Deprecated()) return Status::success();  // Loadable; running reports unsupported.
    if (schema) {
      return makeError(ErrorCode::UnsupportedOp, "op {} is deprecated at opset {} of domain '{}'", node.op_type(), opset,
                       domain);
    }
    return makeError(ErrorCode::UnsupportedOp, "unknown op '{}' in domain '{}' at opset {}", node.op_type(),
                     domain.empty() ? "ai.onnx" : domain, opset);
  }

  Expected<std::shared_ptr<Graph>> importGraph(const onnx::GraphProto &proto, const Scope *parent, Node *owner) {
    auto graph = std::make_shared<Graph>(proto.name().empty() ? "main" : proto.name());
    graph->setParentNode(owner);
    Scope scope{graph.get(), parent, {}};
    auto define = [&](const std::string &name, Value *value) -> Status {
      if (name.empty()) return fileError(ErrorCode::InvalidModel, "graph '{}' has a value with an empty name", graph->name());
      if (!scope.names.emplace(name, value).second) {
        return fileError(ErrorCode::InvalidModel, "graph '{}' defines value '{}' more than once", graph->name(), name);
      }
      return Status::success();
    };

    for (const auto &input : proto.input()) {
      if (scope.names.count(input.name())) {
        return fileError(ErrorCode::InvalidModel, "graph '{}' declares input '{}' twice", graph->name(), input.name());
      }
      TESSEL_RETURN_IF_ERROR(define(input.name(), graph->addInput(input.name(), typeFromProto(input.type()))));
    }
    for (const auto &init : proto.initializer()) {
      auto tensor = tensorFromProto(init, baseDir_);
      if (!tensor.ok()) return withLocation(tensor.status(), SourceLoc::inFile(path_)).diag();
      Value *existing = scope.names.count(init.name()) ? scope.names[init.name()] : nullptr;
      if (existing && !existing->isGraphInput()) {
        return fileError(ErrorCode::InvalidModel, "initializer '{}' is defined twice", init.name());
      }
      Value *value = graph->addInitializer(init.name(), std::move(tensor).value());
      if (!existing) TESSEL_RETURN_IF_ERROR(define(init.name(), value));
    }
    for (const auto &init : proto.sparse_initializer()) {
      auto tensor = tensorFromSparseProto(init, baseDir_);
      if (!tensor.ok()) return withLocation(tensor.status(), SourceLoc::inFile(path_)).diag();
      const std::string &name = init.values().name();
      Value *existing = scope.names.count(name) ? scope.names[name] : nullptr;
      Value *value = graph->addInitializer(name, std::move(tensor).value());
      if (!existing) TESSEL_RETURN_IF_ERROR(define(name, value));
    }

    // Pass 1: create nodes and their outputs, so inputs may name values produced later.
    std::vector<Node *> nodes;
    nodes.reserve(static_cast<size_t>(proto.node_size()));
    for (int i = 0; i < proto.node_size(); ++i) {
      const auto &np = proto.node(i);
      if (np.op_type().empty()) {
        return nodeError(np, i, makeError(ErrorCode::InvalidModel, "node has no op_type"));
      }
      Status known = checkOpKnown(np);
      if (!known.ok()) return nodeError(np, i, known.diag());
      std::vector<std::string> outputNames(np.output().begin(), np.output().end());
      std::string domain = np.domain() == "ai.onnx" ? "" : np.domain();
      Node *node = graph->addNode(np.op_type(), {}, outputNames, np.name(), domain);
      node->setSourceIndex(i);
      for (Value *out : node->outputs()) {
        if (!out) continue;
        Status defined = define(out->name(), out);
        if (!defined.ok()) return nodeError(np, i, defined.diag());
      }
      nodes.push_back(node);
    }
    // Pass 2: connect inputs and convert attributes (subgraphs see every name of this scope).
    for (int i = 0; i < proto.node_size(); ++i) {
      const auto &np = proto.node(i);
      Node *node = nodes[static_cast<size_t>(i)];
      for (const std::string &name : np.input()) {
        if (name.empty()) {
          node->addInput(nullptr);
          continue;
        }
        Value *value = scope.lookup(name);
        if (!value) {
          return nodeError(np, i, makeError(ErrorCode::InvalidModel, "input '{}' is not defined by any node, input or "
                                            "initializer", name));
        }
        node->addInput(value);
      }
      for (const auto &ap : np.attribute()) {
        if (ap.name().empty()) return nodeError(np, i, makeError(ErrorCode::InvalidModel, "attribute with no name"));
        auto attr = convertAttribute(ap, scope, node);
        if (!attr.ok()) {
          // Errors from a subgraph already carry their own node; others get this node.
          if (!attr.diag().loc.node.empty() || attr.diag().loc.nodeIndex >= 0) return attr.diag();
          Diagnostic d = attr.diag();
          d.message = fmt::format("attribute '{}': {}", ap.name(), d.message);
          return nodeError(np, i, d);
        }
        node->setAttr(ap.name(), std::move(attr).value());
      }
    }
    for (const auto &output : proto.output()) {
      Value *value = scope.lookup(output.name());
      if (!value) {
        return fileError(ErrorCode::InvalidModel, "graph '{}' output '{}' is not produced by any node", graph->name(),
                         output.name());
      }
      if (value->type().kind() == Type::Kind::Unknown || !value->type().shape().rankKnown()) {
        Type declared = typeFromProto(output.type());
        if (declared.kind() != Type::Kind::Unknown) value->setType(declared);
      }
      graph->addOutput(value);
    }
    for (const auto &info : proto.value_info()) {
      auto it = scope.names.find(info.name());
      if (it != scope.names.end() && it->second->type().kind() == Type::Kind::Unknown) {
        it->second->setType(typeFromProto(info.type()));
      }
    }
    Status sorted = graph->sortTopologically();
    if (!sorted.ok()) return withLocation(sorted, SourceLoc::inFile(path_)).diag();
    return graph;
  }

  std::string path_;
  std::string baseDir_;
  Model &model_;
};

/// Checks every node (subgraphs included) against its ONNX schema — input and output counts,
/// required inputs, attribute names and kinds — and rejects attribute values that ONNX's own shape
/// inference would divide by or loop on. Runs before that inference, which trusts its input.
class NodeValidator {
 public:
  NodeValidator(const std::string &path, const std::map<std::string, int64_t> &opsets) : path_(path), opsets_(opsets) {}

  Status validateGraph(const onnx::GraphProto &graph) {
    for (int i = 0; i < graph.node_size(); ++i) {
      const onnx::NodeProto &node = graph.node(i);
      Status status = validateNode(node);
      if (!status.ok()) return withLocation(status, SourceLoc{path_, node.name(), node.op_type(), i});
      for (const auto &attr : node.attribute()) {
        if (attr.has_g()) TESSEL_RETURN_IF_ERROR(validateGraph(attr.g()));
        for (const auto &g : attr.graphs()) TESSEL_RETURN_IF_ERROR(validateGraph(g));
      }
    }
    return Status::success();
  }

 private:
  Status validateNode(const onnx::NodeProto &node) {
    for (const auto &attr : node.attribute()) {
      if (attr.name() != "strides" && attr.name() != "dilations" && attr.name() != "kernel_shape" &&
          attr.name() != "blocksize") {
        continue;
      }
      for (int64_t v : attr.ints()) {
        if (v <= 0) return makeError(ErrorCode::InvalidModel, "attribute '{}' has value {}; it must be positive", attr.name(), v);
      }
      if (attr.has_i() && attr.i() <= 0) {
        return makeError(ErrorCode::InvalidModel, "attribute '{}' has value {}; it must be positive", attr.name(), attr.i());
      }
    }
    const std::string domain = node.domain() == "ai.onnx" ? "" : node.domain();
    auto opset = opsets_.find(domain);
    if (opset == opsets_.end()) return Status::success();  // Reported with context during conversion.
    const onnx::OpSchema *schema = onnx::OpSchemaRegistry::Schema(node.op_type(), static_cast<int>(opset->second), domain);
    // A registry row newer than ONNX's library (opset 18) has its own signature.
    const OpInfo *row = findOp(domain, node.op_type(), opset->second);
    if (domain.empty() && row && row->sinceVersion > onnxLibraryMaxOpset()) {
      return checkOpset18Signature(node, opset->second);
    }
    if (!schema) return Status::success();  // Unknown ops are reported during conversion.
    try {
      schema->Verify(node);
    } catch (const std::exception &e) {
      return makeError(ErrorCode::InvalidModel, "does not match the {} schema of opset {}: {}", node.op_type(),
                       opset->second, firstLine(e.what()));
    }
    return Status::success();
  }

  static std::string firstLine(const std::string &text) { return text.substr(0, text.find('\n')); }

  /// Input and output counts and attribute names of a node whose opset-18 form ONNX's library lacks.
  static Status checkOpset18Signature(const onnx::NodeProto &node, int64_t opset) {
    const Opset18Signature *signature = opset18Signature(node.op_type());
    TESSEL_CHECK(signature != nullptr, "the opset-18 row of {} has no signature", node.op_type());
    int inputs = node.input_size();
    while (inputs > 0 && node.input(inputs - 1).empty()) --inputs;  // Trailing omitted inputs.
    if (inputs < signature->minInputs || inputs > signature->maxInputs) {
      return makeError(ErrorCode::InvalidModel, "{} at opset {} takes {} to {} inputs; the node has {}", node.op_type(),
                       opset, signature->minInputs, signature->maxInputs, inputs);
    }
    if (node.output_size() < signature->minOutputs || node.output_size() > signature->maxOutputs) {
      return makeError(ErrorCode::InvalidModel, "{} at opset {} has {} outputs; expected {} to {}", node.op_type(), opset,
                       node.output_size(), signature->minOutputs, signature->maxOutputs);
    }
    using A = onnx::AttributeProto;
    for (const auto &attr : node.attribute()) {
      const auto &known = signature->attributes;
      auto it = std::find_if(known.begin(), known.end(), [&](const auto &a) { return a.name == attr.name(); });
      if (it == known.end()) {
        return makeError(ErrorCode::InvalidModel, "{} at opset {} has no attribute '{}'", node.op_type(), opset,
                         attr.name());
      }
      const A::AttributeType want = it->kind == 'i'   ? A::INT
                                    : it->kind == 'f' ? A::FLOAT
                                    : it->kind == 's' ? A::STRING
                                                      : A::INTS;
      if (attr.type() != want) {
        return makeError(ErrorCode::InvalidModel, "{} attribute '{}' has type {}; expected {}", node.op_type(),
                         attr.name(), A::AttributeType_Name(attr.type()), A::AttributeType_Name(want));
      }
    }
    return Status::success();
  }

  std::string path_;
  const std::map<std::string, int64_t> &opsets_;
};

/// ONNX's shape inference on a copy; on failure the original (less typed) proto is used. The bytes
/// of large initializers (weights; inference reads only their types and dims) are moved aside
/// while the proto is copied, so a model of hundreds of megabytes is not copied whole.
void inferShapesInPlace(onnx::ModelProto &proto) {
  constexpr size_t kLargeInitializerBytes = 4096;
  std::vector<std::pair<int, std::string>> moved;
  auto *initializers = proto.mutable_graph()->mutable_initializer();
  for (int i = 0; i < initializers->size(); ++i) {
    onnx::TensorProto &t = *initializers->Mutable(i);
    if (t.has_raw_data() && t.raw_data().size() > kLargeInitializerBytes) {
      moved.emplace_back(i, std::string());
      moved.back().second.swap(*t.mutable_raw_data());
    }
  }
  auto restore = [&](onnx::ModelProto &target) {
    auto *inits = target.mutable_graph()->mutable_initializer();
    for (auto &[index, bytes] : moved) inits->Mutable(index)->mutable_raw_data()->swap(bytes);
  };
  onnx::ModelProto copy = proto;
  try {
    onnx::ShapeInferenceOptions options(/*check_type_val=*/false, /*strict_mode_val=*/0, /*data_prop_val=*/true);
    onnx::shape_inference::InferShapes(copy, onnx::OpSchemaRegistry::Instance(), options);
  } catch (const std::exception &) {
    restore(proto);
    return;
  }
  if (copy.graph().initializer_size() != proto.graph().initializer_size()) {
    restore(proto);
    return;
  }
  proto.Swap(&copy);
  restore(proto);
}

/// In place of ONNX's whole-model inference for opsets its library predates: the registry's
/// per-node inference in topological order. As there, a node that cannot be inferred keeps the
/// types it has (the kernels report what is wrong with it); as in the infer-shapes pass, a node
/// with an untyped input is left alone.
void inferTypesPerNode(Model &model) {
  for (const auto &node : model.graph->nodes()) {
    const int64_t opset = model.opsetFor(node->domain());
    const bool typed = std::none_of(node->inputs().begin(), node->inputs().end(),
                                    [](const Value *v) { return v && v->type().kind() == Type::Kind::Unknown; });
    if (opset >= 0 && typed) (void)inferOnnx(*node, opset);
  }
}

}  // namespace

Expected<Model> importOnnxBytes(const std::string &bytes, const std::string &path, const ImportOptions &options) {
  onnx::ModelProto proto;
  if (bytes.empty()) return makeFileError(ErrorCode::ParseError, path, "the file is empty; expected an ONNX model");
  if (!proto.ParseFromString(bytes)) {
    return makeFileError(ErrorCode::ParseError, path, "not a valid ONNX protobuf ({} bytes): the file is truncated or corrupt", bytes.size());
  }
  return importOnnxProto(std::move(proto), path, options);
}

Expected<Model> importOnnxProto(onnx::ModelProto proto, const std::string &path, const ImportOptions &options) {
  Model model;
  model.sourcePath = path;
  Importer importer(path, model);
  TESSEL_RETURN_IF_ERROR(importer.importOpsets(proto));
  if (proto.has_graph()) TESSEL_RETURN_IF_ERROR(NodeValidator(path, model.opsetImports).validateGraph(proto.graph()));
  // ONNX's whole-model inference would read opset-18 nodes by their older schemas; tessel's own
  // per-node inference (the infer-shapes pass) types those models instead.
  auto onnxOpset = model.opsetImports.find("");
  const bool onnxKnowsOpset = onnxOpset == model.opsetImports.end() || onnxOpset->second <= onnxLibraryMaxOpset();
  if (options.inferShapes && onnxKnowsOpset) inferShapesInPlace(proto);
  TESSEL_RETURN_IF_ERROR(importer.importModel(proto));
  if (options.inferShapes && !onnxKnowsOpset) inferTypesPerNode(model);
  return model;
}

Expected<Model> importOnnxFile(const std::string &path, const ImportOptions &options) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) {
    return makeFileError(ErrorCode::FileNotFound, path, "no such model file");
  }
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  std::string bytes(static_cast<size_t>(std::max<std::streamoff>(in.tellg(), 0)), '\0');
  in.seekg(0);
  if (!in.read(bytes.data(), static_cast<std::streamsize>(bytes.size())))
    return makeFileError(ErrorCode::IoError, path, "cannot read the file");
  return importOnnxBytes(bytes, path, options);
}

}  // namespace tessel
