// The op registry: one entry per (domain, op) with the opset range tessel supports, its shape and
// type inference, and its reference kernel. Rows live in ops.def (one .def per op family); import,
// shape inference, the ref target and the conformance runner all look ops up here.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ops/kernel_context.h"

namespace tessel {

using RefKernel = Status (*)(KernelContext &ctx);
/// Fills the types of `node`'s outputs from its inputs' types (and constant inputs).
using InferFn = Status (*)(Node &node, int64_t opset);

struct OpInfo {
  std::string_view name;
  std::string_view domain;  // "" = ai.onnx.
  int64_t sinceVersion;     // Lowest opset version the kernel implements.
  int64_t untilVersion;     // Highest.
  InferFn infer;
  RefKernel reference;
  std::string_view family;  // The .def file the row lives in, e.g. "elementwise".
};

/// The entry for `opType` in `domain` at `opset`, or nullptr.
const OpInfo *findOp(std::string_view domain, std::string_view opType, int64_t opset);
/// The entry for `opType` in `domain` at any version, or nullptr (to tell "unknown op" apart
/// from "known op, unsupported opset").
const OpInfo *findOpAnyVersion(std::string_view domain, std::string_view opType);
/// Every registered op, sorted by domain then name.
const std::vector<OpInfo> &allOps();

/// Shape and type inference delegated to the op's schema in ONNX's own library. A row whose opset
/// is newer than that library knows carries its own inference, which this calls instead.
Status inferOnnx(Node &node, int64_t opset);
/// Inference of `node` by the schema of another op (`schemaOp` at `schemaVersion`) whose shape rules
/// are the same, without that schema's type constraints: for opset-18 rows the linked ONNX library
/// predates (ReduceMean-18 infers as ReduceSum-13 does).
Status inferOnnxAs(Node &node, int64_t opset, const std::string &schemaOp, int schemaVersion);
/// What a node of an opset-18 row that ONNX's linked library predates may hold: input and output
/// counts and attribute names. The importer checks these where ONNX's schema would.
struct Opset18Signature {
  struct Attr {
    std::string_view name;
    char kind;  // 'i' int, 'f' float, 's' string, 'I' ints.
  };
  std::string_view op;
  int minInputs, maxInputs, minOutputs, maxOutputs;
  std::vector<Attr> attributes;
};
/// The signature of `opType`'s opset-18 form, or nullptr for ops ONNX's library describes.
const Opset18Signature *opset18Signature(std::string_view opType);
/// The newest ai.onnx opset the linked ONNX library has schemas for.
int64_t onnxLibraryMaxOpset();
/// The value of `value` when it cannot change between runs: an initializer that is not also a
/// graph input, or a Constant node's output.
std::optional<Tensor> constantInputValue(const Value &value);

}  // namespace tessel
