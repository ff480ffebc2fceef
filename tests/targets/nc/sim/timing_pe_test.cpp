// Tensor engine timing (accelerator-model.md sections 5.1 and 9.2): nc_matmul as LoadStationary +
// MultiplyMoving with the next LoadStationary in the background of the current multiply, the reuse
// of an already loaded stationary, PE transposes, the FLOP counts the profiler reads (fp8 at half
// weight, section 8), and waits gating the LoadStationary.
#include <gtest/gtest.h>

#include "timing_fixture.h"

namespace tessel::nc::testing {
namespace {

std::string matmul(int stationaryOffset, int movingFree, const std::string &extra = "",
                   const std::string &dtype = "bf16") {
  return "nc_matmul.PE dst=psum[p0:128, off 0, [1," + std::to_string(movingFree) +
         "]]:f32 stationary=sbuf[p0:128, off " + std::to_string(stationaryOffset) + ", [1,128]]:" + dtype +
         " moving=sbuf[p0:128, off 8192, [1," + std::to_string(movingFree) + "]]:" + dtype + extra + "\n";
}

TEST(PeTiming, MatmulIsLoadStationaryThenMultiplyMoving) {
  MachineProfile v2 = bundledProfile("nc-v2");
  Timeline timeline = timelineOf(matmul(0, 512), v2);
  TimelineEvent ls = eventOf(timeline, 0, "PE.LoadStationary"), mm = eventOf(timeline, 0, "PE.Matmul");
  const double lsNs = ns(v2, Engine::PE, static_cast<double>(costLoadStationaryCycles(v2, 128)));
  const double mmNs = ns(v2, Engine::PE, static_cast<double>(costMatmulCycles(v2, {128, 128, 512})));
  EXPECT_EQ(ls.name, "LoadStationary");
  EXPECT_EQ(mm.name, "Matmul");
  EXPECT_EQ(ls.startNs, 0.0);
  EXPECT_NEAR(ls.endNs, lsNs, kTimeToleranceNs);  // The first LS is exposed.
  EXPECT_NEAR(mm.startNs, lsNs, kTimeToleranceNs);
  EXPECT_NEAR(mm.endNs, lsNs + mmNs, kTimeToleranceNs);
  EXPECT_NEAR(mm.completeNs, lsNs + mmNs + ns(v2, Engine::PE, static_cast<double>(v2.pe.pipeLatencyCycles)),
              kTimeToleranceNs);
  EXPECT_DOUBLE_EQ(mm.matmulFlops, matmulFlops({128, 128, 512}));
  EXPECT_DOUBLE_EQ(mm.peFlops, mm.matmulFlops);
  EXPECT_EQ(ls.matmulFlops, 0.0);
  EXPECT_EQ(timeline.totalNs, mm.completeNs);
}

TEST(PeTiming, NextLoadStationaryRunsInTheBackgroundOfTheCurrentMultiply) {
  MachineProfile v2 = bundledProfile("nc-v2");
  Timeline timeline = timelineOf(matmul(0, 512) + matmul(256, 512) + matmul(0, 512), v2);
  const double mmNs = ns(v2, Engine::PE, static_cast<double>(costMatmulCycles(v2, {128, 128, 512})));
  for (size_t i = 1; i < 3; ++i) {
    TimelineEvent ls = eventOf(timeline, i, "PE.LoadStationary");
    TimelineEvent previous = eventOf(timeline, i - 1, "PE.Matmul");
    EXPECT_NEAR(ls.startNs, previous.startNs, kTimeToleranceNs);  // Loads while the previous multiplies.
    EXPECT_NEAR(eventOf(timeline, i, "PE.Matmul").startNs, previous.endNs, kTimeToleranceNs);
    EXPECT_NEAR(previous.endNs - previous.startNs, mmNs, kTimeToleranceNs);
  }
}

TEST(PeTiming, StreamOfSmallMatmulsCostsTheLargerOfTheTwoHalvesPerPair) {
  MachineProfile v2 = bundledProfile("nc-v2");
  std::string text;
  for (int i = 0; i < 6; ++i) text += matmul((i % 2) * 256, 16);
  Timeline timeline = timelineOf(text, v2);
  const double pairNs = ns(v2, Engine::PE, static_cast<double>(costMatmulStreamPairCycles(v2, {128, 128, 16})));
  for (size_t i = 2; i < 6; ++i)
    EXPECT_NEAR(eventOf(timeline, i, "PE.Matmul").startNs - eventOf(timeline, i - 1, "PE.Matmul").startNs, pairNs,
                kTimeToleranceNs);
}

TEST(PeTiming, SameStationaryAsThePreviousMatmulNeedsNoLoad) {
  MachineProfile v2 = bundledProfile("nc-v2");
  Timeline timeline = timelineOf(matmul(0, 512) + matmul(0, 512, " acc=1") +
                                     "nc_transpose.PE dst=psum[p0:128, off 4096, [1,128]]:bf16 "
                                     "src=sbuf[p0:128, off 0, [1,128]]:bf16\n" +
                                     matmul(0, 512),
                                 v2);
  EXPECT_TRUE(hasEvent(timeline, 0, "PE.LoadStationary"));
  EXPECT_FALSE(hasEvent(timeline, 1, "PE.LoadStationary"));
  EXPECT_NEAR(eventOf(timeline, 1, "PE.Matmul").startNs, eventOf(timeline, 0, "PE.Matmul").endNs, kTimeToleranceNs);
  EXPECT_TRUE(hasEvent(timeline, 3, "PE.LoadStationary"));  // The transpose replaced the cached weights.
}

TEST(PeTiming, TransposeRunsOnTheMultiplyHalfAndCountsPeFlops) {
  MachineProfile v2 = bundledProfile("nc-v2");
  Timeline timeline = timelineOf(
      "nc_transpose.PE dst=psum[p0:64, off 0, [1,128]]:bf16 src=sbuf[p0:128, off 0, [1,64]]:bf16\n", v2);
  TimelineEvent transpose = eventOf(timeline, 0, "PE.Matmul");
  EXPECT_EQ(transpose.name, "nc_transpose");
  EXPECT_NEAR(transpose.endNs, ns(v2, Engine::PE, static_cast<double>(costPeTransposeCycles(v2, 128, 64))),
              kTimeToleranceNs);
  EXPECT_EQ(transpose.matmulFlops, 0.0);
  EXPECT_DOUBLE_EQ(transpose.peFlops, matmulFlops({128, 64, 128}));
}

TEST(PeTiming, Fp8FlopsCountAtHalfWeight) {
  MachineProfile v2 = bundledProfile("nc-v2");
  Timeline timeline = timelineOf(matmul(0, 512, "", "f8e4m3"), v2);
  EXPECT_DOUBLE_EQ(eventOf(timeline, 0, "PE.Matmul").matmulFlops, 0.5 * matmulFlops({128, 128, 512}));
}

TEST(PeTiming, WaitsGateTheLoadStationary) {
  MachineProfile v2 = bundledProfile("nc-v2");
  Timeline timeline = timelineOf(
      "dma_copy.DMA dst=sbuf[p0:128, off 0, [1,128]]:bf16 src=hbm[p0:1, off 0, [128,128], [1,128]]:bf16 queue=q0 "
      "inc=s4\n" +
          matmul(0, 512, " wait=s4>=1"),
      v2);
  TimelineEvent ls = eventOf(timeline, 1, "PE.LoadStationary");
  EXPECT_NEAR(ls.startNs, eventOf(timeline, 0, "DMA.q0").completeNs + semLatencyNs(v2, Engine::PE), kTimeToleranceNs);
  EXPECT_EQ(ls.stall, StallReason::Semaphore);
  EXPECT_EQ(eventOf(timeline, 1, "PE.Matmul").stall, StallReason::None);
}

}  // namespace
}  // namespace tessel::nc::testing
