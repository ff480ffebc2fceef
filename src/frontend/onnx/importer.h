// ONNX import: a .onnx file (protobuf ModelProto) becomes a tessel Model. Supports opsets 7..17
// of ai.onnx (the range Debian's onnx 1.12 knows) and the ai.onnx.ml / preview.training domains
// where the registry has ops; initializers, Constant nodes, sparse tensors, external data,
// symbolic input dims and nested subgraphs (If/Loop/Scan). Types come from ONNX's own shape
// inference. Every defect in the file is reported as a Diagnostic naming the file and node.
#pragma once

#include <string>

#include <onnx/onnx_pb.h>

#include "ir/graph.h"
#include "support/diagnostic.h"

namespace tessel {

struct ImportOptions {
  /// Run ONNX's shape inference to type intermediate values.
  bool inferShapes = true;
};

/// Loads a model from a .onnx file; external data is resolved next to it.
Expected<Model> importOnnxFile(const std::string &path, const ImportOptions &options = {});
/// Loads a model from serialized bytes; `path` names it in diagnostics and locates external data.
Expected<Model> importOnnxBytes(const std::string &bytes, const std::string &path, const ImportOptions &options = {});

/// Loads a model from a parsed ModelProto (taken, so large initializers are not copied).
Expected<Model> importOnnxProto(onnx::ModelProto proto, const std::string &path, const ImportOptions &options = {});

/// Lowest and highest ai.onnx opset versions the importer accepts.
inline constexpr int64_t kMinOnnxOpset = 1;
inline constexpr int64_t kMaxOnnxOpset = 18;

}  // namespace tessel
