// The op registry: one entry per (domain, op) with the opset range tessel supports, its shape and
// type inference, and its reference kernel. Rows live in ops.def (one .def per op family); import,
// shape inference, the ref target and the conformance runner all look ops up here.
#pragma once

#include <cstdint>
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

/// Shape and type inference delegated to the op's schema in ONNX's own library.
Status inferOnnx(Node &node, int64_t opset);

}  // namespace tessel
