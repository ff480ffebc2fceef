// Activations: parsing, and application through the vectorized unary loops of elementwise.h.
#include "targets/cpu/kernels/activation.h"

namespace tessel::cpu {

Expected<ActivationSpec> parseActivation(std::string_view name, const float *params, size_t numParams) {
  ActivationSpec spec;
  auto need = [&](size_t count) -> Status {
    if (numParams != count) {
      return makeError(ErrorCode::InvalidArgument, "activation '{}' takes {} activation_params, got {}", name, count,
                       numParams);
    }
    return Status::success();
  };
  if (name.empty()) {
    spec.kind = Activation::None;
  } else if (name == "Relu") {
    spec.kind = Activation::Relu;
  } else if (name == "Clip") {
    TESSEL_RETURN_IF_ERROR(need(2));
    spec = {Activation::Clip, params[0], params[1]};
  } else if (name == "Sigmoid") {
    spec.kind = Activation::Sigmoid;
  } else if (name == "Tanh") {
    spec.kind = Activation::Tanh;
  } else if (name == "Silu") {
    spec.kind = Activation::Silu;
  } else if (name == "Gelu") {
    spec.kind = Activation::Gelu;
  } else if (name == "GeluTanh") {
    spec.kind = Activation::GeluTanh;
  } else if (name == "LeakyRelu") {
    TESSEL_RETURN_IF_ERROR(need(1));
    spec = {Activation::LeakyRelu, params[0], 0};
  } else if (name == "HardSigmoid") {
    TESSEL_RETURN_IF_ERROR(need(2));
    spec = {Activation::HardSigmoid, params[0], params[1]};
  } else if (name == "HardSwish") {
    spec.kind = Activation::HardSwish;
  } else {
    return makeError(ErrorCode::InvalidArgument, "unknown activation '{}'", name);
  }
  return spec;
}

UnaryOp unaryOpOf(const ActivationSpec &spec, UnaryParams *params) {
  *params = {spec.alpha, spec.beta};
  switch (spec.kind) {
    case Activation::None: return UnaryOp::Identity;
    case Activation::Relu: return UnaryOp::Relu;
    case Activation::Clip: return UnaryOp::Clip;
    case Activation::Sigmoid: return UnaryOp::Sigmoid;
    case Activation::Tanh: return UnaryOp::Tanh;
    case Activation::Silu: return UnaryOp::Silu;
    case Activation::Gelu: return UnaryOp::Gelu;
    case Activation::GeluTanh: return UnaryOp::GeluTanh;
    case Activation::LeakyRelu: return UnaryOp::LeakyRelu;
    case Activation::HardSigmoid: return UnaryOp::HardSigmoid;
    case Activation::HardSwish: return UnaryOp::HardSwish;
  }
  return UnaryOp::Identity;
}

void applyActivation(const ActivationSpec &spec, float *x, int64_t n) {
  if (spec.kind == Activation::None) return;
  UnaryParams params;
  const UnaryOp op = unaryOpOf(spec, &params);
  elementwiseKernels().unary(op, params, x, x, n);
}

}  // namespace tessel::cpu
