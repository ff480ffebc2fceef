// A value at run time: a tensor, a sequence of tensors, or nothing (an empty optional). What the
// reference interpreter and the conformance runner pass around; a graph edge's Type says which.
#pragma once

#include <variant>
#include <vector>

#include "ir/tensor.h"

namespace tessel {

using TensorSequence = std::vector<Tensor>;

class RuntimeValue {
 public:
  RuntimeValue() = default;                                       // Empty optional.
  RuntimeValue(Tensor tensor) : value_(std::move(tensor)) {}      // NOLINT: a tensor is a value.
  RuntimeValue(TensorSequence seq) : value_(std::move(seq)) {}    // NOLINT

  bool isNone() const { return std::holds_alternative<std::monostate>(value_); }
  bool isTensor() const { return std::holds_alternative<Tensor>(value_); }
  bool isSequence() const { return std::holds_alternative<TensorSequence>(value_); }
  const Tensor &tensor() const { return std::get<Tensor>(value_); }
  Tensor &tensor() { return std::get<Tensor>(value_); }
  const TensorSequence &sequence() const { return std::get<TensorSequence>(value_); }
  TensorSequence &sequence() { return std::get<TensorSequence>(value_); }
  /// "tensor f32[2,3]", "sequence of 4", "none".
  std::string describe() const;

 private:
  std::variant<std::monostate, Tensor, TensorSequence> value_;
};

inline std::string RuntimeValue::describe() const {
  if (isTensor()) return "tensor " + std::string(dtypeName(tensor().dtype())) + formatSizes(tensor().sizes());
  if (isSequence()) return "sequence of " + std::to_string(sequence().size());
  return "none";
}

/// Named values fed to or returned from a model run.
using NamedValues = std::vector<std::pair<std::string, RuntimeValue>>;

}  // namespace tessel
