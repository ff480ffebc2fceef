// Node attributes: the ONNX attribute kinds (scalars, strings, tensors, subgraphs and lists of each).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <variant>
#include <vector>

#include "ir/tensor.h"
#include "ir/type.h"

namespace tessel {

class Graph;

class Attribute {
 public:
  enum class Kind { Float, Int, String, Tensor, Graph, Type, Floats, Ints, Strings, Tensors, Graphs, Types };
  using GraphPtr = std::shared_ptr<tessel::Graph>;
  using Storage = std::variant<float, int64_t, std::string, tessel::Tensor, GraphPtr, tessel::Type, std::vector<float>,
                               std::vector<int64_t>, std::vector<std::string>, std::vector<tessel::Tensor>,
                               std::vector<GraphPtr>, std::vector<tessel::Type>>;

  Attribute() = default;
  template <class T>
  Attribute(T value) : value_(std::move(value)) {}  // NOLINT: any alternative converts.

  Kind kind() const { return static_cast<Kind>(value_.index()); }
  template <class T> bool is() const { return std::holds_alternative<T>(value_); }
  template <class T> const T &get() const { return std::get<T>(value_); }
  template <class T> T &get() { return std::get<T>(value_); }
  const Storage &storage() const { return value_; }

 private:
  Storage value_;
};

/// "float", "int", "string", "tensor", "graph", "type", "floats", ... as the printer writes them.
const char *attributeKindName(Attribute::Kind kind);

}  // namespace tessel
