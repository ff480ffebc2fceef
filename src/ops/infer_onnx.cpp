// Shape and type inference for one node, delegated to the op's schema in ONNX's library. A
// NodeContext presents a tessel Node through ONNX's InferenceContext interface: attributes and
// input types become protos, inputs that are constants (initializers that cannot be fed, Constant
// outputs) expose their data so Reshape and friends infer static shapes, values computed from
// shapes (Shape -> Gather -> Concat -> Reshape) are worked out by ONNX's data-propagation functions
// on demand (ShapeData), and subgraph attributes are inferred node by node (SubgraphInferencer). The schema's result is merged into the
// node's output Values, keeping dims that are already known. ONNX's exceptions stop here and
// become Diagnostics; nothing is thrown out of this file.
#include <algorithm>
#include <climits>
#include <map>
#include <memory>
#include <optional>
#include <unordered_map>

#include <onnx/checker.h>
#include <onnx/defs/schema.h>
#include <onnx/defs/shape_inference.h>
#include <onnx/shape_inference/implementation.h>

#include "ir/graph.h"
#include "ops/onnx_schema_bridge.h"
#include "ops/registry.h"

namespace tessel {

namespace {

using onnx_bridge::typeFromProto;
using onnx_bridge::typeToProto;

std::string canonicalDomain(const std::string &domain) { return domain == "ai.onnx" ? "" : domain; }

/// The opset a node is inferred at: `version` for nodes of `domain`; nodes of other domains (only
/// met inside subgraphs of a node of `domain`) use their domain's newest schema.
struct OpsetHint {
  std::string domain;
  int64_t version;

  int versionFor(const std::string &nodeDomain) const {
    if (canonicalDomain(nodeDomain) != domain) return INT_MAX;
    return static_cast<int>(std::clamp<int64_t>(version, 0, INT_MAX));  // Files may claim any version.
  }
};

Status inferNode(Node &node, const OpsetHint &opset);

Diagnostic nodeDiagnostic(const Node &node, ErrorCode code, std::string message) {
  return Diagnostic{code, std::move(message), locationOf(node, "")};
}

// ---- Merging inferred types into known ones ----

Status mergeInto(Type &existing, const Type &inferred, const std::string &what);

/// Merges the dims of `inferred` into `existing` (both tensors): a known size is kept, an unknown
/// dim takes what was inferred, and two different known sizes are an error.
Status mergeShape(Shape &existing, const Shape &inferred, const std::string &what) {
  if (!inferred.rankKnown()) return Status::success();
  if (!existing.rankKnown()) {
    existing = inferred;
    return Status::success();
  }
  if (existing.rank() != inferred.rank()) {
    return makeError(ErrorCode::ShapeMismatch, "{}: inferred shape {} has rank {}, but the value is declared {}", what,
                     inferred.str(), inferred.rank(), existing.str());
  }
  std::vector<Dim> dims = existing.dims();
  for (size_t i = 0; i < dims.size(); ++i) {
    const Dim &in = inferred[i];
    if (dims[i].isStatic() && in.isStatic() && dims[i].size != in.size) {
      return makeError(ErrorCode::ShapeMismatch, "{}: inferred shape {} differs from the declared {} in dim {}", what,
                       inferred.str(), existing.str(), i);
    }
    if (dims[i].isStatic()) continue;
    if (in.isStatic() || (!dims[i].isSymbolic() && in.isSymbolic())) dims[i] = in;
  }
  existing = Shape(std::move(dims));
  return Status::success();
}

Status mergeInto(Type &existing, const Type &inferred, const std::string &what) {
  if (inferred.kind() == Type::Kind::Unknown) return Status::success();
  if (existing.kind() == Type::Kind::Unknown) {
    existing = inferred;
    return Status::success();
  }
  if (existing.kind() != inferred.kind()) {
    return makeError(ErrorCode::TypeMismatch, "{}: inferred type {} but the value is declared {}", what, inferred.str(),
                     existing.str());
  }
  if (existing.kind() != Type::Kind::Tensor) {
    Type element = existing.element();
    TESSEL_RETURN_IF_ERROR(mergeInto(element, inferred.element(), what));
    existing = existing.kind() == Type::Kind::Sequence ? Type::sequence(std::move(element))
                                                       : Type::optional(std::move(element));
    return Status::success();
  }
  DType dtype = existing.dtype();
  if (dtype == DType::Undefined) dtype = inferred.dtype();
  if (inferred.dtype() != DType::Undefined && inferred.dtype() != dtype) {
    return makeError(ErrorCode::TypeMismatch, "{}: inferred element type {} but the value is declared {}", what,
                     dtypeName(inferred.dtype()), dtypeName(dtype));
  }
  Shape shape = existing.shape();
  TESSEL_RETURN_IF_ERROR(mergeShape(shape, inferred.shape(), what));
  existing = Type::tensor(dtype, std::move(shape));
  return Status::success();
}

// ---- Constant inputs ----

/// The value of `value` when it cannot change between runs: an initializer that is not also a
/// graph input (a fed input would override it), or the output of a Constant node.
std::optional<Tensor> constantValue(const Value &value) {
  if (value.hasInitializer()) {
    if (value.isGraphInput()) return std::nullopt;
    return value.initializer();
  }
  const Node *producer = value.producer();
  if (!producer || producer->opType() != "Constant" || canonicalDomain(producer->domain()) != "") return std::nullopt;
  for (const auto &[name, attr] : producer->attributes()) {
    if ((name == "value" || name == "sparse_value") && attr.is<Tensor>()) return attr.get<Tensor>();
    if (name == "value_int" && attr.is<int64_t>()) return Tensor::scalar<int64_t>(attr.get<int64_t>());
    if (name == "value_float" && attr.is<float>()) return Tensor::scalar<float>(attr.get<float>());
    if (name == "value_ints" && attr.is<std::vector<int64_t>>()) {
      const auto &ints = attr.get<std::vector<int64_t>>();
      return Tensor::fromVector<int64_t>({static_cast<int64_t>(ints.size())}, ints);
    }
    if (name == "value_floats" && attr.is<std::vector<float>>()) {
      const auto &floats = attr.get<std::vector<float>>();
      return Tensor::fromVector<float>({static_cast<int64_t>(floats.size())}, floats);
    }
  }
  return std::nullopt;
}

// ---- Subgraphs ----

/// Infers a subgraph attribute for its owner's schema: the types ONNX passes in are merged into
/// the subgraph's inputs, every node is inferred in order, and the outputs' types are returned.
/// A node that cannot be inferred raises onnx::InferenceError, which the owner's schema passes on
/// to inferNode; subgraph values typed before the failure keep their types.
class SubgraphInferencer final : public onnx::GraphInferencer {
 public:
  SubgraphInferencer(Graph &graph, OpsetHint opset) : graph_(graph), opset_(std::move(opset)) {}

