// Tensor storage: owned buffers and file mappings, plus conversions used by shape-like inputs.
#include "ir/tensor.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <limits>

namespace tessel {

namespace {

class OwnedStorage final : public Storage {
 public:
  explicit OwnedStorage(size_t sizeBytes) : sizeBytes_(sizeBytes) {
    // 64-byte alignment suits every element type and the vector kernels that read these buffers.
    size_t rounded = (sizeBytes + 63) / 64 * 64;
    bytes_ = static_cast<uint8_t *>(std::aligned_alloc(64, rounded == 0 ? 64 : rounded));
    TESSEL_CHECK(bytes_ != nullptr, "out of memory allocating {} bytes", sizeBytes);
    std::memset(bytes_, 0, rounded == 0 ? 64 : rounded);
  }
  ~OwnedStorage() override { std::free(bytes_); }
  uint8_t *data() override { return bytes_; }
  size_t sizeBytes() const override { return sizeBytes_; }

 private:
  uint8_t *bytes_ = nullptr;
  size_t sizeBytes_ = 0;
};

class MappedStorage final : public Storage {
 public:
  MappedStorage(void *base, size_t mapBytes, uint8_t *start, size_t sizeBytes)
      : base_(base), mapBytes_(mapBytes), start_(start), sizeBytes_(sizeBytes) {}
  ~MappedStorage() override { munmap(base_, mapBytes_); }
  uint8_t *data() override { return start_; }
  size_t sizeBytes() const override { return sizeBytes_; }

