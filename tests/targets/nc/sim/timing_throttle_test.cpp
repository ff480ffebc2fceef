// nc-v3 PE power throttling (accelerator-model.md section 9.5): the PE starts at half of its peak
// rate and ramps to full over rampUs of activity; after a window of low utilization the cap
// re-engages. nc-v2 has no throttle.
#include <gtest/gtest.h>

#include "targets/nc/sim/timing/throttle.h"
#include "timing_fixture.h"

namespace tessel::nc::testing {
namespace {

std::string matmuls(int count, const std::string &firstExtra = "") {
  std::string text;
  for (int i = 0; i < count; ++i)
    text += "nc_matmul.PE dst=psum[p0:128, off 0, [1,512]]:f32 stationary=sbuf[p0:128, off " +
            std::to_string((i % 2) * 256) + ", [1,128]]:bf16 moving=sbuf[p0:128, off 8192, [1,512]]:bf16" +
            (i == 0 ? firstExtra : "") + "\n";
  return text;
}

double mmNs(const MachineProfile &profile) {
  return ns(profile, Engine::PE, static_cast<double>(costMatmulCycles(profile, {128, 128, 512})));
}

TEST(Throttle, CapStartsAtStartUtilizationAndRampsWithActivity) {
  MachineProfile v3 = bundledProfile("nc-v3");
  ASSERT_TRUE(v3.throttle.has_value());
  PeThrottle throttle(v3);
  EXPECT_DOUBLE_EQ(throttle.capAt(0), v3.throttle->startUtilization);
  const double rampNs = v3.throttle->rampUs * 1000;
  throttle.recordBusy(0, rampNs / 2);
  EXPECT_DOUBLE_EQ(throttle.capAt(rampNs / 2), (1 + v3.throttle->startUtilization) / 2);
  throttle.recordBusy(rampNs / 2, rampNs);
  EXPECT_DOUBLE_EQ(throttle.capAt(rampNs), 1.0);
  // A full window without work re-engages the cap.
  const double windowNs = v3.throttle->windowUs * 1000;
  EXPECT_DOUBLE_EQ(throttle.capAt(rampNs + windowNs), v3.throttle->startUtilization);
}

TEST(Throttle, ReengagesOnlyWhenAWindowFallsBelowTheThreshold) {
  // Busy for the whole ramp, then idle. A window ending at `end + (1 - threshold) * window` still has
  // exactly `threshold` utilization (no re-engage); one ns later it has less (re-engage).
  MachineProfile v3 = bundledProfile("nc-v3");
  const double rampNs = v3.throttle->rampUs * 1000, windowNs = v3.throttle->windowUs * 1000;
  const double threshold = v3.throttle->reengageBelowUtilization;
  const double endNs = 2 * windowNs;
  const double boundaryNs = endNs + (1 - threshold) * windowNs;
  for (double offsetNs : {0.0, 1.0}) {
    PeThrottle throttle(v3);
    throttle.capAt(0);
    throttle.recordBusy(0, endNs);
    ASSERT_GE(endNs, rampNs);
    EXPECT_DOUBLE_EQ(throttle.capAt(boundaryNs + offsetNs), offsetNs == 0 ? 1.0 : v3.throttle->startUtilization)
        << "offset " << offsetNs;
  }
}

TEST(Throttle, FirstMatmulsOnNcV3RunAtHalfRateThenFull) {
  MachineProfile v3 = bundledProfile("nc-v3");
  Timeline timeline = timelineOf(matmuls(40), v3);
  TimelineEvent first = eventOf(timeline, 0, "PE.Matmul");
  EXPECT_NEAR(first.endNs - first.startNs, mmNs(v3) / v3.throttle->startUtilization, kTimeToleranceNs);
  EXPECT_EQ(first.stall, StallReason::Throttle);
  TimelineEvent last = eventOf(timeline, 39, "PE.Matmul");  // ~7 us in: past the 3 us ramp.
  EXPECT_GT(last.startNs, v3.throttle->rampUs * 1000 * 1.5);
  EXPECT_NEAR(last.endNs - last.startNs, mmNs(v3), kTimeToleranceNs);
  EXPECT_EQ(last.stall, StallReason::None);
}

TEST(Throttle, NcV2NeverStretches) {
  MachineProfile v2 = bundledProfile("nc-v2");
  Timeline timeline = timelineOf(matmuls(4), v2);
  for (size_t i = 0; i < 4; ++i) {
    TimelineEvent mm = eventOf(timeline, i, "PE.Matmul");
    EXPECT_NEAR(mm.endNs - mm.startNs, mmNs(v2), kTimeToleranceNs);
    EXPECT_EQ(mm.stall, StallReason::None);
  }
}

TEST(Throttle, IdleGapLongerThanTheWindowReengagesTheCap) {
  MachineProfile v3 = bundledProfile("nc-v3");
  // 30 matmuls (past the ramp), a DMA that waits for the last of them (trigger + 64 KiB of data, longer
  // than the window), and one more matmul waiting for the DMA.
  std::string text = matmuls(30);
  text.insert(text.rfind("\n"), " inc=s1");
  text += "dma_copy.DMA dst=sbuf[p0:1, off 65536, [1,16384]]:f32 src=hbm[p0:1, off 0, [1,16384]]:f32 queue=q0 "
          "wait=s1>=1 inc=s2\n";
  text += "nc_matmul.PE dst=psum[p0:128, off 2048, [1,512]]:f32 stationary=sbuf[p0:128, off 512, [1,128]]:bf16 "
          "moving=sbuf[p0:128, off 8192, [1,512]]:bf16 wait=s2>=1\n";
  Timeline timeline = timelineOf(text, v3);
  TimelineEvent before = eventOf(timeline, 29, "PE.Matmul"), after = eventOf(timeline, 31, "PE.Matmul");
  EXPECT_NEAR(before.endNs - before.startNs, mmNs(v3), kTimeToleranceNs);
  EXPECT_GT(after.startNs - before.endNs, v3.throttle->windowUs * 1000);
  EXPECT_NEAR(after.endNs - after.startNs, mmNs(v3) / v3.throttle->startUtilization, kTimeToleranceNs);
}

}  // namespace
}  // namespace tessel::nc::testing
