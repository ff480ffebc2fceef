// Activations (ops/activation.h) applied through the vectorized unary loops of elementwise.h.
#include "targets/cpu/kernels/activation.h"

namespace tessel::cpu {

UnaryOp unaryOpOf(const Activation &spec, UnaryParams *params) {
  *params = {spec.alpha, spec.beta};
  switch (spec.kind) {
    case ActivationKind::None: return UnaryOp::Identity;
    case ActivationKind::Relu: return UnaryOp::Relu;
    case ActivationKind::Clip: return UnaryOp::Clip;
    case ActivationKind::Sigmoid: return UnaryOp::Sigmoid;
    case ActivationKind::Tanh: return UnaryOp::Tanh;
    case ActivationKind::Silu: return UnaryOp::Silu;
    case ActivationKind::Gelu: return UnaryOp::Gelu;
    case ActivationKind::GeluTanh: return UnaryOp::GeluTanh;
    case ActivationKind::LeakyRelu: return UnaryOp::LeakyRelu;
    case ActivationKind::HardSigmoid: return UnaryOp::HardSigmoid;
    case ActivationKind::HardSwish: return UnaryOp::HardSwish;
  }
  return UnaryOp::Identity;
}

void applyActivation(const Activation &spec, float *x, int64_t n) {
  if (spec.kind == ActivationKind::None) return;
  UnaryParams params;
  const UnaryOp op = unaryOpOf(spec, &params);
  elementwiseKernels().unary(op, params, x, x, n);
}

}  // namespace tessel::cpu
