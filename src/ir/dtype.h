// Element types. Values match ONNX's TensorProto.DataType so conversion is a cast; names are the
// short spellings used by the text IR ("f32", "bf16", "i64", ...).
#pragma once

#include <complex>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "support/float_types.h"

namespace tessel {

enum class DType : uint8_t {
  Undefined = 0,
  Float32 = 1,
  UInt8 = 2,
  Int8 = 3,
  UInt16 = 4,
  Int16 = 5,
  Int32 = 6,
  Int64 = 7,
  String = 8,
  Bool = 9,
  Float16 = 10,
  Float64 = 11,
  UInt32 = 12,
  UInt64 = 13,
  Complex64 = 14,
  Complex128 = 15,
  BFloat16 = 16,
  Float8E4M3FN = 17,
  Float8E4M3FNUZ = 18,
  Float8E5M2 = 19,
  Float8E5M2FNUZ = 20,
};

/// Bytes per element; 0 for String and Undefined (strings are stored out of line).
size_t dtypeSize(DType type);
/// Short name used by the printer: "f32", "f16", "bf16", "f64", "i8".."i64", "u8".."u64", "bool",
/// "string", "f8e4m3fn", "f8e5m2", "c64", "c128".
std::string_view dtypeName(DType type);
/// Inverse of dtypeName; also accepts ONNX spellings ("float", "int64", "float16", ...).
std::optional<DType> parseDType(std::string_view name);
/// True for a value ONNX defines (1..20 excluding gaps); bad protobufs carry anything.
bool isValidDType(int64_t raw);

bool isFloatingPoint(DType type);  // f16, bf16, f32, f64, fp8 formats.
bool isSignedInteger(DType type);
bool isUnsignedInteger(DType type);
inline bool isInteger(DType type) { return isSignedInteger(type) || isUnsignedInteger(type); }
/// u8 or s8: the types of quantized tensors (QuantizeLinear, QLinear*, *Integer).
inline bool isQuantized8Bit(DType type) { return type == DType::UInt8 || type == DType::Int8; }

/// C++ storage type for each dtype, and the inverse.
template <DType D> struct StorageOf;
template <> struct StorageOf<DType::Float32> { using type = float; };
template <> struct StorageOf<DType::Float64> { using type = double; };
template <> struct StorageOf<DType::Float16> { using type = Float16; };
template <> struct StorageOf<DType::BFloat16> { using type = BFloat16; };
template <> struct StorageOf<DType::Float8E4M3FN> { using type = Float8E4M3FN; };
template <> struct StorageOf<DType::Float8E5M2> { using type = Float8E5M2; };
template <> struct StorageOf<DType::Int8> { using type = int8_t; };
template <> struct StorageOf<DType::Int16> { using type = int16_t; };
template <> struct StorageOf<DType::Int32> { using type = int32_t; };
template <> struct StorageOf<DType::Int64> { using type = int64_t; };
template <> struct StorageOf<DType::UInt8> { using type = uint8_t; };
template <> struct StorageOf<DType::UInt16> { using type = uint16_t; };
template <> struct StorageOf<DType::UInt32> { using type = uint32_t; };
template <> struct StorageOf<DType::UInt64> { using type = uint64_t; };
template <> struct StorageOf<DType::Bool> { using type = bool; };
template <> struct StorageOf<DType::String> { using type = std::string; };
template <> struct StorageOf<DType::Complex64> { using type = std::complex<float>; };
template <> struct StorageOf<DType::Complex128> { using type = std::complex<double>; };

template <class T> constexpr DType dtypeOf();
template <> constexpr DType dtypeOf<float>() { return DType::Float32; }
template <> constexpr DType dtypeOf<double>() { return DType::Float64; }
template <> constexpr DType dtypeOf<Float16>() { return DType::Float16; }
template <> constexpr DType dtypeOf<BFloat16>() { return DType::BFloat16; }
template <> constexpr DType dtypeOf<Float8E4M3FN>() { return DType::Float8E4M3FN; }
template <> constexpr DType dtypeOf<Float8E5M2>() { return DType::Float8E5M2; }
template <> constexpr DType dtypeOf<int8_t>() { return DType::Int8; }
template <> constexpr DType dtypeOf<int16_t>() { return DType::Int16; }
template <> constexpr DType dtypeOf<int32_t>() { return DType::Int32; }
template <> constexpr DType dtypeOf<int64_t>() { return DType::Int64; }
template <> constexpr DType dtypeOf<uint8_t>() { return DType::UInt8; }
template <> constexpr DType dtypeOf<uint16_t>() { return DType::UInt16; }
template <> constexpr DType dtypeOf<uint32_t>() { return DType::UInt32; }
template <> constexpr DType dtypeOf<uint64_t>() { return DType::UInt64; }
template <> constexpr DType dtypeOf<bool>() { return DType::Bool; }
template <> constexpr DType dtypeOf<std::string>() { return DType::String; }
template <> constexpr DType dtypeOf<std::complex<float>>() { return DType::Complex64; }
template <> constexpr DType dtypeOf<std::complex<double>>() { return DType::Complex128; }

/// Calls `fn(T{})`-style with a value of the storage type's tag for every dtype that has one:
/// `visitDType(t, [&]<class T>(TypeTag<T>) { ... })`. Returns false when `type` has no storage
/// type (Undefined, FNUZ fp8), so callers can report it.
template <class T> struct TypeTag { using type = T; };

template <class Fn>
bool visitDType(DType type, Fn &&fn) {
  switch (type) {
#define TESSEL_VISIT_CASE(D) \
  case DType::D: fn(TypeTag<typename StorageOf<DType::D>::type>{}); return true;
    TESSEL_VISIT_CASE(Float32) TESSEL_VISIT_CASE(Float64) TESSEL_VISIT_CASE(Float16)
    TESSEL_VISIT_CASE(BFloat16) TESSEL_VISIT_CASE(Float8E4M3FN) TESSEL_VISIT_CASE(Float8E5M2)
    TESSEL_VISIT_CASE(Int8) TESSEL_VISIT_CASE(Int16) TESSEL_VISIT_CASE(Int32) TESSEL_VISIT_CASE(Int64)
    TESSEL_VISIT_CASE(UInt8) TESSEL_VISIT_CASE(UInt16) TESSEL_VISIT_CASE(UInt32) TESSEL_VISIT_CASE(UInt64)
    TESSEL_VISIT_CASE(Bool) TESSEL_VISIT_CASE(String) TESSEL_VISIT_CASE(Complex64) TESSEL_VISIT_CASE(Complex128)
#undef TESSEL_VISIT_CASE
    default: return false;
  }
}

}  // namespace tessel
