// The static type of an IR value: a tensor (dtype + shape), a sequence of tensors, or an optional
// of either — the three kinds ONNX graphs carry.
#pragma once

#include <memory>
#include <string>

#include "ir/dtype.h"
#include "ir/shape.h"

namespace tessel {

class Type {
 public:
  enum class Kind { Unknown, Tensor, Sequence, Optional };

  Type() = default;
  static Type tensor(DType dtype, Shape shape) {
    Type t;
    t.kind_ = Kind::Tensor;
    t.dtype_ = dtype;
    t.shape_ = std::move(shape);
    return t;
  }
  static Type sequence(Type element) { return wrap(Kind::Sequence, std::move(element)); }
  static Type optional(Type element) { return wrap(Kind::Optional, std::move(element)); }

  Kind kind() const { return kind_; }
  bool isTensor() const { return kind_ == Kind::Tensor; }
  DType dtype() const { return dtype_; }
  const Shape &shape() const { return shape_; }
  /// The element type of a sequence or optional. Precondition: kind is Sequence or Optional.
  const Type &element() const { return *element_; }

  /// Printed form: "f32[1,3,224,224]", "seq<i64[*]>", "opt<f32[2]>", "?".
  std::string str() const;
  bool operator==(const Type &other) const;

 private:
  static Type wrap(Kind kind, Type element) {
    Type t;
    t.kind_ = kind;
    t.element_ = std::make_shared<Type>(std::move(element));
    return t;
  }
  Kind kind_ = Kind::Unknown;
  DType dtype_ = DType::Undefined;
  Shape shape_;
  std::shared_ptr<const Type> element_;
};

}  // namespace tessel