  std::vector<const onnx::TypeProto *> doInferencing(const std::vector<const onnx::TypeProto *> &inputTypes,
                                                     const std::vector<const onnx::TensorProto *> &) override {
    const auto &inputs = graph_.inputs();
    if (inputTypes.size() != inputs.size()) {
      fail_shape_inference("subgraph '", graph_.name(), "' has ", inputs.size(), " inputs but ", inputTypes.size(),
                           " were provided");
    }
    for (size_t i = 0; i < inputs.size(); ++i) {
      if (!inputTypes[i]) continue;
      Type type = inputs[i]->type();
      Status merged = mergeInto(type, typeFromProto(*inputTypes[i]),
                                fmt::format("subgraph '{}' input '{}'", graph_.name(), inputs[i]->name()));
      if (!merged.ok()) fail_type_inference(merged.diag().message);
      inputs[i]->setType(std::move(type));
    }
    for (const auto &node : graph_.nodes()) {
      Status status = inferNode(*node, opset_);
      if (!status.ok()) {
        fail_shape_inference("in subgraph '", graph_.name(), "', node '", node->name(), "' (", node->opType(),
                             "): ", status.diag().message);
      }
    }
    outputTypes_.clear();
    outputTypes_.resize(graph_.outputs().size());
    std::vector<const onnx::TypeProto *> result;
    for (size_t i = 0; i < graph_.outputs().size(); ++i) {
      typeToProto(graph_.outputs()[i]->type(), outputTypes_[i]);
      result.push_back(&outputTypes_[i]);
    }
    return result;
  }

