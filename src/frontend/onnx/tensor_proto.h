// Reading ONNX TensorProtos from untrusted files into tessel Tensors. Shared by the importer and the
// conformance runner (which reads test data as serialized TensorProtos). The opposite direction and
// TypeProto conversion live in ops/onnx_schema_bridge.h, which shape inference also uses.
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

}  // namespace tessel::onnx_frontend
