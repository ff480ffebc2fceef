// The tile rules the DSL and the verifier share (isa/tile_rules.h): T6's start alignment follows the
// array's size (a quarter, half or whole of it), not a fixed 32/64/128; access-pattern fields; the PE
// dtype rules of section 3 and T12.
#include <gtest/gtest.h>

#include "targets/nc/isa/tile_rules.h"

namespace tessel::nc {
namespace {

TEST(TileRules, PartitionStartAlignmentIsAQuarterHalfOrWholeArray) {
  EXPECT_EQ(partitionStartAlignment(1, 128), 32);
  EXPECT_EQ(partitionStartAlignment(32, 128), 32);
  EXPECT_EQ(partitionStartAlignment(33, 128), 64);
  EXPECT_EQ(partitionStartAlignment(64, 128), 64);
  EXPECT_EQ(partitionStartAlignment(65, 128), 128);
  EXPECT_EQ(partitionStartAlignment(128, 128), 128);
  // A 64-partition machine's quarter is 16.
  EXPECT_EQ(partitionStartAlignment(16, 64), 16);
  EXPECT_EQ(partitionStartAlignment(17, 64), 32);
  EXPECT_EQ(partitionStartAlignment(33, 64), 64);
}

TEST(TileRules, AccessDimsHaveInt16StridesAndUint16Counts) {
  EXPECT_TRUE(accessDimEncodable(INT16_MAX, UINT16_MAX));
  EXPECT_TRUE(accessDimEncodable(INT16_MIN, 1));
  EXPECT_FALSE(accessDimEncodable(int64_t{INT16_MAX} + 1, 1));
  EXPECT_FALSE(accessDimEncodable(int64_t{INT16_MIN} - 1, 1));
  EXPECT_FALSE(accessDimEncodable(1, int64_t{UINT16_MAX} + 1));
}

TEST(TileRules, PeInputsAndWidePairs) {
  for (DType t : {DType::F8E4M3, DType::F8E5M2, DType::BF16, DType::F16, DType::TF32, DType::F32})
    EXPECT_TRUE(isPeInput(t)) << dtypeName(t);
  EXPECT_TRUE(peInputsPair(DType::BF16, DType::F8E4M3));
  EXPECT_TRUE(peInputsPair(DType::F32, DType::TF32));
  EXPECT_FALSE(peInputsPair(DType::F32, DType::BF16));
  EXPECT_FALSE(peInputsPair(DType::F16, DType::TF32));
}

}  // namespace
}  // namespace tessel::nc
