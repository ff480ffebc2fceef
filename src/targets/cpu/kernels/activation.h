// The activations the fused ops carry (docs/cpu.md), applied in place over a run of floats. GEMM
// and convolution epilogues call this on each output block while it is still in cache.
#pragma once

#include <cstdint>
#include <string_view>

#include "support/diagnostic.h"
#include "targets/cpu/kernels/elementwise.h"

namespace tessel::cpu {

enum class Activation : uint8_t { None, Relu, Clip, Sigmoid, Tanh, Silu, Gelu, GeluTanh, LeakyRelu, HardSigmoid, HardSwish };

struct ActivationSpec {
  Activation kind = Activation::None;
  float alpha = 0;  // Clip: min; LeakyRelu: slope; HardSigmoid: slope.
  float beta = 0;   // Clip: max; HardSigmoid: offset.
};

/// Parses a fused op's `activation` / `activation_params` attributes.
Expected<ActivationSpec> parseActivation(std::string_view name, const float *params, size_t numParams);

/// The unary op computing `spec`, with its parameters in *params.
UnaryOp unaryOpOf(const ActivationSpec &spec, UnaryParams *params);

/// x[i] = act(x[i]) for i in [0, n), with the host's best vector code (single-threaded: epilogues
/// call it per output block from their own task).
void applyActivation(const ActivationSpec &spec, float *x, int64_t n);

}  // namespace tessel::cpu