 private:
  Graph &graph_;
  OpsetHint opset_;
  std::vector<onnx::TypeProto> outputTypes_;
};

// ---- A node's attributes and input types as protos ----

/// What ONNX's contexts read from a node, converted once. Graph attributes are stubs carrying
/// only the subgraph's name; schemas reach subgraphs through getGraphAttributeInferencer.
struct NodeProtos {
  explicit NodeProtos(const Node &node) {
    for (const auto &[name, attr] : node.attributes()) onnx_bridge::attributeToProto(name, attr, attributes[name]);
    for (const Value *input : node.inputs()) {
      inputTypes.emplace_back();
      if (!input || input->type().kind() == Type::Kind::Unknown) continue;
      inputTypes.back().emplace();
      typeToProto(input->type(), *inputTypes.back());
    }
  }
  const onnx::AttributeProto *attribute(const std::string &name) const {
    auto it = attributes.find(name);
    return it == attributes.end() ? nullptr : &it->second;
  }
  const onnx::TypeProto *inputType(size_t index) const {
    return index < inputTypes.size() && inputTypes[index] ? &*inputTypes[index] : nullptr;
  }

  std::map<std::string, onnx::AttributeProto> attributes;
  std::vector<std::optional<onnx::TypeProto>> inputTypes;
};

// ---- Partial data propagation ----

// Bounds the recursion through producers; shape computations are short chains.
constexpr int kMaxPropagationDepth = 64;

/// The values of small integer tensors that ONNX's data-propagation functions can work out before
/// run time (a Shape node's output, and what Gather, Slice, Concat, ... make of it), so that
/// Reshape or Expand fed by such a chain gets static dims. Works backwards on demand from the value
/// asked for, through producers whose schema has a propagation function, remembering results.
class ShapeData {
 public:
  explicit ShapeData(OpsetHint opset) : opset_(std::move(opset)) {}
  /// What is known of `value`'s elements, or nullptr.
  const onnx::TensorShapeProto *of(const Value *value, int depth = 0);

 private:
  OpsetHint opset_;
  // Element references stay valid across rehashing, so callers may hold results while it grows.
  std::unordered_map<const Value *, std::optional<onnx::TensorShapeProto>> known_;
};

class PropagationContext final : public onnx::DataPropagationContext {
 public:
  PropagationContext(const Node &node, ShapeData &data, int depth)
      : node_(node), protos_(node), data_(data), depth_(depth), outputTypes_(node.outputs().size()),
        outputData_(node.outputs().size()) {}

  const onnx::AttributeProto *getAttribute(const std::string &name) const override { return protos_.attribute(name); }
  size_t getNumInputs() const override { return protos_.inputTypes.size(); }
  const onnx::TypeProto *getInputType(size_t index) const override { return protos_.inputType(index); }
  size_t getNumOutputs() const override { return outputTypes_.size(); }
  const onnx::TypeProto *getOutputType(size_t index) const override {
    return index < outputTypes_.size() ? &outputTypes_[index] : nullptr;
  }
  const onnx::TensorShapeProto *getInputData(size_t index) override { return data_.of(node_.input(index), depth_ + 1); }
  void addOutputData(size_t index, onnx::TensorShapeProto &&data) override {
    if (index < outputData_.size()) outputData_[index] = std::move(data);
  }

  std::optional<onnx::TensorShapeProto> &outputData(size_t index) { return outputData_[index]; }

 private:
  const Node &node_;
  NodeProtos protos_;
  ShapeData &data_;
  int depth_;
  std::vector<onnx::TypeProto> outputTypes_;  // Propagation functions read none; ONNX leaves them empty too.
  std::vector<std::optional<onnx::TensorShapeProto>> outputData_;
};

const onnx::TensorShapeProto *ShapeData::of(const Value *value, int depth) {
  if (!value || depth > kMaxPropagationDepth) return nullptr;
  if (auto it = known_.find(value); it != known_.end()) return it->second ? &*it->second : nullptr;
  std::optional<onnx::TensorShapeProto> &slot = known_[value];  // Empty while computed: no cycles.
  if (std::optional<Tensor> tensor = constantValue(*value)) {
    // As in ONNX: integer scalars and vectors only.
    if ((tensor->dtype() == DType::Int64 || tensor->dtype() == DType::Int32) && tensor->rank() <= 1) {
      slot.emplace();
      for (int64_t v : tensor->toInt64Vector()) slot->add_dim()->set_dim_value(v);
    }
    return slot ? &*slot : nullptr;
  }
  const Node *producer = value->producer();
  if (!producer) return nullptr;
  const std::string domain = canonicalDomain(producer->domain());
  const onnx::OpSchema *schema = onnx::OpSchemaRegistry::Schema(producer->opType(), opset_.versionFor(domain), domain);
  if (!schema || !schema->has_data_propagation_function()) return nullptr;
  PropagationContext context(*producer, *this, depth);
  try {
    schema->GetDataPropagationFunction()(context);
  } catch (const std::exception &) {
    return nullptr;  // Propagation only refines; the node's own inference reports real errors.
  }
  slot = std::move(context.outputData(value->producerOutputIndex()));
  return slot ? &*slot : nullptr;
}

// ---- The node seen through ONNX's InferenceContext ----

class NodeContext final : public onnx::InferenceContext {
 public:
  NodeContext(const Node &node, OpsetHint opset)
      : node_(node), opset_(std::move(opset)), protos_(node), shapeData_(opset_),
        inputData_(node.inputs().size()), outputTypes_(node.outputs().size()) {}

