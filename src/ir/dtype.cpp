// Names and properties of element types.
#include "ir/dtype.h"

#include <array>

namespace tessel {

namespace {
struct DTypeInfo {
  DType type;
  std::string_view name;
  std::string_view onnxName;
  size_t size;
};
constexpr std::array<DTypeInfo, 21> kDTypes = {{
    {DType::Undefined, "undefined", "undefined", 0},
    {DType::Float32, "f32", "float", 4},
    {DType::UInt8, "u8", "uint8", 1},
    {DType::Int8, "i8", "int8", 1},
    {DType::UInt16, "u16", "uint16", 2},
    {DType::Int16, "i16", "int16", 2},
    {DType::Int32, "i32", "int32", 4},
    {DType::Int64, "i64", "int64", 8},
    {DType::String, "string", "string", 0},
    {DType::Bool, "bool", "bool", 1},
    {DType::Float16, "f16", "float16", 2},
    {DType::Float64, "f64", "double", 8},
    {DType::UInt32, "u32", "uint32", 4},
    {DType::UInt64, "u64", "uint64", 8},
    {DType::Complex64, "c64", "complex64", 8},
    {DType::Complex128, "c128", "complex128", 16},
    {DType::BFloat16, "bf16", "bfloat16", 2},
    {DType::Float8E4M3FN, "f8e4m3fn", "float8e4m3fn", 1},
    {DType::Float8E4M3FNUZ, "f8e4m3fnuz", "float8e4m3fnuz", 1},
    {DType::Float8E5M2, "f8e5m2", "float8e5m2", 1},
    {DType::Float8E5M2FNUZ, "f8e5m2fnuz", "float8e5m2fnuz", 1},
}};
}  // namespace

bool isValidDType(int64_t raw) { return raw >= 1 && raw <= 20; }

size_t dtypeSize(DType type) {
  auto index = static_cast<size_t>(type);
  return index < kDTypes.size() ? kDTypes[index].size : 0;
}

std::string_view dtypeName(DType type) {
  auto index = static_cast<size_t>(type);
  return index < kDTypes.size() ? kDTypes[index].name : "invalid";
}

std::optional<DType> parseDType(std::string_view name) {
  for (const DTypeInfo &info : kDTypes) {
    if (info.name == name || info.onnxName == name) return info.type;
  }
  if (name == "float32") return DType::Float32;
  if (name == "float64") return DType::Float64;
  return std::nullopt;
}

bool isFloatingPoint(DType type) {
  switch (type) {
    case DType::Float32: case DType::Float64: case DType::Float16: case DType::BFloat16:
    case DType::Float8E4M3FN: case DType::Float8E4M3FNUZ: case DType::Float8E5M2: case DType::Float8E5M2FNUZ:
      return true;
    default: return false;
  }
}

bool isSignedInteger(DType type) {
  return type == DType::Int8 || type == DType::Int16 || type == DType::Int32 || type == DType::Int64;
}

bool isUnsignedInteger(DType type) {
  return type == DType::UInt8 || type == DType::UInt16 || type == DType::UInt32 || type == DType::UInt64;
}

}  // namespace tessel
