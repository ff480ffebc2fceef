// IR -> ONNX protobuf conversions shared by shape inference and the exporter.
#include "ops/onnx_schema_bridge.h"

#include "ir/graph.h"

namespace tessel::onnx_bridge {

void typeToProto(const Type &type, onnx::TypeProto &proto) {
  switch (type.kind()) {
    case Type::Kind::Tensor: {
      auto *tensorType = proto.mutable_tensor_type();
      tensorType->set_elem_type(static_cast<int32_t>(type.dtype()));
      if (!type.shape().rankKnown()) break;
      auto *shape = tensorType->mutable_shape();  // Created even for scalars: rank 0 is known.
      for (const Dim &d : type.shape().dims()) {
        auto *dim = shape->add_dim();
        if (d.isStatic()) {
          dim->set_dim_value(d.size);
        } else if (d.isSymbolic()) {
          dim->set_dim_param(d.symbol);
        }
      }
      break;
    }
    case Type::Kind::Sequence:
      typeToProto(type.element(), *proto.mutable_sequence_type()->mutable_elem_type());
      break;
    case Type::Kind::Optional:
      typeToProto(type.element(), *proto.mutable_optional_type()->mutable_elem_type());
      break;
    case Type::Kind::Unknown:
      break;
  }
}

Type typeFromProto(const onnx::TypeProto &proto) {
  switch (proto.value_case()) {
    case onnx::TypeProto::kTensorType: {
      const auto &t = proto.tensor_type();
      DType dtype = isValidDType(t.elem_type()) ? static_cast<DType>(t.elem_type()) : DType::Undefined;
      if (!t.has_shape()) return Type::tensor(dtype, Shape());
      std::vector<Dim> dims;
      for (const auto &d : t.shape().dim()) {
        if (d.has_dim_value() && d.dim_value() >= 0) {
          dims.emplace_back(d.dim_value());
        } else if (d.has_dim_param() && !d.dim_param().empty()) {
          dims.push_back(Dim::symbolic(d.dim_param()));
        } else {
          dims.emplace_back();
        }
      }
      return Type::tensor(dtype, Shape(std::move(dims)));
    }
    case onnx::TypeProto::kSequenceType:
      return Type::sequence(typeFromProto(proto.sequence_type().elem_type()));
    case onnx::TypeProto::kOptionalType:
      return Type::optional(typeFromProto(proto.optional_type().elem_type()));
    default:
      return Type();
  }
}

void tensorToProto(const Tensor &tensor, onnx::TensorProto &proto) {
  proto.set_data_type(static_cast<int32_t>(tensor.dtype()));
  proto.clear_dims();
  for (int64_t s : tensor.sizes()) proto.add_dims(s);
  if (tensor.dtype() == DType::String) {
    for (const std::string &s : tensor.span<std::string>()) proto.add_string_data(s);
    return;
  }
  if (tensor.numBytes() == 0) {
    proto.set_raw_data(std::string());
    return;
  }
  proto.set_raw_data(std::string(static_cast<const char *>(tensor.rawData()), tensor.numBytes()));
}

namespace {

void writeGraphOrStub(const Attribute::GraphPtr &graph, onnx::GraphProto &proto, const GraphWriter &writeGraph) {
  if (writeGraph) {
    writeGraph(*graph, proto);
  } else {
    proto.set_name(graph->name());
  }
}

}  // namespace

void attributeToProto(const std::string &name, const Attribute &attr, onnx::AttributeProto &proto,
                      const GraphWriter &writeGraph) {
  using A = onnx::AttributeProto;
  proto.set_name(name);
  switch (attr.kind()) {
    case Attribute::Kind::Float:
      proto.set_type(A::FLOAT);
      proto.set_f(attr.get<float>());
      break;
    case Attribute::Kind::Int:
      proto.set_type(A::INT);
      proto.set_i(attr.get<int64_t>());
      break;
    case Attribute::Kind::String:
      proto.set_type(A::STRING);
      proto.set_s(attr.get<std::string>());
      break;
    case Attribute::Kind::Tensor:
      proto.set_type(A::TENSOR);
      tensorToProto(attr.get<Tensor>(), *proto.mutable_t());
      break;
    case Attribute::Kind::Graph:
      proto.set_type(A::GRAPH);
      writeGraphOrStub(attr.get<Attribute::GraphPtr>(), *proto.mutable_g(), writeGraph);
      break;
    case Attribute::Kind::Type:
      proto.set_type(A::TYPE_PROTO);
      typeToProto(attr.get<Type>(), *proto.mutable_tp());
      break;
    case Attribute::Kind::Floats:
      proto.set_type(A::FLOATS);
      for (float f : attr.get<std::vector<float>>()) proto.add_floats(f);
      break;
    case Attribute::Kind::Ints:
      proto.set_type(A::INTS);
      for (int64_t i : attr.get<std::vector<int64_t>>()) proto.add_ints(i);
      break;
    case Attribute::Kind::Strings:
      proto.set_type(A::STRINGS);
      for (const std::string &s : attr.get<std::vector<std::string>>()) proto.add_strings(s);
      break;
    case Attribute::Kind::Tensors:
      proto.set_type(A::TENSORS);
      for (const Tensor &t : attr.get<std::vector<Tensor>>()) tensorToProto(t, *proto.add_tensors());
      break;
    case Attribute::Kind::Graphs:
      proto.set_type(A::GRAPHS);
      for (const auto &g : attr.get<std::vector<Attribute::GraphPtr>>()) {
        writeGraphOrStub(g, *proto.add_graphs(), writeGraph);
      }
      break;
    case Attribute::Kind::Types:
      proto.set_type(A::TYPE_PROTOS);
      for (const Type &t : attr.get<std::vector<Type>>()) typeToProto(t, *proto.add_type_protos());
      break;
  }
}

}  // namespace tessel::onnx_bridge
