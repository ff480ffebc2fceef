// TensorProto <-> Tensor and TypeProto <-> Type.
#include "frontend/onnx/tensor_proto.h"

#include <filesystem>

namespace tessel::onnx_frontend {

namespace {

// No single tensor in a model may claim more than this; bounds allocations driven by corrupt dims.
constexpr size_t kMaxTensorBytes = size_t{64} << 30;

template <class Dst, class Src>
void copyConverted(Tensor &out, const Src &field) {
  Dst *dst = out.data<Dst>();
  for (int i = 0; i < field.size(); ++i) dst[i] = static_cast<Dst>(field.Get(i));
}

/// Narrow types travel in int32_data as their bit patterns.
template <class Dst>
void copyBits(Tensor &out, const google::protobuf::RepeatedField<int32_t> &field) {
  Dst *dst = out.data<Dst>();
  for (int i = 0; i < field.size(); ++i) dst[i] = Dst::fromBits(static_cast<decltype(Dst{}.bits)>(field.Get(i)));
}

Status checkCount(const onnx::TensorProto &proto, int64_t have, int64_t want, const char *field) {
  if (have == want) return Status::success();
  return makeError(ErrorCode::InvalidModel, "tensor '{}' has {} values in {}; its shape needs {}", proto.name(), have,
                   field, want);
}

Expected<std::string> externalPath(const onnx::TensorProto &proto, const std::string &baseDir, size_t &offset,
                                   std::optional<size_t> &length) {
  std::string location;
  for (const auto &entry : proto.external_data()) {
    if (entry.key() == "location") {
      location = entry.value();
    } else if (entry.key() == "offset" || entry.key() == "length") {
      char *end = nullptr;
      unsigned long long parsed = std::strtoull(entry.value().c_str(), &end, 10);
      if (entry.value().empty() || *end != '\0') {
        return makeError(ErrorCode::InvalidModel, "tensor '{}': external-data {} '{}' is not a number", proto.name(),
                         entry.key(), entry.value());
      }
      if (entry.key() == "offset") offset = parsed; else length = parsed;
    }
  }
  if (location.empty()) {
    return makeError(ErrorCode::InvalidModel, "tensor '{}' has external data without a location", proto.name());
  }
  std::filesystem::path rel(location);
  if (rel.is_absolute() || location.find("..") != std::string::npos) {
    return makeError(ErrorCode::InvalidModel, "tensor '{}': external-data location '{}' must be a relative path inside "
                     "the model's folder", proto.name(), location);
  }
  return (std::filesystem::path(baseDir) / rel).string();
}

}  // namespace

Expected<Tensor> tensorFromProto(const onnx::TensorProto &proto, const std::string &baseDir) {
  if (!isValidDType(proto.data_type())) {
    return makeError(ErrorCode::InvalidModel, "tensor '{}' has invalid data type {}", proto.name(), proto.data_type());
  }
  auto dtype = static_cast<DType>(proto.data_type());
  if (!visitDType(dtype, [](auto) {})) {
    return makeError(ErrorCode::UnsupportedOp, "tensor '{}' has data type {}, which tessel does not support",
                     proto.name(), dtypeName(dtype));
  }
  if (proto.has_segment()) {
    return makeError(ErrorCode::InvalidModel, "tensor '{}' is segmented; segmented tensors are not supported",
                     proto.name());
  }
  std::vector<int64_t> sizes(proto.dims().begin(), proto.dims().end());
  TESSEL_ASSIGN_OR_RETURN(size_t numBytes, checkedNumBytes(dtype, sizes, kMaxTensorBytes));
  const int64_t numel = numElements(sizes);
  const size_t elemBytes = dtypeSize(dtype);

  if (proto.data_location() == onnx::TensorProto::EXTERNAL) {
    if (dtype == DType::String) {
      return makeError(ErrorCode::InvalidModel, "tensor '{}': string tensors cannot use external data", proto.name());
    }
    size_t offset = 0;
    std::optional<size_t> length;
    TESSEL_ASSIGN_OR_RETURN(std::string path, externalPath(proto, baseDir, offset, length));
    if (length && *length != numBytes) {
      return makeError(ErrorCode::InvalidModel, "tensor '{}': external-data length {} but its shape needs {} bytes",
                       proto.name(), *length, numBytes);
    }
    auto storage = mapFileStorage(path, offset, numBytes);
    if (!storage.ok()) {
      Diagnostic diag = storage.diag();
      diag.message = fmt::format("tensor '{}': external data: {}", proto.name(), diag.message);
      return diag;
    }
    return Tensor(dtype, std::move(sizes), std::move(storage).value());
  }

  if (proto.has_raw_data()) {
    if (dtype == DType::String) {
      return makeError(ErrorCode::InvalidModel, "tensor '{}': string tensors cannot use raw_data", proto.name());
    }
    if (proto.raw_data().size() != numBytes) {
      return makeError(ErrorCode::InvalidModel, "tensor '{}' has {} bytes of raw_data; its shape {} of {} needs {}",
                       proto.name(), proto.raw_data().size(), formatSizes(sizes), dtypeName(dtype), numBytes);
    }
    Tensor out(dtype, std::move(sizes));
    if (numBytes) std::memcpy(out.rawData(), proto.raw_data().data(), numBytes);
    if (dtype == DType::Bool) {  // Normalise to 0/1 so bool loads are defined.
      auto *b = static_cast<uint8_t *>(out.rawData());
      for (int64_t i = 0; i < numel; ++i) b[i] = b[i] ? 1 : 0;
    }
    return out;
  }

  (void)elemBytes;
  Tensor out(dtype, sizes);
  switch (dtype) {
    case DType::Float32:
      TESSEL_RETURN_IF_ERROR(checkCount(proto, proto.float_data_size(), numel, "float_data"));
      copyConverted<float>(out, proto.float_data());
      break;
    case DType::Complex64: {
      TESSEL_RETURN_IF_ERROR(checkCount(proto, proto.float_data_size(), 2 * numel, "float_data"));
      auto *dst = out.data<std::complex<float>>();
      for (int64_t i = 0; i < numel; ++i) dst[i] = {proto.float_data(2 * i), proto.float_data(2 * i + 1)};
      break;
    }
    case DType::Float64:
      TESSEL_RETURN_IF_ERROR(checkCount(proto, proto.double_data_size(), numel, "double_data"));
      copyConverted<double>(out, proto.double_data());
      break;
    case DType::Complex128: {
      TESSEL_RETURN_IF_ERROR(checkCount(proto, proto.double_data_size(), 2 * numel, "double_data"));
      auto *dst = out.data<std::complex<double>>();
      for (int64_t i = 0; i < numel; ++i) dst[i] = {proto.double_data(2 * i), proto.double_data(2 * i + 1)};
      break;
    }
    case DType::Int64:
      TESSEL_RETURN_IF_ERROR(checkCount(proto, proto.int64_data_size(), numel, "int64_data"));
      copyConverted<int64_t>(out, proto.int64_data());
      break;
    case DType::UInt32:
      TESSEL_RETURN_IF_ERROR(checkCount(proto, proto.uint64_data_size(), numel, "uint64_data"));
      copyConverted<uint32_t>(out, proto.uint64_data());
      break;
    case DType::UInt64:
      TESSEL_RETURN_IF_ERROR(checkCount(proto, proto.uint64_data_size(), numel, "uint64_data"));
      copyConverted<uint64_t>(out, proto.uint64_data());
      break;
    case DType::String: {
      TESSEL_RETURN_IF_ERROR(checkCount(proto, proto.string_data_size(), numel, "string_data"));
      auto *dst = out.data<std::string>();
      for (int64_t i = 0; i < numel; ++i) dst[i] = proto.string_data(static_cast<int>(i));
      break;
    }
    default: {
      TESSEL_RETURN_IF_ERROR(checkCount(proto, proto.int32_data_size(), numel, "int32_data"));
      const auto &field = proto.int32_data();
      switch (dtype) {
        case DType::Int32: copyConverted<int32_t>(out, field); break;
        case DType::Int16: copyConverted<int16_t>(out, field); break;
        case DType::Int8: copyConverted<int8_t>(out, field); break;
        case DType::UInt16: copyConverted<uint16_t>(out, field); break;
        case DType::UInt8: copyConverted<uint8_t>(out, field); break;
        case DType::Bool: copyConverted<bool>(out, field); break;
        case DType::Float16: copyBits<Float16>(out, field); break;
        case DType::BFloat16: copyBits<BFloat16>(out, field); break;
        case DType::Float8E4M3FN: copyBits<Float8E4M3FN>(out, field); break;
        case DType::Float8E5M2: copyBits<Float8E5M2>(out, field); break;
        default:
          return makeError(ErrorCode::UnsupportedOp, "tensor '{}' of {} is not supported", proto.name(),
                           dtypeName(dtype));
      }
    }
  }
  return out;
}

Expected<Tensor> tensorFromSparseProto(const onnx::SparseTensorProto &proto, const std::string &baseDir) {
  TESSEL_ASSIGN_OR_RETURN(Tensor values, tensorFromProto(proto.values(), baseDir));
  TESSEL_ASSIGN_OR_RETURN(Tensor indices, tensorFromProto(proto.indices(), baseDir));
  std::vector<int64_t> sizes(proto.dims().begin(), proto.dims().end());
  TESSEL_RETURN_IF_ERROR(checkedNumBytes(values.dtype(), sizes, kMaxTensorBytes).status());
  if (values.rank() != 1) {
    return makeError(ErrorCode::InvalidModel, "sparse tensor '{}': values must be 1-D", proto.values().name());
  }
  const int64_t nnz = values.size(0);
  const int64_t total = numElements(sizes);
  const auto rank = static_cast<int64_t>(sizes.size());
  std::vector<int64_t> idx = indices.toInt64Vector();
  bool linear = indices.rank() == 1 && indices.size(0) == nnz;
  bool coordinate = indices.rank() == 2 && indices.size(0) == nnz && indices.size(1) == rank;
  if (!linear && !coordinate) {
    return makeError(ErrorCode::InvalidModel, "sparse tensor '{}': indices of shape {} do not fit {} values of rank {}",
                     proto.values().name(), formatSizes(indices.sizes()), nnz, rank);
  }
  Tensor dense(values.dtype(), sizes);
  size_t elemBytes = dtypeSize(values.dtype());
  for (int64_t i = 0; i < nnz; ++i) {
    int64_t flat = 0;
    if (linear) {
      flat = idx[static_cast<size_t>(i)];
    } else {
      for (int64_t d = 0; d < rank; ++d) {
        int64_t c = idx[static_cast<size_t>(i * rank + d)];
        if (c < 0 || c >= sizes[static_cast<size_t>(d)]) { flat = -1; break; }
        flat = flat * sizes[static_cast<size_t>(d)] + c;
      }
    }
    if (flat < 0 || flat >= total) {
      return makeError(ErrorCode::InvalidModel, "sparse tensor '{}': index {} is out of range", proto.values().name(), i);
    }
    if (values.dtype() == DType::String) {
      dense.data<std::string>()[flat] = values.data<std::string>()[i];
    } else {
      std::memcpy(static_cast<uint8_t *>(dense.rawData()) + flat * elemBytes,
                  static_cast<const uint8_t *>(values.rawData()) + i * elemBytes, elemBytes);
    }
  }
  return dense;
}

}  // namespace tessel::onnx_frontend