 private:
  void *base_;
  size_t mapBytes_;
  uint8_t *start_;
  size_t sizeBytes_;
};

}  // namespace

std::shared_ptr<Storage> allocateStorage(size_t sizeBytes) { return std::make_shared<OwnedStorage>(sizeBytes); }

Expected<std::shared_ptr<Storage>> mapFileStorage(const std::string &path, size_t offsetBytes, size_t sizeBytes) {
  int fd = ::open(path.c_str(), O_RDONLY);
  if (fd < 0) return makeError(ErrorCode::FileNotFound, "cannot open '{}': {}", path, std::strerror(errno));
  struct stat info {};
  if (::fstat(fd, &info) != 0) {
    ::close(fd);
    return makeError(ErrorCode::IoError, "cannot stat '{}': {}", path, std::strerror(errno));
  }
  auto fileBytes = static_cast<size_t>(info.st_size);
  if (offsetBytes > fileBytes || sizeBytes > fileBytes - offsetBytes) {
    ::close(fd);
    return makeError(ErrorCode::InvalidModel, "'{}' has {} bytes; need {} bytes at offset {}", path, fileBytes,
                     sizeBytes, offsetBytes);
  }
  if (sizeBytes == 0) {
    ::close(fd);
    return allocateStorage(0);
  }
  size_t page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
  size_t alignedOffset = offsetBytes / page * page;
  size_t mapBytes = sizeBytes + (offsetBytes - alignedOffset);
  void *base = ::mmap(nullptr, mapBytes, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, static_cast<off_t>(alignedOffset));
  ::close(fd);
  if (base == MAP_FAILED) return makeError(ErrorCode::IoError, "cannot map '{}': {}", path, std::strerror(errno));
  auto *start = static_cast<uint8_t *>(base) + (offsetBytes - alignedOffset);
  return std::shared_ptr<Storage>(std::make_shared<MappedStorage>(base, mapBytes, start, sizeBytes));
}

Tensor::Tensor(DType dtype, std::vector<int64_t> sizes) : dtype_(dtype), sizes_(std::move(sizes)) {
  if (dtype_ == DType::String) {
    strings_ = std::make_shared<std::vector<std::string>>(static_cast<size_t>(numel()));
    return;
  }
  storage_ = allocateStorage(numBytes());
}

Tensor::Tensor(DType dtype, std::vector<int64_t> sizes, std::shared_ptr<Storage> storage, size_t offsetBytes)
    : dtype_(dtype), sizes_(std::move(sizes)), storage_(std::move(storage)), offsetBytes_(offsetBytes) {
  TESSEL_CHECK(dtype_ != DType::String, "string tensors cannot view raw storage");
  TESSEL_CHECK(storage_ && storage_->sizeBytes() >= offsetBytes_ + numBytes(), "storage too small");
}

void *Tensor::rawData() {
  TESSEL_CHECK(dtype_ != DType::String, "string tensors have no raw data");
  return storage_ ? storage_->data() + offsetBytes_ : nullptr;
}

const void *Tensor::rawData() const { return const_cast<Tensor *>(this)->rawData(); }

Tensor Tensor::reshaped(std::vector<int64_t> sizes) const {
  TESSEL_CHECK(numElements(sizes) == numel(), "reshape {} -> {}", formatSizes(sizes_), formatSizes(sizes));
  Tensor out = *this;
  out.sizes_ = std::move(sizes);
  return out;
}

Tensor Tensor::clone() const {
  Tensor out(dtype_, sizes_);
  if (dtype_ == DType::String) {
    *out.strings_ = *strings_;
  } else if (numBytes() > 0) {
    std::memcpy(out.rawData(), rawData(), numBytes());
  }
  return out;
}

double Tensor::scalarAsDouble(int64_t index) const {
  double result = 0;
  bool handled = visitDType(dtype_, [&]<class T>(TypeTag<T>) {
    if constexpr (std::is_same_v<T, std::string> || std::is_same_v<T, std::complex<float>> ||
                  std::is_same_v<T, std::complex<double>>) {
      TESSEL_CHECK(false, "scalarAsDouble on {}", dtypeName(dtype_));
    } else {
      if constexpr (std::is_arithmetic_v<T>) {
        result = static_cast<double>(data<T>()[index]);
      } else {
        result = static_cast<double>(static_cast<float>(data<T>()[index]));
      }
    }
  });
  TESSEL_CHECK(handled, "scalarAsDouble on {}", dtypeName(dtype_));
  return result;
}

int64_t Tensor::scalarAsInt64(int64_t index) const {
  switch (dtype_) {
    case DType::Int64: return data<int64_t>()[index];
    case DType::Int32: return data<int32_t>()[index];
    case DType::Int16: return data<int16_t>()[index];
    case DType::Int8: return data<int8_t>()[index];
    case DType::UInt8: return data<uint8_t>()[index];
    case DType::UInt16: return data<uint16_t>()[index];
    case DType::UInt32: return data<uint32_t>()[index];
    case DType::UInt64: return static_cast<int64_t>(data<uint64_t>()[index]);
    case DType::Bool: return data<bool>()[index] ? 1 : 0;
    default: return static_cast<int64_t>(scalarAsDouble(index));
  }
}

std::vector<int64_t> Tensor::toInt64Vector() const {
  std::vector<int64_t> out(static_cast<size_t>(numel()));
  for (int64_t i = 0; i < numel(); ++i) out[static_cast<size_t>(i)] = scalarAsInt64(i);
  return out;
}

Expected<size_t> checkedNumBytes(DType dtype, const std::vector<int64_t> &sizes, size_t limitBytes) {
  size_t elementBytes = dtype == DType::String ? sizeof(std::string) : dtypeSize(dtype);
  size_t total = elementBytes;
  for (int64_t s : sizes) {
    if (s < 0) return makeError(ErrorCode::ShapeMismatch, "negative dimension {} in {}", s, formatSizes(sizes));
    if (s != 0 && total > std::numeric_limits<size_t>::max() / static_cast<size_t>(s)) {
      return makeError(ErrorCode::ShapeMismatch, "tensor of {} {} is too large", dtypeName(dtype), formatSizes(sizes));
    }
    total *= static_cast<size_t>(s);
  }
  if (total > limitBytes) {
    return makeError(ErrorCode::ShapeMismatch, "tensor of {} {} needs {} bytes, over the limit of {}", dtypeName(dtype),
                     formatSizes(sizes), total, limitBytes);
  }
  return total;
}

}  // namespace tessel
