// Summary metrics on the hand-made timeline of test_timeline.h: active % from the union of busy
// intervals, MFU/HFU/MBU, DMA sizes, stalls by reason, the bounding engine and instruction counts,
// and the text and JSON forms.
#include "targets/nc/profile/summary.h"

#include <gtest/gtest.h>

#include "targets/nc/profile/tracks.h"
#include "test_timeline.h"

namespace tessel::nc {
namespace {

constexpr double kTolerance = 1e-9;

const TrackSummary &track(const ProfileSummary &summary, const std::string &name) {
  for (const TrackSummary &row : summary.tracks)
    if (row.track == name) return row;
  ADD_FAILURE() << "no track " << name;
  static TrackSummary none;
  return none;
}

const EngineSummary &engine(const ProfileSummary &summary, const std::string &name) {
  for (const EngineSummary &row : summary.engines)
    if (row.engine == name) return row;
  ADD_FAILURE() << "no engine " << name;
  static EngineSummary none;
  return none;
}

double stall(const StallNsByReason &stalls, StallReason reason) { return stalls[static_cast<size_t>(reason)]; }

class SummaryTest : public ::testing::Test {
 protected:
  std::vector<Instruction> program_ = testing::smallProgram();
  Timeline timeline_ = testing::smallTimeline();
  ProfileSummary summary_ = summarize(timeline_, program_);
};

TEST_F(SummaryTest, TotalTime) {
  EXPECT_EQ(summary_.profileName, "nc-v2");
  EXPECT_DOUBLE_EQ(summary_.totalNs, 1000);
  EXPECT_DOUBLE_EQ(summary_.totalUs, 1);
  EXPECT_EQ(summary_.events, 9u);
}

TEST_F(SummaryTest, TrackActivityIsTheUnionOfBusyIntervals) {
  EXPECT_NEAR(track(summary_, "PE.LoadStationary").activePercent, 10, kTolerance);
  EXPECT_NEAR(track(summary_, "PE.Matmul").activePercent, 40, kTolerance);
  EXPECT_NEAR(track(summary_, "ACT").activePercent, 25, kTolerance);
  EXPECT_NEAR(track(summary_, "DVE").activePercent, 4.975, kTolerance);
  EXPECT_NEAR(track(summary_, "DVE").busyNs, 49.75, kTolerance);
  // q0's two transfers overlap on [200,300]: 500 ns busy, not 600.
  EXPECT_NEAR(track(summary_, "DMA.q0").busyNs, 500, kTolerance);
  EXPECT_NEAR(track(summary_, "DMA.q0").activePercent, 50, kTolerance);
  EXPECT_NEAR(track(summary_, "DMA.q1").activePercent, 30, kTolerance);
  EXPECT_EQ(track(summary_, "DMA.q0").events, 2u);
  EXPECT_EQ(track(summary_, "POOL").events, 0u);
  EXPECT_DOUBLE_EQ(track(summary_, "POOL").activePercent, 0);
}

TEST_F(SummaryTest, TracksInDisplayOrder) {
  std::vector<std::string> names;
  for (const TrackSummary &row : summary_.tracks) names.push_back(row.track);
  EXPECT_EQ(names, (std::vector<std::string>{"PE.LoadStationary", "PE.Matmul", "ACT", "DVE", "POOL", "SP", "DMA.q0",
                                             "DMA.q1"}));
}

TEST_F(SummaryTest, EngineActivityMergesTracks) {
  EXPECT_NEAR(engine(summary_, "PE").activePercent, 50, kTolerance);  // [0,400] + [500,600].
  EXPECT_NEAR(engine(summary_, "DMA").activePercent, 80, kTolerance);  // [0,500] + [600,900].
  EXPECT_NEAR(summary_.dmaActivePercent, 80, kTolerance);
  EXPECT_EQ(engine(summary_, "PE").events, 3u);
  EXPECT_EQ(engine(summary_, "SP").events, 0u);
  EXPECT_EQ(summary_.boundingEngine, "DMA");
  EXPECT_NEAR(summary_.boundingActivePercent, 80, kTolerance);
}

TEST_F(SummaryTest, Utilization) {
  EXPECT_DOUBLE_EQ(summary_.matmulFlops, 3e5);
  EXPECT_DOUBLE_EQ(summary_.peFlops, 3.5e5);
  EXPECT_NEAR(summary_.mfuPercent, 30, kTolerance);
  EXPECT_NEAR(summary_.hfuPercent, 35, kTolerance);
  EXPECT_NEAR(summary_.transposeFlopsPercent, 100.0 / 7, kTolerance);
  EXPECT_EQ(summary_.hbmReadBytes, 12288u);
  EXPECT_EQ(summary_.hbmWriteBytes, 16384u);
  EXPECT_NEAR(summary_.mbuPercent, 28.672, kTolerance);
  EXPECT_NEAR(summary_.arithmeticIntensity, 3e5 / 28672, kTolerance);
  EXPECT_NEAR(summary_.ridgeIntensity, 10, kTolerance);  // 1e12 FLOP/s over 1e11 B/s.
}

TEST_F(SummaryTest, DmaSizes) {
  EXPECT_EQ(summary_.dmaTransfers, 3u);
  EXPECT_EQ(summary_.dmaBytes, 28672u);
  EXPECT_EQ(summary_.dmaChunks, 14u);
  EXPECT_NEAR(summary_.averageDmaBytes, 28672.0 / 3, kTolerance);
  EXPECT_NEAR(summary_.averageChunkBytes, 2048, kTolerance);
}

TEST_F(SummaryTest, StallsByReasonPerEngine) {
  EXPECT_NEAR(stall(summary_.stallNs, StallReason::Semaphore), 250, kTolerance);
  EXPECT_NEAR(stall(summary_.stallNs, StallReason::Port), 150.5, kTolerance);
  EXPECT_NEAR(stall(summary_.stallNs, StallReason::DmaEngine), 100, kTolerance);
  EXPECT_NEAR(stall(summary_.stallNs, StallReason::Throttle), 0, kTolerance);
  EXPECT_NEAR(stall(engine(summary_, "ACT").stallNs, StallReason::Semaphore), 250, kTolerance);
  EXPECT_NEAR(stall(engine(summary_, "PE").stallNs, StallReason::Port), 100, kTolerance);
  EXPECT_NEAR(stall(engine(summary_, "DVE").stallNs, StallReason::Port), 50.5, kTolerance);
  EXPECT_NEAR(stall(engine(summary_, "DMA").stallNs, StallReason::DmaEngine), 100, kTolerance);
  EXPECT_NEAR(stall(track(summary_, "PE.Matmul").stallNs, StallReason::Port), 100, kTolerance);
  EXPECT_NEAR(stall(track(summary_, "PE.LoadStationary").stallNs, StallReason::Port), 0, kTolerance);
}

TEST_F(SummaryTest, InstructionCountsFromTheProgram) {
  using Counts = std::vector<std::pair<std::string, size_t>>;
  EXPECT_EQ(summary_.instructionCounts, (Counts{{"activation", 2},
                                                {"dma_copy", 3},
                                                {"nc_matmul", 1},
                                                {"nc_transpose", 1},
                                                {"tensor_tensor", 1}}));
  // Without the program the events' names are counted, each instruction once (the two PE halves
  // of instruction 0 are one nc_matmul).
  ProfileSummary withoutProgram = summarize(timeline_, {});
  EXPECT_EQ(withoutProgram.instructionCounts, summary_.instructionCounts);
}

TEST(Summary, EmptyTimelineHasNoBoundingEngineAndNoDivisionByZero) {
  ProfileSummary summary = summarize(Timeline{}, {});
  EXPECT_EQ(summary.boundingEngine, "");
  EXPECT_EQ(summary.mfuPercent, 0);
  EXPECT_EQ(summary.mbuPercent, 0);
  EXPECT_EQ(summary.averageDmaBytes, 0);
  EXPECT_EQ(summary.tracks.size(), std::size(kComputeTracks));
  EXPECT_NE(formatSummary(summary).find("bounding engine"), std::string::npos);
}

TEST(Summary, TotalTimeCoversTheLastCompletion) {
  Timeline timeline = testing::smallTimeline();
  timeline.totalNs = 0;  // A timeline that left it unset still gets the last completion.
  EXPECT_DOUBLE_EQ(summarize(timeline, {}).totalNs, 1000);
}

TEST_F(SummaryTest, TextTableIsAligned) {
  std::string text = formatSummary(summary_);
  EXPECT_NE(text.find("Profile nc-v2: total 1.000 us"), std::string::npos) << text;
  EXPECT_NE(text.find("MFU"), std::string::npos);
  EXPECT_NE(text.find("30.00 %"), std::string::npos);
  EXPECT_NE(text.find("DMA (80.00 %)"), std::string::npos);
  EXPECT_NE(text.find("below the 32768 B target"), std::string::npos);
  // Every row of the engine table puts its active % in the same column.
  size_t engines = text.find("\nEngines\n");
  ASSERT_NE(engines, std::string::npos);
  size_t headerStart = engines + 9;
  std::string header = text.substr(headerStart, text.find('\n', headerStart) - headerStart);
  size_t activeEnd = header.find("active") + std::string("active").size();
  size_t lineStart = text.find('\n', headerStart) + 1;
  for (int row = 0; row < 6; ++row) {
    std::string line = text.substr(lineStart, text.find('\n', lineStart) - lineStart);
    ASSERT_GE(line.size(), activeEnd) << line;
    EXPECT_EQ(line.substr(activeEnd - 1, 1), "%") << line;
    lineStart = text.find('\n', lineStart) + 1;
  }
  for (const TrackSummary &row : summary_.tracks) EXPECT_NE(text.find(row.track), std::string::npos);
}

TEST_F(SummaryTest, Json) {
  nlohmann::json json = summaryToJson(summary_);
  EXPECT_EQ(json["bounding_engine"], "DMA");
  EXPECT_NEAR(json["mfu_percent"].get<double>(), 30, kTolerance);
  EXPECT_NEAR(json["mbu_percent"].get<double>(), 28.672, kTolerance);
  EXPECT_EQ(json["dma_bytes"], 28672);
  EXPECT_NEAR(json["stall_ns"]["semaphore"].get<double>(), 250, kTolerance);
  EXPECT_EQ(json["instruction_counts"]["dma_copy"], 3);
  ASSERT_EQ(json["tracks"].size(), summary_.tracks.size());
  EXPECT_EQ(json["tracks"][6]["track"], "DMA.q0");
  EXPECT_NEAR(json["engines"][0]["active_percent"].get<double>(), 50, kTolerance);
  // Round trip through text.
  EXPECT_EQ(nlohmann::json::parse(json.dump()), json);
}

}  // namespace
}  // namespace tessel::nc
