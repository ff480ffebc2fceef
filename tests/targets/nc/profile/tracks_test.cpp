// The helpers every profiler output shares: track order, engine of a track, interval unions, lane
// assignment, and the JSON text writers.
#include "targets/nc/profile/tracks.h"

#include <gtest/gtest.h>

#include "targets/nc/profile/json_text.h"
#include "test_timeline.h"

namespace tessel::nc {
namespace {

TEST(Tracks, DisplayOrder) {
  Timeline timeline;
  for (const char *name : {"DMA.q10", "custom", "DMA.q2", "DVE", "PE.Matmul"})
    timeline.events.push_back(testing::makeEvent(0, name, "x", 0, 0, 1, 1));
  EXPECT_EQ(orderedTracks(timeline), (std::vector<std::string>{"PE.LoadStationary", "PE.Matmul", "ACT", "DVE", "POOL",
                                                               "SP", "DMA.q2", "DMA.q10", "custom"}));
  EXPECT_TRUE(trackBefore("SP", "DMA.q0"));
  EXPECT_FALSE(trackBefore("DMA.q0", "DMA.q0"));
}

TEST(Tracks, EngineOfTrack) {
  EXPECT_EQ(engineOfTrack("PE.LoadStationary"), "PE");
  EXPECT_EQ(engineOfTrack("DMA.q15"), "DMA");
  EXPECT_EQ(engineOfTrack("ACT"), "ACT");
}

TEST(Tracks, UnionOfIntervals) {
  EXPECT_DOUBLE_EQ(unionLengthNs({}), 0);
  EXPECT_DOUBLE_EQ(unionLengthNs({{0, 10}, {5, 15}}), 15);            // Overlapping.
  EXPECT_DOUBLE_EQ(unionLengthNs({{0, 10}, {2, 3}}), 10);             // Nested.
  EXPECT_DOUBLE_EQ(unionLengthNs({{10, 20}, {0, 10}}), 20);           // Touching, out of order.
  EXPECT_DOUBLE_EQ(unionLengthNs({{0, 1}, {5, 7}, {6, 9}}), 5);       // Disjoint and overlapping.
  EXPECT_DOUBLE_EQ(unionLengthNs({{3, 3}, {4, 2}}), 0);               // Empty and reversed add nothing.
}

TEST(Tracks, LanesSeparateOverlappingEvents) {
  Timeline timeline;
  timeline.events = {testing::makeEvent(0, "DMA.q0", "a", 0, 0, 10, 10),
                     testing::makeEvent(1, "DMA.q0", "b", 0, 5, 15, 15),
                     testing::makeEvent(2, "DMA.q0", "c", 0, 10, 12, 12),
                     testing::makeEvent(3, "DMA.q0", "d", 0, 15, 20, 20)};
  LaneAssignment lanes = assignLanes(timeline, {0, 1, 2, 3});
  EXPECT_EQ(lanes.lanes, 2);
  // c starts when a ends, so it reuses lane 0; d starts when b ends and takes the lowest free lane.
  EXPECT_EQ(lanes.laneOfEvent, (std::vector<int>{0, 1, 0, 0}));
  EXPECT_EQ(assignLanes(timeline, {}).lanes, 1);
}

TEST(Tracks, StallAndWaitLabels) {
  EXPECT_EQ(stallReasonLabel(StallReason::DmaEngine), "dma_engine");
  EXPECT_EQ(waitLabel(SemaphoreWait{3, 2}), "s3>=2");
  TimelineEvent event = testing::makeEvent(0, "ACT", "activation", 10, 25.5, 30, 31);
  EXPECT_DOUBLE_EQ(stallNsOf(event), 15.5);
  std::vector<Instruction> program = testing::smallProgram();
  EXPECT_EQ(instructionText(program, 99), "");
  EXPECT_NE(instructionText(program, 0).find("nc_matmul"), std::string::npos);
}

TEST(JsonText, Decimals) {
  EXPECT_EQ(decimalText(1.5, 3), "1.5");
  EXPECT_EQ(decimalText(2, 3), "2");
  EXPECT_EQ(decimalText(-0.0004, 3), "0");
  EXPECT_EQ(decimalText(-1.25, 3), "-1.25");
  EXPECT_EQ(decimalText(0.1 + 0.2, 6), "0.3");
  EXPECT_EQ(decimalText(0.0405, 6), "0.0405");
  EXPECT_EQ(decimalText(123456789.000001, 6), "123456789.000001");
}

TEST(JsonText, Quote) {
  EXPECT_EQ(jsonQuote("a\"b\\c\n"), "\"a\\\"b\\\\c\\n\"");
  EXPECT_EQ(jsonQuote(std::string("\x01", 1)), "\"\\u0001\"");
}

}  // namespace
}  // namespace tessel::nc
