// Tensor shapes whose dimensions are either known sizes or named symbols ("batch", "seq"), as ONNX
// graph inputs declare them; a shape of unknown rank is also representable.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace tessel {

/// One dimension: a size >= 0, a symbol, or unknown (neither).
struct Dim {
  int64_t size = -1;
  std::string symbol;

  Dim() = default;
  Dim(int64_t known) : size(known) {}  // NOLINT: a size is a dim.
  static Dim symbolic(std::string name) { Dim d; d.symbol = std::move(name); return d; }

  bool isStatic() const { return size >= 0; }
  bool isSymbolic() const { return size < 0 && !symbol.empty(); }
  bool operator==(const Dim &other) const = default;
};

/// A shape: an ordered list of Dims, or "rank unknown".
class Shape {
 public:
  Shape() = default;  // Rank unknown.
  explicit Shape(std::vector<Dim> dims) : dims_(std::move(dims)), rankKnown_(true) {}
  static Shape fromSizes(const std::vector<int64_t> &sizes);
  static Shape scalar() { return Shape(std::vector<Dim>{}); }

  bool rankKnown() const { return rankKnown_; }
  size_t rank() const { return dims_.size(); }
  const std::vector<Dim> &dims() const { return dims_; }
  const Dim &operator[](size_t i) const { return dims_[i]; }
  /// True when the rank and every dim are known sizes.
  bool isStatic() const;
  /// The sizes, when isStatic().
  std::optional<std::vector<int64_t>> sizes() const;
  /// Printed form: "[1,3,?,batch]", or "[*]" when the rank is unknown.
  std::string str() const;
  bool operator==(const Shape &other) const = default;

 private:
  std::vector<Dim> dims_;
  bool rankKnown_ = false;
};

/// Number of elements in a shape of static sizes (1 for a scalar). Precondition: sizes are >= 0.
int64_t numElements(const std::vector<int64_t> &sizes);
/// Formats sizes as "[2,3,4]".
std::string formatSizes(const std::vector<int64_t> &sizes);

}  // namespace tessel
