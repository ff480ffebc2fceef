// Shapes and dimension helpers.
#include "ir/shape.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace tessel {

Shape Shape::fromSizes(const std::vector<int64_t> &sizes) {
  std::vector<Dim> dims(sizes.begin(), sizes.end());
  return Shape(std::move(dims));
}

bool Shape::isStatic() const {
  if (!rankKnown_) return false;
  for (const Dim &d : dims_) {
    if (!d.isStatic()) return false;
  }
  return true;
}

std::optional<std::vector<int64_t>> Shape::sizes() const {
  if (!isStatic()) return std::nullopt;
  std::vector<int64_t> out;
  out.reserve(dims_.size());
  for (const Dim &d : dims_) out.push_back(d.size);
  return out;
}

std::string Shape::str() const {
  if (!rankKnown_) return "[*]";
  std::string out = "[";
  for (size_t i = 0; i < dims_.size(); ++i) {
    if (i) out += ",";
    const Dim &d = dims_[i];
    out += d.isStatic() ? std::to_string(d.size) : (d.symbol.empty() ? "?" : d.symbol);
  }
  return out + "]";
}

int64_t numElements(const std::vector<int64_t> &sizes) {
  int64_t n = 1;
  for (int64_t s : sizes) n *= s;
  return n;
}

std::string formatSizes(const std::vector<int64_t> &sizes) { return fmt::format("[{}]", fmt::join(sizes, ",")); }

}  // namespace tessel
