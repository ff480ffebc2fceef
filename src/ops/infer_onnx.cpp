// Shape and type inference for one node, delegated to the op's schema in ONNX's library.
#include "ops/registry.h"

namespace tessel {

Status inferOnnx(Node &node, int64_t opset) {
  return makeError(ErrorCode::Internal, "per-node ONNX inference for {} is not wired yet", node.opType());
}

}  // namespace tessel
