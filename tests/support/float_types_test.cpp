// Narrow float conversions: exact values, round-to-nearest-even, overflow and NaN handling.
#include "support/float_types.h"

#include <gtest/gtest.h>

namespace tessel {
namespace {

TEST(Float16, RoundTripsExactValuesAndRoundsToNearestEven) {
  EXPECT_EQ(Float16(1.0f).bits, 0x3c00);
  EXPECT_EQ(Float16(-2.0f).bits, 0xc000);
  EXPECT_EQ(Float16(65504.0f).bits, 0x7bff);
  EXPECT_EQ(Float16(70000.0f).bits, 0x7c00);             // Overflow -> inf.
  EXPECT_EQ(Float16(5.960464477539063e-08f).bits, 0x0001);  // Smallest subnormal.
  EXPECT_EQ(Float16(1.0f + 1.0f / 2048).bits, 0x3c00);   // Tie rounds to even (down).
  EXPECT_EQ(Float16(1.0f + 3.0f / 2048).bits, 0x3c02);   // Tie rounds to even (up).
  EXPECT_FLOAT_EQ(static_cast<float>(Float16::fromBits(0x3555)), 0.333251953125f);
  EXPECT_TRUE(std::isnan(static_cast<float>(Float16(NAN))));
}

TEST(BFloat16, RoundsToNearestEven) {
  EXPECT_EQ(BFloat16(1.0f).bits, 0x3f80);
  EXPECT_EQ(BFloat16(std::bit_cast<float>(0x3f808000u)).bits, 0x3f80);  // Tie, even stays.
  EXPECT_EQ(BFloat16(std::bit_cast<float>(0x3f818000u)).bits, 0x3f82);  // Tie, odd rounds up.
  EXPECT_FLOAT_EQ(static_cast<float>(BFloat16::fromBits(0x4049)), 3.140625f);
}

TEST(Float8E4M3FN, SaturatesAndHasNoInfinity) {
  EXPECT_FLOAT_EQ(static_cast<float>(Float8E4M3FN(448.0f)), 448.0f);
  EXPECT_FLOAT_EQ(static_cast<float>(Float8E4M3FN(1000.0f)), 448.0f);             // Saturating.
  EXPECT_TRUE(std::isnan(static_cast<float>(Float8E4M3FN(1000.0f, /*saturate=*/false))));
  EXPECT_FLOAT_EQ(static_cast<float>(Float8E4M3FN(0.001953125f)), 0.001953125f);  // Smallest subnormal 2^-9.
  EXPECT_EQ(Float8E4M3FN(NAN).bits & 0x7f, 0x7f);
}

TEST(Float8E5M2, KeepsInfinity) {
  EXPECT_FLOAT_EQ(static_cast<float>(Float8E5M2(57344.0f)), 57344.0f);
  EXPECT_TRUE(std::isinf(static_cast<float>(Float8E5M2(INFINITY, /*saturate=*/false))));
  EXPECT_FLOAT_EQ(static_cast<float>(Float8E5M2(1.5f)), 1.5f);
}

}  // namespace
}  // namespace tessel