  const onnx::AttributeProto *getAttribute(const std::string &name) const override { return protos_.attribute(name); }
  size_t getNumInputs() const override { return protos_.inputTypes.size(); }
  const onnx::TypeProto *getInputType(size_t index) const override { return protos_.inputType(index); }
  const onnx::TensorProto *getInputData(size_t index) const override {
    if (index >= inputData_.size() || !node_.input(index)) return nullptr;
    InputData &data = inputData_[index];
    if (!data.looked) {
      data.looked = true;
      if (std::optional<Tensor> tensor = constantValue(*node_.input(index))) {
        data.proto.emplace();
        onnx_bridge::tensorToProto(*tensor, *data.proto);
        data.proto->set_name(node_.input(index)->name());
      }
    }
    return data.proto ? &*data.proto : nullptr;
  }
  size_t getNumOutputs() const override { return outputTypes_.size(); }
  onnx::TypeProto *getOutputType(size_t index) override {
    return index < outputTypes_.size() ? &outputTypes_[index] : nullptr;
  }
  onnx::GraphInferencer *getGraphAttributeInferencer(const std::string &name) override {
    const Attribute *attr = node_.findAttr(name);
    if (!attr || !attr->is<Attribute::GraphPtr>()) return nullptr;
    auto &inferencer = inferencers_[name];
    if (!inferencer) inferencer = std::make_unique<SubgraphInferencer>(*attr->get<Attribute::GraphPtr>(), opset_);
    return inferencer.get();
  }
  const onnx::SparseTensorProto *getInputSparseData(size_t) const override { return nullptr; }
  const onnx::TensorShapeProto *getSymbolicInput(size_t index) const override {
    return index < inputData_.size() ? shapeData_.of(node_.input(index)) : nullptr;
  }

  const onnx::TypeProto &outputType(size_t index) const { return outputTypes_[index]; }

 private:
  struct InputData {
    bool looked = false;
    std::optional<onnx::TensorProto> proto;
  };

