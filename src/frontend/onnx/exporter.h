// ONNX export: a tessel Model becomes a ModelProto, the inverse of importer.h. Writes opset imports,
// model metadata, graph inputs with their types (symbolic dims included), initializers (a value that
// is both an input and an initializer stays both), nodes with every attribute kind and nested
// subgraphs, value_info for typed intermediate values, and typed graph outputs. Importing what this
// writes gives back a structurally equal Model (see ir/equality.h). Tensors are written inline, so
// weights that were loaded from external data end up inside the file.
#pragma once

#include <functional>
#include <string>

#include <onnx/onnx_pb.h>

#include "ir/graph.h"
#include "support/diagnostic.h"

namespace tessel {

/// Where the bytes of the main graph's large initializers go: called for each one of at least
/// `bytes` bytes (numeric dtypes); when it returns true it took them, and the proto keeps only the
/// tensor's name, dtype and dims (an artifact that stores weights apart: nc/compiler/artifact_io.h).
struct InitializerSink {
  size_t bytes = 4096;
  std::function<bool(const std::string &name, const Tensor &tensor)> take;
};

/// Converts `model` to a ModelProto. Values without a name, or whose name an enclosing scope
/// already uses, are given fresh names. Fails when the model imports no opset, or when a node
/// reads a value that is neither defined in its graph nor in an enclosing one.
Expected<onnx::ModelProto> exportOnnxProto(const Model &model, const InitializerSink &sink = {});
/// Serializes exportOnnxProto(model). Also fails when the model exceeds protobuf's 2 GiB limit.
Expected<std::string> exportOnnxBytes(const Model &model);
/// Writes exportOnnxBytes(model) to `path`, replacing the file.
Status exportOnnxFile(const Model &model, const std::string &path);

}  // namespace tessel
