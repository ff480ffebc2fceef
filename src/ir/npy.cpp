// .npy format: magic, version, little-endian header length, a Python dict literal header padded
// to 64 bytes, then the raw data.
#include "ir/npy.h"

#include <cctype>
#include <fstream>
#include <sstream>

namespace tessel {

namespace {

const char kMagic[] = "\x93NUMPY";

/// NumPy's descr for a dtype, or "" when NumPy has no such type.
std::string descrOf(DType dtype) {
  switch (dtype) {
    case DType::Float32: return "<f4";
    case DType::Float64: return "<f8";
    case DType::Float16: return "<f2";
    case DType::Int8: return "|i1";
    case DType::Int16: return "<i2";
    case DType::Int32: return "<i4";
    case DType::Int64: return "<i8";
    case DType::UInt8: return "|u1";
    case DType::UInt16: return "<u2";
    case DType::UInt32: return "<u4";
    case DType::UInt64: return "<u8";
    case DType::Bool: return "|b1";
    case DType::Complex64: return "<c8";
    case DType::Complex128: return "<c16";
    default: return "";
  }
}

std::optional<DType> dtypeOfDescr(const std::string &descr) {
  for (int raw = 1; raw <= 20; ++raw) {
    auto dtype = static_cast<DType>(raw);
    std::string d = descrOf(dtype);
    if (d.empty()) continue;
    // Accept '=' (native) and '|' spellings as well as '<'.
    if (descr == d || descr.substr(1) == d.substr(1)) {
      if (descr[0] == '>' && dtypeSize(dtype) > 1) return std::nullopt;
      return dtype;
    }
  }
  return std::nullopt;
}

/// Value of `key` in the header dict: the text after "'key':" up to the matching delimiter.
std::string headerField(const std::string &header, const std::string &key) {
  size_t at = header.find("'" + key + "'");
  if (at == std::string::npos) return "";
  size_t colon = header.find(':', at);
  if (colon == std::string::npos) return "";
  size_t start = header.find_first_not_of(' ', colon + 1);
  if (start == std::string::npos) return "";
  if (header[start] == '(') {
    size_t end = header.find(')', start);
    return end == std::string::npos ? "" : header.substr(start, end - start + 1);
  }
  if (header[start] == '\'') {
    size_t end = header.find('\'', start + 1);
    return end == std::string::npos ? "" : header.substr(start + 1, end - start - 1);
  }
  size_t end = header.find_first_of(",}", start);
  return header.substr(start, end - start);
}

}  // namespace

Expected<Tensor> parseNpy(const std::string &bytes, const std::string &path) {
  auto fail = [&](const std::string &why) { return makeFileError(ErrorCode::ParseError, path, "{}", why); };
  if (bytes.size() < 10 || bytes.compare(0, 6, kMagic, 6) != 0) return fail("not a .npy file (bad magic)");
  int major = static_cast<uint8_t>(bytes[6]);
  size_t headerLen = 0;
  size_t headerStart = 0;
  if (major == 1) {
    headerLen = static_cast<uint8_t>(bytes[8]) | (static_cast<size_t>(static_cast<uint8_t>(bytes[9])) << 8);
    headerStart = 10;
  } else if (major == 2 || major == 3) {
    if (bytes.size() < 12) return fail(".npy header is truncated");
    for (int i = 0; i < 4; ++i) headerLen |= static_cast<size_t>(static_cast<uint8_t>(bytes[8 + i])) << (8 * i);
    headerStart = 12;
  } else {
    return fail(fmt::format("unsupported .npy version {}", major));
  }
  if (bytes.size() < headerStart + headerLen) return fail(".npy header is truncated");
  std::string header = bytes.substr(headerStart, headerLen);
  std::string descr = headerField(header, "descr");
  if (headerField(header, "fortran_order") == "True") return fail("Fortran-order arrays are not supported");
  auto dtype = dtypeOfDescr(descr);
  if (!dtype) return fail(fmt::format("unsupported .npy dtype '{}'", descr));
  std::string shapeText = headerField(header, "shape");
  if (shapeText.size() < 2) return fail("the .npy header has no shape");
  std::vector<int64_t> sizes;
  std::stringstream ss(shapeText.substr(1, shapeText.size() - 2));
  std::string item;
  while (std::getline(ss, item, ',')) {
    size_t first = item.find_first_not_of(' ');
    if (first == std::string::npos) continue;
    try {
      sizes.push_back(std::stoll(item.substr(first)));
    } catch (const std::exception &) {
      return fail(fmt::format("bad dimension '{}' in .npy shape", item));
    }
  }
  auto numBytes = checkedNumBytes(*dtype, sizes, bytes.size());
  if (!numBytes.ok()) return fail(numBytes.diag().message);
  size_t dataStart = headerStart + headerLen;
  if (bytes.size() - dataStart < *numBytes) {
    return fail(fmt::format(".npy data is truncated: {} bytes for shape {} of {}", bytes.size() - dataStart,
                            formatSizes(sizes), dtypeName(*dtype)));
  }
  Tensor out(*dtype, sizes);
  if (*numBytes) std::memcpy(out.rawData(), bytes.data() + dataStart, *numBytes);
  return out;
}

Expected<Tensor> readNpy(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return makeFileError(ErrorCode::FileNotFound, path, "cannot open .npy file");
  std::ostringstream buffer;
  buffer << in.rdbuf();
  return parseNpy(buffer.str(), path);
}

Expected<std::string> serializeNpy(const Tensor &input) {
  Tensor tensor = input;
  if (descrOf(tensor.dtype()).empty()) {
    if (!isFloatingPoint(tensor.dtype())) {
      return makeError(ErrorCode::InvalidArgument, "cannot write a tensor of {} as .npy", dtypeName(tensor.dtype()));
    }
    Tensor widened(DType::Float32, tensor.sizes());
    visitDType(tensor.dtype(), [&]<class T>(TypeTag<T>) {
      if constexpr (!std::is_arithmetic_v<T> && !std::is_same_v<T, std::string> &&
                    !std::is_same_v<T, std::complex<float>> && !std::is_same_v<T, std::complex<double>>) {
        const T *src = tensor.data<T>();
        float *dst = widened.data<float>();
        for (int64_t i = 0; i < tensor.numel(); ++i) dst[i] = static_cast<float>(src[i]);
      }
    });
    tensor = widened;
  }
  std::string shape = "(";
  for (int64_t s : tensor.sizes()) shape += std::to_string(s) + ",";
  if (tensor.rank() > 1) shape.pop_back();
  shape += ")";
  std::string header =
      fmt::format("{{'descr': '{}', 'fortran_order': False, 'shape': {}, }}", descrOf(tensor.dtype()), shape);
  size_t total = 10 + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header += '\n';
  std::string out(kMagic, 6);
  out += '\x01';
  out += '\x00';
  out += static_cast<char>(header.size() & 0xff);
  out += static_cast<char>((header.size() >> 8) & 0xff);
  out += header;
  out.append(static_cast<const char *>(tensor.rawData()), tensor.numBytes());
  return out;
}

Status writeNpy(const std::string &path, const Tensor &tensor) {
  TESSEL_ASSIGN_OR_RETURN(std::string bytes, serializeNpy(tensor));
  std::ofstream out(path, std::ios::binary);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (!out) return makeFileError(ErrorCode::IoError, path, "cannot write .npy file");
  return Status::success();
}

std::string npyFileName(const std::string &valueName) {
  std::string safe = valueName;
  for (char &c : safe)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '-' && c != '.') c = '_';
  return safe + ".npy";
}

}  // namespace tessel
