// Reference kernels of the optional ops. At run time an optional is just its element (a tensor or
// a sequence) or nothing, so these kernels wrap, test and unwrap without copying.
#include "ops/reference/helpers.h"

namespace tessel::ref {

Status refOptional(KernelContext &ctx) {
  if (ctx.node().input(0) == nullptr) {
    // An empty optional; its element type is the `type` attribute, which only the static type keeps.
    if (!ctx.node().hasAttr("type")) {
      return makeError(ErrorCode::InvalidModel, "Optional without an input needs the attribute 'type'");
    }
    ctx.setOutput(0, RuntimeValue());
    return Status::success();
  }
  ctx.setOutput(0, ctx.input(0));  // An element, or an empty optional passed along as it is.
  return Status::success();
}

Status refOptionalHasElement(KernelContext &ctx) {
  ctx.setOutput(0, Tensor::scalar<bool>(ctx.hasInput(0)));
  return Status::success();
}

Status refOptionalGetElement(KernelContext &ctx) {
  if (!ctx.hasInput(0)) {
    return makeError(ErrorCode::RuntimeError, "OptionalGetElement got an empty optional");
  }
  ctx.setOutput(0, ctx.input(0));
  return Status::success();
}

}  // namespace tessel::ref
