// The Perfetto trace: valid JSON, one named thread per track in display order, complete events
// with ts/dur in microseconds, args with the disassembly, semaphore and stall, and counter tracks.
#include "targets/nc/profile/trace.h"

#include <algorithm>
#include <map>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "targets/nc/isa/disassembler.h"
#include "test_timeline.h"

namespace tessel::nc {
namespace {

constexpr double kTolerance = 1e-9;

class TraceTest : public ::testing::Test {
 protected:
  void SetUp() override { trace_ = nlohmann::json::parse(formatTrace(timeline_, program_)); }

  /// Thread names by tid.
  std::map<int, std::string> threadNames() const {
    std::map<int, std::string> names;
    for (const nlohmann::json &event : trace_["traceEvents"])
      if (event["ph"] == "M" && event["name"] == "thread_name") names[event["tid"]] = event["args"]["name"];
    return names;
  }

  /// The complete events of one instruction on one thread name.
  std::vector<nlohmann::json> slices(const std::string &thread, size_t instruction) const {
    std::map<int, std::string> names = threadNames();
    std::vector<nlohmann::json> found;
    for (const nlohmann::json &event : trace_["traceEvents"])
      if (event["ph"] == "X" && names[event["tid"]] == thread && event["args"]["instruction"] == instruction)
        found.push_back(event);
    return found;
  }

