// Printing and comparison of value types.
#include "ir/type.h"

namespace tessel {

std::string Type::str() const {
  switch (kind_) {
    case Kind::Unknown: return "?";
    case Kind::Tensor: return std::string(dtypeName(dtype_)) + shape_.str();
    case Kind::Sequence: return "seq<" + element_->str() + ">";
    case Kind::Optional: return "opt<" + element_->str() + ">";
  }
  return "?";
}

bool Type::operator==(const Type &other) const {
  if (kind_ != other.kind_) return false;
  if (kind_ == Kind::Tensor) return dtype_ == other.dtype_ && shape_ == other.shape_;
  if (kind_ == Kind::Sequence || kind_ == Kind::Optional) return *element_ == *other.element_;
  return true;
}

}  // namespace tessel
