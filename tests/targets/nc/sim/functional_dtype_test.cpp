// Conversions on write and read (through tensor_copy, which converts when the dtypes differ):
// round-to-nearest-even at exact ties for bf16/fp16/tf32/fp8, fp8 saturation, float -> integer
// truncation with saturation, integers read by value, bool.
#include <cmath>
#include <limits>

#include "functional_fixture.h"

namespace tessel::nc::testing {
namespace {

class NcFunctionalDType : public FunctionalTest {
 protected:
  /// Copies the f32 `value` to a `dtype` element and returns its raw bits.
  uint32_t toBits(float value, const std::string &dtype) {
    putF32(kSbuf, 0, 0, value);
    put<uint32_t>(kSbuf, 0, 64, 0);
    Status status = run("tensor_copy.DVE dst=sbuf[p0:1, off 64]:" + dtype + " src=sbuf[p0:1, off 0]:f32");
    EXPECT_TRUE(status.ok()) << status.str();
    return get<uint32_t>(kSbuf, 0, 64);
  }
  /// Writes the raw `bits` as a `dtype` element and returns it read back as f32.
  float fromBits(uint32_t bits, const std::string &dtype) {
    put<uint32_t>(kSbuf, 0, 0, bits);
    Status status = run("tensor_copy.DVE dst=sbuf[p0:1, off 64]:f32 src=sbuf[p0:1, off 0]:" + dtype);
    EXPECT_TRUE(status.ok()) << status.str();
    return getF32(kSbuf, 0, 64);
  }
};

TEST_F(NcFunctionalDType, Bf16RoundsToNearestEven) {
  EXPECT_EQ(toBits(1.0f, "bf16"), 0x3f80u);
  EXPECT_EQ(toBits(1.0f + 0x1p-8f, "bf16"), 0x3f80u);             // Tie between 0x3f80 and 0x3f81: even.
  EXPECT_EQ(toBits(1.0f + 3 * 0x1p-8f, "bf16"), 0x3f82u);         // Tie between 0x3f81 and 0x3f82: even.
  EXPECT_EQ(toBits(1.0f + 0x1p-8f + 0x1p-20f, "bf16"), 0x3f81u);  // Just above the tie: up.
  EXPECT_EQ(toBits(-1.0f - 0x1p-8f, "bf16"), 0xbf80u);
  EXPECT_EQ(fromBits(0x3f81u, "bf16"), 1.0f + 0x1p-7f);
}

TEST_F(NcFunctionalDType, Fp16AndTf32RoundToNearestEven) {
  EXPECT_EQ(toBits(1.0f + 0x1p-11f, "f16"), 0x3c00u);       // Tie: even.
  EXPECT_EQ(toBits(1.0f + 3 * 0x1p-11f, "f16"), 0x3c02u);   // Tie: even (up).
  EXPECT_EQ(toBits(70000.0f, "f16"), 0x7c00u);              // Past 65504: infinity.
  EXPECT_EQ(fromBits(0x3c01u, "f16"), 1.0f + 0x1p-10f);
  EXPECT_EQ(std::bit_cast<float>(toBits(1.0f + 0x1p-11f, "tf32")), 1.0f);
  EXPECT_EQ(std::bit_cast<float>(toBits(1.0f + 3 * 0x1p-11f, "tf32")), 1.0f + 0x1p-9f);
  EXPECT_EQ(std::bit_cast<float>(toBits(1.0f + 0x1p-11f + 0x1p-20f, "tf32")), 1.0f + 0x1p-10f);
}

TEST_F(NcFunctionalDType, Fp8E4m3RoundsAndSaturates) {
  // IEEE-like e4m3 (bias 7, max finite 240): three mantissa bits, spacing 0.125 in [1, 2).
  EXPECT_EQ(toBits(1.0f, "f8e4m3") & 0xff, 0x38u);
  EXPECT_EQ(toBits(1.0625f, "f8e4m3") & 0xff, 0x38u);  // Tie between 1.0 and 1.125: even.
  EXPECT_EQ(toBits(1.1875f, "f8e4m3") & 0xff, 0x3au);  // Tie between 1.125 and 1.25: even.
  EXPECT_EQ(toBits(1.07f, "f8e4m3") & 0xff, 0x39u);    // Above the tie: up.
  EXPECT_EQ(toBits(-1.0f, "f8e4m3") & 0xff, 0xb8u);
  EXPECT_EQ(toBits(300.0f, "f8e4m3") & 0xff, 0x77u);   // Saturates at 240.
  EXPECT_EQ(toBits(0x1p-9f, "f8e4m3") & 0xff, 0x01u);  // Smallest subnormal.
  EXPECT_EQ(fromBits(0x77, "f8e4m3"), 240.0f);
  EXPECT_TRUE(std::isinf(fromBits(0x78, "f8e4m3")));
  // OCP e4m3fn: max 448, no infinities.
  EXPECT_EQ(toBits(1.0625f, "f8e4m3fn") & 0xff, 0x38u);
  EXPECT_EQ(toBits(500.0f, "f8e4m3fn") & 0xff, 0x7eu);
  EXPECT_EQ(fromBits(0x7e, "f8e4m3fn"), 448.0f);
  EXPECT_TRUE(std::isnan(fromBits(0x7f, "f8e4m3fn")));
  // e5m2: two mantissa bits.
  EXPECT_EQ(toBits(1.125f, "f8e5m2") & 0xff, 0x3cu);   // Tie between 1.0 and 1.25: even.
  EXPECT_EQ(toBits(1.375f, "f8e5m2") & 0xff, 0x3eu);   // Tie between 1.25 and 1.5: even.
  EXPECT_EQ(fromBits(0x3d, "f8e5m2"), 1.25f);
  // e8m0fnu: powers of two; ties go to the even exponent field.
  EXPECT_EQ(toBits(3.0f, "f8e8m0fnu") & 0xff, 0x80u);  // 1.5 * 2^1, field 128 even: 2.
  EXPECT_EQ(toBits(6.0f, "f8e8m0fnu") & 0xff, 0x82u);  // 1.5 * 2^2, field 129 odd: 8.
  EXPECT_EQ(fromBits(0x7f, "f8e8m0fnu"), 1.0f);
  EXPECT_TRUE(std::isnan(fromBits(0xff, "f8e8m0fnu")));
}

TEST_F(NcFunctionalDType, FloatToIntegerTruncatesAndSaturates) {
  EXPECT_EQ(static_cast<int32_t>(toBits(2.7f, "i32")), 2);
  EXPECT_EQ(static_cast<int32_t>(toBits(-2.7f, "i32")), -2);
  EXPECT_EQ(static_cast<int32_t>(toBits(1e10f, "i32")), std::numeric_limits<int32_t>::max());
  EXPECT_EQ(static_cast<int32_t>(toBits(-1e10f, "i32")), std::numeric_limits<int32_t>::min());
  EXPECT_EQ(toBits(NAN, "i32"), 0u);
  EXPECT_EQ(toBits(300.0f, "u8") & 0xff, 255u);
  EXPECT_EQ(toBits(-5.0f, "u8") & 0xff, 0u);
  EXPECT_EQ(static_cast<int16_t>(toBits(-40000.0f, "i16") & 0xffff), -32768);
  EXPECT_EQ(toBits(4e9f, "u32"), 4000000000u);
  EXPECT_EQ(toBits(0.5f, "bool") & 0xff, 1u);
  EXPECT_EQ(toBits(0.0f, "bool") & 0xff, 0u);
}

TEST_F(NcFunctionalDType, IntegersReadByValue) {
  EXPECT_EQ(fromBits(200, "u8"), 200.0f);
  EXPECT_EQ(fromBits(0xff, "i8"), -1.0f);
  EXPECT_EQ(fromBits(0xfffe, "i16"), -2.0f);
  EXPECT_EQ(fromBits(16777217u, "i32"), 16777216.0f);  // By value, rounded to fp32.
  EXPECT_EQ(fromBits(7, "bool"), 1.0f);
}

TEST_F(NcFunctionalDType, EqualDTypesCopyBitExact) {
  put<uint32_t>(kSbuf, 0, 0, 0x7fc00001u);  // A NaN with a payload.
  put<uint32_t>(kSbuf, 0, 4, 16777217u);
  ASSERT_TRUE(run("tensor_copy.ACT dst=sbuf[p0:1, off 64, [1,1]]:f32 src=sbuf[p0:1, off 0, [1,1]]:f32\n"
                  "tensor_copy.DVE dst=sbuf[p0:1, off 68, [1,1]]:i32 src=sbuf[p0:1, off 4, [1,1]]:i32").ok());
  EXPECT_EQ(get<uint32_t>(kSbuf, 0, 64), 0x7fc00001u);
  EXPECT_EQ(get<uint32_t>(kSbuf, 0, 68), 16777217u);
}

}  // namespace
}  // namespace tessel::nc::testing