  std::vector<Instruction> program_ = testing::smallProgram();
  Timeline timeline_ = testing::smallTimeline();
  nlohmann::json trace_;
};

TEST_F(TraceTest, OneNamedThreadPerTrackInDisplayOrder) {
  std::vector<std::string> names;
  for (const auto &[tid, name] : threadNames()) names.push_back(name);
  // DMA.q0 has two overlapping transfers, so its second lane is a thread of its own.
  EXPECT_EQ(names, (std::vector<std::string>{"PE.LoadStationary", "PE.Matmul", "ACT", "DVE", "POOL", "SP", "DMA.q0",
                                             "DMA.q0 [2]", "DMA.q1"}));
  size_t sortIndices = 0, processNames = 0;
  for (const nlohmann::json &event : trace_["traceEvents"]) {
    if (event["ph"] != "M") continue;
    EXPECT_EQ(event["pid"], 0);
    if (event["name"] == "thread_sort_index") {
      ++sortIndices;
      EXPECT_EQ(event["args"]["sort_index"], event["tid"]);
    }
    if (event["name"] == "process_name") {
      ++processNames;
      EXPECT_EQ(event["args"]["name"], "core (nc-v2)");
    }
  }
  EXPECT_EQ(sortIndices, names.size());
  EXPECT_EQ(processNames, 1u);
  EXPECT_EQ(trace_["displayTimeUnit"], "ns");
}

TEST_F(TraceTest, CompleteEventsInMicroseconds) {
  size_t complete = 0;
  for (const nlohmann::json &event : trace_["traceEvents"])
    if (event["ph"] == "X") ++complete;
  EXPECT_EQ(complete, timeline_.events.size());

  std::vector<nlohmann::json> matmul = slices("PE.Matmul", 0);
  ASSERT_EQ(matmul.size(), 1u);
  EXPECT_EQ(matmul[0]["name"], "Matmul");
  EXPECT_EQ(matmul[0]["cat"], "PE");
  EXPECT_EQ(matmul[0]["pid"], 0);
  EXPECT_NEAR(matmul[0]["ts"].get<double>(), 0.1, kTolerance);
  EXPECT_NEAR(matmul[0]["dur"].get<double>(), 0.3, kTolerance);
  EXPECT_NEAR(matmul[0]["args"]["matmul_flops"].get<double>(), 3e5, kTolerance);

  // Fractional nanoseconds survive: [750.5, 800.25] ns.
  std::vector<nlohmann::json> dve = slices("DVE", 7);
  ASSERT_EQ(dve.size(), 1u);
  EXPECT_NEAR(dve[0]["ts"].get<double>(), 0.7505, kTolerance);
  EXPECT_NEAR(dve[0]["dur"].get<double>(), 0.04975, kTolerance);
  EXPECT_NEAR(dve[0]["args"]["stall_ns"].get<double>(), 50.5, kTolerance);
  EXPECT_EQ(dve[0]["args"]["stall"], "port");

  EXPECT_EQ(slices("DMA.q0 [2]", 5).size(), 1u);
  std::vector<nlohmann::json> dma = slices("DMA.q0", 4);
  ASSERT_EQ(dma.size(), 1u);
  EXPECT_EQ(dma[0]["args"]["dma_bytes"], 8192);
  EXPECT_EQ(dma[0]["args"]["hbm_read_bytes"], 8192);
}

TEST_F(TraceTest, ArgsNameTheInstructionSemaphoreAndStall) {
  std::vector<nlohmann::json> act = slices("ACT", 2);
  ASSERT_EQ(act.size(), 1u);
  const nlohmann::json &args = act[0]["args"];
  EXPECT_EQ(args["insn"], formatInstruction(program_[2]));
  EXPECT_EQ(args["operands"]["dst"], formatAccessPattern(*program_[2].operands[0]));
  EXPECT_EQ(args["operands"]["src"], formatAccessPattern(*program_[2].operands[1]));
  EXPECT_FALSE(args["operands"].contains("bias"));
  EXPECT_EQ(args["wait"], "s3>=2");
  EXPECT_EQ(args["stall"], "semaphore");
  EXPECT_NEAR(args["stall_ns"].get<double>(), 250, kTolerance);
  EXPECT_NEAR(args["ready_ns"].get<double>(), 200, kTolerance);
  // Without a stall there is no wait.
  std::vector<nlohmann::json> next = slices("ACT", 3);
  ASSERT_EQ(next.size(), 1u);
  EXPECT_FALSE(next[0]["args"].contains("wait"));
  EXPECT_EQ(next[0]["args"]["stall"], "none");
}

TEST_F(TraceTest, SlicesOnOneThreadDoNotOverlap) {
  std::map<int, std::vector<std::pair<double, double>>> byThread;
  for (const nlohmann::json &event : trace_["traceEvents"])
    if (event["ph"] == "X") {
      EXPECT_GE(event["dur"].get<double>(), 0);
      byThread[event["tid"]].emplace_back(event["ts"], event["ts"].get<double>() + event["dur"].get<double>());
    }
  for (auto &[tid, intervals] : byThread) {
    std::sort(intervals.begin(), intervals.end());
    for (size_t i = 1; i < intervals.size(); ++i) EXPECT_LE(intervals[i - 1].second, intervals[i].first + kTolerance);
  }
}

TEST_F(TraceTest, CounterTracks) {
  std::map<std::string, std::vector<std::pair<double, double>>> counters;
  for (const nlohmann::json &event : trace_["traceEvents"])
    if (event["ph"] == "C") counters[event["name"]].emplace_back(event["ts"], event["args"]["value"]);
  ASSERT_TRUE(counters.contains("PE utilization %"));
  ASSERT_TRUE(counters.contains("pending DMAs"));
  ASSERT_TRUE(counters.contains("DMA throughput GB/s"));
  double maxPending = 0, maxPe = 0;
  for (const auto &[ts, value] : counters["pending DMAs"]) maxPending = std::max(maxPending, value);
  for (const auto &[ts, value] : counters["PE utilization %"]) maxPe = std::max(maxPe, value);
  EXPECT_EQ(maxPending, 2);  // q0's two transfers are pending together on [100, 350].
  EXPECT_EQ(counters["pending DMAs"].back().second, 0);
  EXPECT_NEAR(maxPe, 100, 1e-6);
  // At 0.25 us the PE Matmul row is busy, at 0.45 us it is not.
  auto valueAt = [](const std::vector<std::pair<double, double>> &samples, double us) {
    double value = 0;
    for (const auto &[ts, v] : samples)
      if (ts <= us) value = v;
    return value;
  };
  EXPECT_NEAR(valueAt(counters["PE utilization %"], 0.25), 100, 1e-6);
  EXPECT_NEAR(valueAt(counters["PE utilization %"], 0.45), 0, 1e-6);
  EXPECT_NEAR(valueAt(counters["pending DMAs"], 0.2), 2, 1e-6);
  EXPECT_NEAR(valueAt(counters["pending DMAs"], 0.7), 1, 1e-6);
}

TEST(Trace, WithoutProgramAndEmpty) {
  nlohmann::json trace = nlohmann::json::parse(formatTrace(testing::smallTimeline(), {}));
  for (const nlohmann::json &event : trace["traceEvents"]) {
    if (event["ph"] == "X") {
      EXPECT_FALSE(event["args"].contains("insn"));
    }
  }
  nlohmann::json empty = nlohmann::json::parse(formatTrace(Timeline{}, {}));
  EXPECT_TRUE(empty["traceEvents"].is_array());
}

TEST(Trace, LargeTimeline) {
  Timeline timeline = testing::largeTimeline(100000);
  nlohmann::json trace = nlohmann::json::parse(formatTrace(timeline, {}));
  size_t complete = 0;
  for (const nlohmann::json &event : trace["traceEvents"])
    if (event["ph"] == "X") ++complete;
  EXPECT_EQ(complete, timeline.events.size());
}

}  // namespace
}  // namespace tessel::nc
