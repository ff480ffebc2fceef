// Footprints (the bytes an access pattern touches per partition, merged) that the race detector
// compares: contiguous and strided patterns, broadcast and negative strides, HBM addresses, and the
// overlap / cover queries.
#include <gtest/gtest.h>

#include "targets/nc/isa/footprint.h"
#include "timing_fixture.h"

namespace tessel::nc::testing {
namespace {

AccessPattern pattern(MemSpace space, uint64_t offsetBytes, std::vector<FreeDim> dims, DType dtype = DType::F32,
                      uint8_t startPartition = 0, uint8_t partitionCount = 1) {
  AccessPattern ap;
  ap.space = space;
  ap.startPartition = startPartition;
  ap.partitionCount = partitionCount;
  ap.offsetBytes = offsetBytes;
  ap.dims = std::move(dims);
  ap.dtype = dtype;
  return ap;
}

TEST(Footprint, ContiguousPatternIsOneRange) {
  Footprint fp = computeFootprint(pattern(MemSpace::SBUF, 64, {{1, 512}}, DType::BF16, 32, 32));
  EXPECT_EQ(fp.startPartition, 32);
  EXPECT_EQ(fp.partitionCount, 32);
  ASSERT_EQ(fp.ranges.size(), 1u);
  EXPECT_EQ(fp.ranges[0], (ByteRange{64, 64 + 1024}));
  EXPECT_EQ(fp.bytesPerPartition(), 1024u);
}

TEST(Footprint, NestedDimsThatStepOverEachOtherMerge) {
  // [[8,4],[1,8]] is 32 contiguous elements.
  Footprint fp = computeFootprint(pattern(MemSpace::SBUF, 0, {{8, 4}, {1, 8}}));
  ASSERT_EQ(fp.ranges.size(), 1u);
  EXPECT_EQ(fp.ranges[0], (ByteRange{0, 128}));
}

TEST(Footprint, StridedPatternHasOneRangePerRun) {
  Footprint rows = computeFootprint(pattern(MemSpace::SBUF, 0, {{16, 3}, {1, 4}}));
  ASSERT_EQ(rows.ranges.size(), 3u);
  EXPECT_EQ(rows.ranges[1], (ByteRange{64, 80}));
  Footprint everyOther = computeFootprint(pattern(MemSpace::SBUF, 0, {{2, 4}}, DType::BF16));
  ASSERT_EQ(everyOther.ranges.size(), 4u);
  EXPECT_EQ(everyOther.ranges[3], (ByteRange{12, 14}));
}

TEST(Footprint, BroadcastAndNegativeStridesTouchEachByteOnce) {
  Footprint broadcast = computeFootprint(pattern(MemSpace::SBUF, 100, {{0, 8}, {1, 4}}));
  ASSERT_EQ(broadcast.ranges.size(), 1u);
  EXPECT_EQ(broadcast.ranges[0], (ByteRange{100, 116}));
  Footprint reversed = computeFootprint(pattern(MemSpace::SBUF, 60, {{-1, 16}}));
  ASSERT_EQ(reversed.ranges.size(), 1u);
  EXPECT_EQ(reversed.ranges[0], (ByteRange{0, 64}));
  Footprint reversedRows = computeFootprint(pattern(MemSpace::SBUF, 128, {{-16, 3}, {1, 4}}));
  ASSERT_EQ(reversedRows.ranges.size(), 3u);
  EXPECT_EQ(reversedRows.ranges[0], (ByteRange{0, 16}));
}

TEST(Footprint, HbmUsesAbsoluteAddressesAndOnePartition) {
  Footprint fp = computeFootprint(pattern(MemSpace::HBM, 1 << 20, {{100000, 2}, {1, 256}}, DType::BF16));
  EXPECT_EQ(fp.startPartition, 0);
  EXPECT_EQ(fp.partitionCount, 1);
  ASSERT_EQ(fp.ranges.size(), 2u);
  EXPECT_EQ(fp.ranges[1], (ByteRange{(1 << 20) + 200000, (1 << 20) + 200512}));
}

TEST(Footprint, NoDimsIsOneElement) {
  Footprint fp = computeFootprint(pattern(MemSpace::PSUM, 8, {}));
  ASSERT_EQ(fp.ranges.size(), 1u);
  EXPECT_EQ(fp.ranges[0], (ByteRange{8, 12}));
}

TEST(Footprint, OverlapAndCoverQueries) {
  std::vector<ByteRange> a = {{0, 10}, {20, 30}}, b = {{10, 20}, {25, 40}}, c = {{12, 18}};
  EXPECT_EQ(firstCommonByte(a, b), 25u);
  EXPECT_FALSE(firstCommonByte(a, c).has_value());
  EXPECT_TRUE(rangesCover(b, c));
  EXPECT_FALSE(rangesCover(a, b));
  EXPECT_TRUE(rangesCover(a, {{0, 10}, {22, 30}}));
  EXPECT_FALSE(rangesCover(a, {{5, 15}}));
}

}  // namespace
}  // namespace tessel::nc::testing
