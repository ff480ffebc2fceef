// Conversions from tessel's IR to the ONNX protobufs that ONNX's op schemas read: types, tensors
// and attributes. Per-node shape inference (infer_onnx.cpp) hands these to a schema's inference
// function, and the ONNX exporter builds its attributes with them, so an attribute is turned into
// an AttributeProto in one place. Lives in ops because ops may not depend on the frontend.
#pragma once

#include <functional>
#include <string>

#include <onnx/onnx_pb.h>

#include "ir/attribute.h"
#include "ir/tensor.h"
#include "ir/type.h"

namespace tessel::onnx_bridge {

/// Writes `type` into `proto`. Unknown types leave `proto` unset; unknown dims set neither field.
void typeToProto(const Type &type, onnx::TypeProto &proto);
/// Converts a TypeProto (tensor, sequence, optional); unknown or unset parts stay unknown.
Type typeFromProto(const onnx::TypeProto &proto);
/// Writes `tensor` into `proto`: dims, data_type, and raw_data (string_data for strings).
void tensorToProto(const Tensor &tensor, onnx::TensorProto &proto);

/// Writes a subgraph into a GraphProto; supplied by callers that can (the exporter).
using GraphWriter = std::function<void(const Graph &graph, onnx::GraphProto &proto)>;

/// Writes attribute `name` into `proto`. Graph-valued attributes are written with `writeGraph`,
/// or as empty graphs carrying only the subgraph's name when `writeGraph` is null.
void attributeToProto(const std::string &name, const Attribute &attr, onnx::AttributeProto &proto,
                      const GraphWriter &writeGraph = nullptr);

}  // namespace tessel::onnx_bridge
