// Element conversions (dtype_convert.h). Each dtype is a small codec (decode to fp32, encode from
// fp32); the run functions instantiate one loop per codec with the contiguous case split out so the
// compiler sees a constant stride and vectorises it.
#include "targets/nc/sim/functional/dtype_convert.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>

#include "support/diagnostic.h"
#include "support/float_types.h"

namespace tessel::nc::functional {
namespace {

template <class T>
T readRaw(const uint8_t *address) {
  T value;
  std::memcpy(&value, address, sizeof(T));
  return value;
}

template <class T>
void writeRaw(uint8_t *address, T value) {
  std::memcpy(address, &value, sizeof(T));
}

/// fp32 -> integer type I: truncation toward zero, saturating, NaN -> 0.
template <class I>
I saturateToInt(float value) {
  if (std::isnan(value)) return 0;
  constexpr float kMin = static_cast<float>(std::numeric_limits<I>::min());
  constexpr float kMax = static_cast<float>(std::numeric_limits<I>::max());  // Rounds up to 2^bits for 32-bit I.
  if (value <= kMin) return std::numeric_limits<I>::min();
  if (value >= kMax) return std::numeric_limits<I>::max();
  return static_cast<I>(value);
}

// IEEE-like e4m3 (float8_e4m3: bias 7, infinities and NaNs at exponent 15, max finite 240).
constexpr uint32_t kE4M3MaxFiniteBits = 0x77;

uint8_t encodeE4M3(float value) {
  uint8_t sign = std::signbit(value) ? 0x80u : 0;
  return sign | static_cast<uint8_t>(detail::roundToNarrow(std::fabs(value), 4, 3, 7, kE4M3MaxFiniteBits,
                                                           /*hasInf=*/true, /*saturate=*/true));
}

// e8m0fnu: an unsigned power of two 2^(bits-127); 0xff is NaN; no zero, no infinities. Rounds the
// fp32 significand to no fraction bits, to nearest-even; zero, negatives and subnormals clamp to the
// smallest code, overflow saturates.
uint8_t encodeE8M0(float value) {
  if (std::isnan(value) || value < 0) return 0xff;
  if (std::isinf(value)) return 0xfe;
  uint32_t bits = std::bit_cast<uint32_t>(value);
  uint32_t exponent = bits >> 23, fraction = bits & 0x7fffffu;
  if (exponent == 0) return 0;
  if (fraction > 0x400000u || (fraction == 0x400000u && (exponent & 1u))) ++exponent;
  return static_cast<uint8_t>(exponent > 0xfe ? 0xfe : exponent);
}

float decodeE8M0(uint8_t bits) { return bits == 0xff ? NAN : std::ldexp(1.0f, static_cast<int>(bits) - 127); }

using Fp8Table = std::array<float, 256>;

template <class Decode>
Fp8Table buildTable(Decode decode) {
  Fp8Table table{};
  for (int bits = 0; bits < 256; ++bits) table[bits] = decode(static_cast<uint8_t>(bits));
  return table;
}

const Fp8Table &fp8Table(DType dtype) {
  static const Fp8Table e4m3 = buildTable([](uint8_t bits) {
    float magnitude = detail::narrowToFloat(bits & 0x7fu, 4, 3, 7, /*hasInf=*/true);
    return (bits & 0x80u) ? -magnitude : magnitude;
  });
  static const Fp8Table e5m2 = buildTable([](uint8_t bits) { return static_cast<float>(Float8E5M2::fromBits(bits)); });
  static const Fp8Table e4m3fn =
      buildTable([](uint8_t bits) { return static_cast<float>(Float8E4M3FN::fromBits(bits)); });
  static const Fp8Table e8m0 = buildTable(decodeE8M0);
  switch (dtype) {
    case DType::F8E4M3: return e4m3;
    case DType::F8E5M2: return e5m2;
    case DType::F8E4M3FN: return e4m3fn;
    default: return e8m0;
  }
}

float roundToTf32(float value) {
  uint32_t bits = std::bit_cast<uint32_t>(value);
  if (std::isnan(value)) return value;
  bits += 0xfffu + ((bits >> 13) & 1u);  // Round to nearest-even at bit 13 (10 mantissa bits kept).
  return std::bit_cast<float>(bits & ~0x1fffu);
}

// Codecs: kSize bytes per element, decode(address) -> float, encode(address, float).
template <class I>
struct IntCodec {
  static constexpr int64_t kSize = sizeof(I);
  static float decode(const uint8_t *address) { return static_cast<float>(readRaw<I>(address)); }
  static void encode(uint8_t *address, float value) { writeRaw<I>(address, saturateToInt<I>(value)); }
};

struct BoolCodec {
  static constexpr int64_t kSize = 1;
  static float decode(const uint8_t *address) { return *address != 0 ? 1.0f : 0.0f; }
  static void encode(uint8_t *address, float value) { *address = value != 0.0f ? 1 : 0; }
};

struct F32Codec {
  static constexpr int64_t kSize = 4;
  static float decode(const uint8_t *address) { return readRaw<float>(address); }
  static void encode(uint8_t *address, float value) { writeRaw<float>(address, value); }
};

struct Tf32Codec {
  static constexpr int64_t kSize = 4;
  static float decode(const uint8_t *address) { return readRaw<float>(address); }
  static void encode(uint8_t *address, float value) { writeRaw<float>(address, roundToTf32(value)); }
};

struct Bf16Codec {
  static constexpr int64_t kSize = 2;
  static float decode(const uint8_t *address) {
    return std::bit_cast<float>(static_cast<uint32_t>(readRaw<uint16_t>(address)) << 16);
  }
  static void encode(uint8_t *address, float value) { writeRaw<uint16_t>(address, BFloat16::fromFloat(value)); }
};

struct F16Codec {
  static constexpr int64_t kSize = 2;
  static float decode(const uint8_t *address) {
    return static_cast<float>(Float16::fromBits(readRaw<uint16_t>(address)));
  }
  static void encode(uint8_t *address, float value) { writeRaw<uint16_t>(address, Float16::fromFloat(value)); }
};

template <DType kType>
struct Fp8Codec {
  static constexpr int64_t kSize = 1;
  static float decode(const uint8_t *address) { return fp8Table(kType)[*address]; }
  static void encode(uint8_t *address, float value) {
    switch (kType) {
      case DType::F8E4M3: *address = encodeE4M3(value); break;
      case DType::F8E5M2: *address = Float8E5M2::fromFloat(value); break;
      case DType::F8E4M3FN: *address = Float8E4M3FN::fromFloat(value); break;
      default: *address = encodeE8M0(value); break;
    }
  }
};

template <class Codec>
void loadRunWith(const uint8_t *address, int64_t strideBytes, uint64_t count, float *out) {
  if (strideBytes == Codec::kSize) {
    for (uint64_t i = 0; i < count; ++i) out[i] = Codec::decode(address + i * Codec::kSize);
  } else {
    for (uint64_t i = 0; i < count; ++i) out[i] = Codec::decode(address + static_cast<int64_t>(i) * strideBytes);
  }
}

template <class Codec>
void storeRunWith(uint8_t *address, int64_t strideBytes, uint64_t count, const float *in) {
  if (strideBytes == Codec::kSize) {
    for (uint64_t i = 0; i < count; ++i) Codec::encode(address + i * Codec::kSize, in[i]);
  } else {
    for (uint64_t i = 0; i < count; ++i) Codec::encode(address + static_cast<int64_t>(i) * strideBytes, in[i]);
  }
}

/// Calls `fn.template operator()<Codec>()` for the codec of `dtype`.
template <class Fn>
void withCodec(DType dtype, Fn &&fn) {
  switch (dtype) {
    case DType::U8: return fn.template operator()<IntCodec<uint8_t>>();
    case DType::I8: return fn.template operator()<IntCodec<int8_t>>();
    case DType::U16: return fn.template operator()<IntCodec<uint16_t>>();
    case DType::I16: return fn.template operator()<IntCodec<int16_t>>();
    case DType::U32: return fn.template operator()<IntCodec<uint32_t>>();
    case DType::I32: return fn.template operator()<IntCodec<int32_t>>();
    case DType::F8E4M3: return fn.template operator()<Fp8Codec<DType::F8E4M3>>();
    case DType::F8E5M2: return fn.template operator()<Fp8Codec<DType::F8E5M2>>();
    case DType::F8E4M3FN: return fn.template operator()<Fp8Codec<DType::F8E4M3FN>>();
    case DType::F8E8M0FNU: return fn.template operator()<Fp8Codec<DType::F8E8M0FNU>>();
    case DType::F16: return fn.template operator()<F16Codec>();
    case DType::BF16: return fn.template operator()<Bf16Codec>();
    case DType::TF32: return fn.template operator()<Tf32Codec>();
    case DType::F32: return fn.template operator()<F32Codec>();
    case DType::Bool: return fn.template operator()<BoolCodec>();
  }
  TESSEL_CHECK(false, "unknown dtype {}", static_cast<int>(dtype));
}

}  // namespace

bool isIntegerDType(DType dtype) {
  switch (dtype) {
    case DType::U8: case DType::I8: case DType::U16: case DType::I16: case DType::U32: case DType::I32:
    case DType::Bool:
      return true;
    default:
      return false;
  }
}

float loadElement(const uint8_t *address, DType dtype) {
  float value = 0;
  withCodec(dtype, [&]<class Codec>() { value = Codec::decode(address); });
  return value;
}

void storeElement(uint8_t *address, DType dtype, float value) {
  withCodec(dtype, [&]<class Codec>() { Codec::encode(address, value); });
}

int64_t floatToInt64(float value) {
  if (std::isnan(value)) return 0;
  constexpr float kLimit = 9.2233720368547758e18f;  // 2^63.
  if (value >= kLimit) return std::numeric_limits<int64_t>::max();
  if (value <= -kLimit) return std::numeric_limits<int64_t>::min();
  return static_cast<int64_t>(value);
}

int64_t loadInteger(const uint8_t *address, DType dtype) {
  switch (dtype) {
    case DType::U8: return readRaw<uint8_t>(address);
    case DType::I8: return readRaw<int8_t>(address);
    case DType::U16: return readRaw<uint16_t>(address);
    case DType::I16: return readRaw<int16_t>(address);
    case DType::U32: return readRaw<uint32_t>(address);
    case DType::I32: return readRaw<int32_t>(address);
    case DType::Bool: return *address != 0 ? 1 : 0;
    default: return floatToInt64(loadElement(address, dtype));
  }
}

int64_t wrapToDType(int64_t value, DType dtype) {
  switch (dtype) {
    case DType::U8: return static_cast<uint8_t>(value);
    case DType::I8: return static_cast<int8_t>(value);
    case DType::U16: return static_cast<uint16_t>(value);
    case DType::I16: return static_cast<int16_t>(value);
    case DType::U32: return static_cast<uint32_t>(value);
    case DType::I32: return static_cast<int32_t>(value);
    case DType::Bool: return value != 0 ? 1 : 0;
    default: return value;
  }
}

void storeIntegerBits(uint8_t *address, DType dtype, int64_t value) {
  switch (dtype) {
    case DType::Bool: writeRaw<uint8_t>(address, value != 0 ? 1 : 0); return;
    case DType::U8: case DType::I8: writeRaw<uint8_t>(address, static_cast<uint8_t>(value)); return;
    case DType::U16: case DType::I16: writeRaw<uint16_t>(address, static_cast<uint16_t>(value)); return;
    case DType::U32: case DType::I32: writeRaw<uint32_t>(address, static_cast<uint32_t>(value)); return;
    default: storeElement(address, dtype, static_cast<float>(value)); return;
  }
}

void storeIntegerSaturating(uint8_t *address, DType dtype, int64_t value) {
  auto clampTo = [&]<class I>() {
    return std::clamp<int64_t>(value, std::numeric_limits<I>::min(), std::numeric_limits<I>::max());
  };
  switch (dtype) {
    case DType::U8: return storeIntegerBits(address, dtype, clampTo.template operator()<uint8_t>());
    case DType::I8: return storeIntegerBits(address, dtype, clampTo.template operator()<int8_t>());
    case DType::U16: return storeIntegerBits(address, dtype, clampTo.template operator()<uint16_t>());
    case DType::I16: return storeIntegerBits(address, dtype, clampTo.template operator()<int16_t>());
    case DType::U32: return storeIntegerBits(address, dtype, clampTo.template operator()<uint32_t>());
    case DType::I32: return storeIntegerBits(address, dtype, clampTo.template operator()<int32_t>());
    default: return storeIntegerBits(address, dtype, value);
  }
}

void loadRun(const uint8_t *address, int64_t strideBytes, uint64_t count, DType dtype, float *out) {
  withCodec(dtype, [&]<class Codec>() { loadRunWith<Codec>(address, strideBytes, count, out); });
}

void storeRun(uint8_t *address, int64_t strideBytes, uint64_t count, DType dtype, const float *in) {
  withCodec(dtype, [&]<class Codec>() { storeRunWith<Codec>(address, strideBytes, count, in); });
}

}  // namespace tessel::nc::functional
