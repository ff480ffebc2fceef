// A dense tensor value: dtype, static sizes, and storage that is owned, shared, or mapped from a
// file (weights of a large model are not copied). Row-major, contiguous. Strings live out of line.
#pragma once

#include <cstdint>
#include <cstring>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "ir/dtype.h"
#include "ir/shape.h"
#include "support/diagnostic.h"

namespace tessel {

/// Bytes a tensor points into. Keeps whatever backs them (a vector, a mapping) alive.
class Storage {
 public:
  virtual ~Storage() = default;
  virtual uint8_t *data() = 0;
  virtual size_t sizeBytes() const = 0;
};

/// Storage owned in memory, zero-initialised, aligned for any element type.
std::shared_ptr<Storage> allocateStorage(size_t sizeBytes);
/// Maps `sizeBytes` bytes of `path` starting at `offsetBytes`, read-only in spirit (copy-on-write).
Expected<std::shared_ptr<Storage>> mapFileStorage(const std::string &path, size_t offsetBytes, size_t sizeBytes);

class Tensor {
 public:
  Tensor() = default;
  /// A zero-filled tensor. Precondition: sizes are >= 0 and the total fits in memory (callers that
  /// take sizes from user input check with checkedNumBytes first).
  Tensor(DType dtype, std::vector<int64_t> sizes);
  /// A view of `storage` (which must hold at least numBytes()).
  Tensor(DType dtype, std::vector<int64_t> sizes, std::shared_ptr<Storage> storage, size_t offsetBytes = 0);

  template <class T>
  static Tensor fromVector(std::vector<int64_t> sizes, const std::vector<T> &values);
  template <class T>
  static Tensor scalar(T value) { return fromVector<T>({}, {value}); }

  bool defined() const { return dtype_ != DType::Undefined; }
  DType dtype() const { return dtype_; }
  const std::vector<int64_t> &sizes() const { return sizes_; }
  size_t rank() const { return sizes_.size(); }
  int64_t size(size_t axis) const { return sizes_[axis]; }
  int64_t numel() const { return numElements(sizes_); }
  size_t numBytes() const { return static_cast<size_t>(numel()) * dtypeSize(dtype_); }

  /// Typed access. Precondition: T is the storage type of dtype() (checked).
  template <class T> T *data();
  template <class T> const T *data() const;
  template <class T> std::span<T> span() { return {data<T>(), static_cast<size_t>(numel())}; }
  template <class T> std::span<const T> span() const { return {data<T>(), static_cast<size_t>(numel())}; }
  void *rawData();
  const void *rawData() const;
  /// What holds the elements (shared by views); null for strings and undefined tensors.
  const std::shared_ptr<Storage> &storage() const { return storage_; }

  /// The same elements under new sizes (shares storage). Precondition: same element count.
  Tensor reshaped(std::vector<int64_t> sizes) const;
  /// A deep copy with its own storage.
  Tensor clone() const;
  /// Element i converted to double (numeric dtypes only); used by shape ops and comparisons.
  double scalarAsDouble(int64_t index = 0) const;
  /// Element i converted to int64 (integer and bool dtypes; floats truncate).
  int64_t scalarAsInt64(int64_t index = 0) const;
  /// All elements as int64 (for shape-like inputs: Reshape shape, Slice starts, ...).
  std::vector<int64_t> toInt64Vector() const;

 private:
  DType dtype_ = DType::Undefined;
  std::vector<int64_t> sizes_;
  std::shared_ptr<Storage> storage_;
  size_t offsetBytes_ = 0;
  std::shared_ptr<std::vector<std::string>> strings_;  // Only for DType::String.
};

/// Bytes for a tensor of `dtype` and `sizes` read from untrusted input: fails on negative sizes or
/// overflow, or when the total exceeds `limitBytes`.
Expected<size_t> checkedNumBytes(DType dtype, const std::vector<int64_t> &sizes, size_t limitBytes);

template <class T>
T *Tensor::data() {
  TESSEL_CHECK(dtypeOf<T>() == dtype_, "tensor of {} accessed as {}", dtypeName(dtype_), dtypeName(dtypeOf<T>()));
  if constexpr (std::is_same_v<T, std::string>) {
    return strings_->data();
  } else {
    return reinterpret_cast<T *>(rawData());
  }
}

template <class T>
const T *Tensor::data() const {
  return const_cast<Tensor *>(this)->data<T>();
}

template <class T>
Tensor Tensor::fromVector(std::vector<int64_t> sizes, const std::vector<T> &values) {
  Tensor t(dtypeOf<T>(), std::move(sizes));
  TESSEL_CHECK(static_cast<int64_t>(values.size()) == t.numel(), "{} values for {} elements", values.size(), t.numel());
  T *out = t.data<T>();
  for (size_t i = 0; i < values.size(); ++i) out[i] = values[i];
  return t;
}

}  // namespace tessel
