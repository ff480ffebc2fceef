// See activation.h.
#include "ops/activation.h"

#include <algorithm>
#include <cmath>

namespace tessel {

namespace {

constexpr ActivationInfo kActivations[] = {
    {ActivationKind::None, "", 0},
    {ActivationKind::Relu, "Relu", 0},
    {ActivationKind::Clip, "Clip", 2},  // min, max.
    {ActivationKind::Sigmoid, "Sigmoid", 0},
    {ActivationKind::Tanh, "Tanh", 0},
    {ActivationKind::Silu, "Silu", 0},
    {ActivationKind::Gelu, "Gelu", 0},          // The erf form.
    {ActivationKind::GeluTanh, "GeluTanh", 0},  // The tanh approximation.
    {ActivationKind::LeakyRelu, "LeakyRelu", 1},      // slope.
    {ActivationKind::HardSigmoid, "HardSigmoid", 2},  // slope, offset.
    {ActivationKind::HardSwish, "HardSwish", 0},
};

const ActivationInfo &infoOf(ActivationKind kind) { return kActivations[static_cast<size_t>(kind)]; }

double sigmoid(double x) { return 1.0 / (1.0 + std::exp(-x)); }

}  // namespace

std::span<const ActivationInfo> activationTable() { return kActivations; }

std::string_view Activation::name() const { return infoOf(kind).name; }

std::vector<float> Activation::params() const {
  const size_t count = infoOf(kind).paramCount;
  if (count == 2) return {alpha, beta};
  if (count == 1) return {alpha};
  return {};
}

double Activation::apply(double x) const {
  switch (kind) {
    case ActivationKind::None: return x;
    case ActivationKind::Relu: return std::max(x, 0.0);
    case ActivationKind::Clip: return std::min(std::max(x, static_cast<double>(alpha)), static_cast<double>(beta));
    case ActivationKind::Sigmoid: return sigmoid(x);
    case ActivationKind::Tanh: return std::tanh(x);
    case ActivationKind::Silu: return x * sigmoid(x);
    case ActivationKind::Gelu: return 0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0)));
    case ActivationKind::GeluTanh: {
      const double k = std::sqrt(2.0 / M_PI);
      return 0.5 * x * (1.0 + std::tanh(k * (x + 0.044715 * x * x * x)));
    }
    case ActivationKind::LeakyRelu: return x >= 0 ? x : x * static_cast<double>(alpha);
    case ActivationKind::HardSigmoid: return std::clamp(static_cast<double>(alpha) * x + beta, 0.0, 1.0);
    case ActivationKind::HardSwish: return x * std::clamp(x / 6 + 0.5, 0.0, 1.0);
  }
  return x;
}

Expected<Activation> parseActivation(std::string_view name, std::span<const float> params) {
  const auto row = std::find_if(std::begin(kActivations), std::end(kActivations),
                                [&](const ActivationInfo &info) { return info.name == name; });
  if (row == std::end(kActivations)) return makeError(ErrorCode::InvalidArgument, "unknown activation '{}'", name);
  if (params.size() != row->paramCount) {
    return makeError(ErrorCode::InvalidArgument, "activation '{}' takes {} activation_params, got {}", name,
                     row->paramCount, params.size());
  }
  Activation act{row->kind};
  if (!params.empty()) act.alpha = params[0];
  if (params.size() > 1) act.beta = params[1];
  return act;
}

}  // namespace tessel
