// Conversion between ONNX TensorProto/TypeProto and tessel's Tensor/Type. Shared by the importer,
// the exporter and the conformance runner (which reads test data as serialized TensorProtos).
#pragma once

#include <string>

#include <onnx/onnx_pb.h>

#include "ir/tensor.h"
#include "ir/type.h"
#include "support/diagnostic.h"

namespace tessel::onnx_frontend {

/// Converts a TensorProto. `baseDir` resolves external data (files must lie inside it).
/// Validates everything an untrusted proto can get wrong: dtype, negative or overflowing dims,
/// element counts that disagree with the data, external files that are missing or short.
Expected<Tensor> tensorFromProto(const onnx::TensorProto &proto, const std::string &baseDir);
/// Converts a SparseTensorProto to the dense tensor it denotes.
Expected<Tensor> tensorFromSparseProto(const onnx::SparseTensorProto &proto, const std::string &baseDir);
/// Writes `tensor` into `proto` (raw_data for numbers, string_data for strings).
void tensorToProto(const Tensor &tensor, onnx::TensorProto &proto);

/// Converts a TypeProto (tensor, sequence, optional); unknown or unset parts stay unknown.
Type typeFromProto(const onnx::TypeProto &proto);
void typeToProto(const Type &type, onnx::TypeProto &proto);

}  // namespace tessel::onnx_frontend