  const Node &node_;
  OpsetHint opset_;
  NodeProtos protos_;
  mutable ShapeData shapeData_;
  mutable std::vector<InputData> inputData_;
  std::vector<onnx::TypeProto> outputTypes_;
  std::map<std::string, std::unique_ptr<SubgraphInferencer>> inferencers_;
};

/// True when `type` (or its element) is a tensor whose element type is not known.
bool lacksDType(const Type &type) {
  if (type.kind() == Type::Kind::Sequence || type.kind() == Type::Kind::Optional) return lacksDType(type.element());
  return type.isTensor() && type.dtype() == DType::Undefined;
}

/// Checks input types against the schema's type constraints, then runs the schema's inference (or,
/// for ops defined by a function body, infers through the body). Returns false when the schema has
/// neither, so nothing can be inferred.
bool runSchemaInference(const onnx::OpSchema &schema, const Node &node, NodeContext &context, bool checkTypes) {
  // ONNX's check cannot judge a tensor of unknown element type (it throws on one); inference can.
  bool checkable = std::none_of(node.inputs().begin(), node.inputs().end(),
                                [](const Value *v) { return v && lacksDType(v->type()); });
  if (checkable && checkTypes) schema.CheckInputOutputType(context);
  if (schema.has_type_and_shape_inference_function()) {
    schema.GetTypeAndShapeInferenceFunction()(context);
    return true;
  }
  if (!schema.HasFunction() || !schema.GetFunction()) return false;
  // ONNX's function-body inference dereferences every input type; report a missing one instead.
  for (size_t i = 0; i < context.getNumInputs(); ++i) {
    if (node.input(i) && !context.getInputType(i)) {
      fail_type_inference("input ", i, " ('", node.input(i)->name(), "') has no type");
    }
  }
  onnx::shape_inference::InferShapeForFunctionNode(*schema.GetFunction(), onnx::OpSchemaRegistry::Instance(),
                                                   context);
  return true;
}

/// Runs `schema`'s inference on `node` and merges the result into the node's outputs. With
/// `checkTypes` false the schema's type constraints are not applied (a borrowed schema's list may
/// be narrower than the op's own).
Status inferWithSchema(Node &node, const OpsetHint &opset, const onnx::OpSchema &schema, bool checkTypes) {
  NodeContext context(node, opset);
  try {
    if (!runSchemaInference(schema, node, context, checkTypes)) return Status::success();
  } catch (const onnx::checker::ValidationError &error) {
    return nodeDiagnostic(node, ErrorCode::TypeMismatch,
                          fmt::format("{} input types do not fit its ONNX schema: {}", node.opType(), error.what()));
  } catch (const std::exception &error) {
    std::string text = error.what();
    ErrorCode code = text.find("[TypeInferenceError]") != std::string::npos ? ErrorCode::TypeMismatch
                                                                             : ErrorCode::ShapeMismatch;
    return nodeDiagnostic(node, code, fmt::format("ONNX shape inference for {} failed: {}", node.opType(), text));
  }
  // Merge every output before writing any, so a failure leaves the node untouched.
  std::vector<Type> merged(node.outputs().size());
  for (size_t i = 0; i < node.outputs().size(); ++i) {
    const Value *out = node.output(i);
    if (!out) continue;
    merged[i] = out->type();
    Type inferred = typeFromProto(context.outputType(i));
    Status status = mergeInto(merged[i], inferred, fmt::format("{} output {} ('{}')", node.opType(), i, out->name()));
    if (!status.ok()) return nodeDiagnostic(node, status.diag().code, status.diag().message);
  }
  for (size_t i = 0; i < node.outputs().size(); ++i) {
    if (Value *out = node.output(i)) out->setType(std::move(merged[i]));
  }
  return Status::success();
}

Status inferNode(Node &node, const OpsetHint &opset) {
  const std::string domain = canonicalDomain(node.domain());
  const int version = opset.versionFor(domain);
  // Versions newer than the linked ONNX library knows (opset 18 rows) carry their own inference;
  // ONNX's older schema would give the older semantics.
  if (version != INT_MAX) {
    const OpInfo *row = findOp(domain, node.opType(), version);
    if (row && row->infer && row->infer != &inferOnnx) return row->infer(node, version);
  }
  const onnx::OpSchema *schema = onnx::OpSchemaRegistry::Schema(node.opType(), version, domain);
  if (!schema) {
    return nodeDiagnostic(node, ErrorCode::UnsupportedOp,
                          fmt::format("ONNX has no schema for {} in domain '{}' at opset {}", node.opType(),
                                      domain.empty() ? "ai.onnx" : domain,
                                      version == INT_MAX ? std::string("(any)") : std::to_string(version)));
  }
  return inferWithSchema(node, opset, *schema, /*checkTypes=*/true);
}

}  // namespace

Status inferOnnx(Node &node, int64_t opset) {
  return inferNode(node, OpsetHint{canonicalDomain(node.domain()), opset});
}

Status inferOnnxAs(Node &node, int64_t opset, const std::string &schemaOp, int schemaVersion) {
  const onnx::OpSchema *schema = onnx::OpSchemaRegistry::Schema(schemaOp, schemaVersion, "");
  TESSEL_CHECK(schema != nullptr, "ONNX has no schema {}-{}", schemaOp, schemaVersion);
  return inferWithSchema(node, OpsetHint{canonicalDomain(node.domain()), opset}, *schema, /*checkTypes=*/false);
}

std::optional<Tensor> constantInputValue(const Value &value) { return constantValue(value); }

int64_t onnxLibraryMaxOpset() {
  return onnx::OpSchemaRegistry::DomainToVersionRange::Instance().Map().at(onnx::ONNX_DOMAIN).second;
}

}  // namespace tessel
