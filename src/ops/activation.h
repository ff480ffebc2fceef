// The activations fused ops carry (FusedConv's, FusedMatMul's, ... `activation` and
// `activation_params` attributes, docs/cpu.md), each stated once: its name, its parameters and what
// it computes. The graph passes write them, the reference applies them, and the cpu and nc targets
// map each kind onto their kernels. Adding an activation is a row in activation.cpp plus its case in
// `apply`; a target that lacks it refuses it by kind.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "support/diagnostic.h"

namespace tessel {

enum class ActivationKind : uint8_t {
  None,
  Relu,
  Clip,
  Sigmoid,
  Tanh,
  Silu,
  Gelu,
  GeluTanh,
  LeakyRelu,
  HardSigmoid,
  HardSwish,
};

/// One activation with its parameters.
struct Activation {
  ActivationKind kind = ActivationKind::None;
  float alpha = 0;  // Clip: min; LeakyRelu: slope; HardSigmoid: slope.
  float beta = 0;   // Clip: max; HardSigmoid: offset.

  /// The attribute spelling ("" for None).
  std::string_view name() const;
  /// The `activation_params` it is written with.
  std::vector<float> params() const;
  /// The definition, in double: what every kernel is checked against.
  double apply(double x) const;
};

/// Reads `activation` / `activation_params`; an unknown name or a wrong parameter count is an error
/// naming both.
Expected<Activation> parseActivation(std::string_view name, std::span<const float> params);

/// Every activation kind's name and parameter count, in enum order.
struct ActivationInfo {
  ActivationKind kind;
  std::string_view name;
  size_t paramCount;
};
std::span<const ActivationInfo> activationTable();

}  // namespace tessel
