// Shared-port conflicts (accelerator-model.md sections 4.4 and 9.3), boundary tests: nc-v2 DVE and
// POOL cannot use SBUF at the same time, nor DVE and ACT PSUM; nc-v3 lifts both except a DVE
// performance-mode instruction against POOL SBUF access and DVE/ACT on the same PSUM bank. The
// second instruction then starts exactly when the first frees the port (its end), not earlier.
#include <gtest/gtest.h>

#include "targets/nc/isa/ports.h"
#include "timing_fixture.h"

namespace tessel::nc::testing {
namespace {

const std::string kDveThenPoolFp32 =
    "tensor_copy.DVE dst=sbuf[p0:128, off 0, [1,512]]:f32 src=sbuf[p0:128, off 4096, [1,512]]:f32\n"
    "tensor_copy.POOL dst=sbuf[p0:128, off 8192, [1,512]]:f32 src=sbuf[p0:128, off 16384, [1,512]]:f32\n";

TEST(PortTiming, DveAndPoolSerialiseOnSbufOnNcV2) {
  Timeline timeline = timelineOf(kDveThenPoolFp32, bundledProfile("nc-v2"));
  TimelineEvent dve = eventOf(timeline, 0, "DVE"), pool = eventOf(timeline, 1, "POOL");
  EXPECT_EQ(dve.startNs, 0.0);
  EXPECT_EQ(pool.readyNs, 0.0);
  EXPECT_NEAR(pool.startNs, dve.endNs, kTimeToleranceNs);
  EXPECT_EQ(pool.stall, StallReason::Port);
}

TEST(PortTiming, DveAndPoolRunTogetherOnNcV3) {
  Timeline timeline = timelineOf(kDveThenPoolFp32, bundledProfile("nc-v3"));
  EXPECT_EQ(eventOf(timeline, 1, "POOL").startNs, 0.0);
  EXPECT_EQ(eventOf(timeline, 1, "POOL").stall, StallReason::None);
}

TEST(PortTiming, DvePerformanceModeSerialisesWithPoolOnNcV3) {
  // bf16 SBUF contiguous copy: the 4x performance mode borrows the shared DVE/POOL bus.
  MachineProfile v3 = bundledProfile("nc-v3");
  Timeline timeline = timelineOf(
      "tensor_copy.DVE dst=sbuf[p0:128, off 0, [1,2048]]:bf16 src=sbuf[p0:128, off 4096, [1,2048]]:bf16\n"
      "tensor_copy.POOL dst=sbuf[p0:128, off 8192, [1,512]]:f32 src=sbuf[p0:128, off 16384, [1,512]]:f32\n",
      v3);
  TimelineEvent dve = eventOf(timeline, 0, "DVE");
  EXPECT_NEAR(dve.endNs, ns(v3, Engine::DVE, 2048 / v3.dve.perfModeSpeedup.copyOrTensorScalarBf16SbufContiguous),
              kTimeToleranceNs);
  EXPECT_NEAR(eventOf(timeline, 1, "POOL").startNs, dve.endNs, kTimeToleranceNs);
  EXPECT_EQ(eventOf(timeline, 1, "POOL").stall, StallReason::Port);
}

std::string dveActPsum(int actBankOffsetBytes) {
  return "tensor_copy.DVE dst=sbuf[p0:128, off 0, [1,512]]:f32 src=psum[p0:128, off 0, [1,512]]:f32\n"
         "activation.ACT dst=sbuf[p0:128, off 4096, [1,512]]:f32 src=psum[p0:128, off " +
         std::to_string(actBankOffsetBytes) + ", [1,512]]:f32 func=copy\n";
}

TEST(PortTiming, DveAndActSerialiseOnPsumOnNcV2) {
  Timeline timeline = timelineOf(dveActPsum(2048), bundledProfile("nc-v2"));
  EXPECT_NEAR(eventOf(timeline, 1, "ACT").startNs, eventOf(timeline, 0, "DVE").endNs, kTimeToleranceNs);
  EXPECT_EQ(eventOf(timeline, 1, "ACT").stall, StallReason::Port);
}

TEST(PortTiming, DveAndActShareOnlyTheSamePsumBankOnNcV3) {
  MachineProfile v3 = bundledProfile("nc-v3");
  Timeline otherBank = timelineOf(dveActPsum(2048), v3);
  EXPECT_EQ(eventOf(otherBank, 1, "ACT").startNs, 0.0);
  Timeline sameBank = timelineOf(dveActPsum(1024), v3);  // Bytes 1024..3071: banks 0 and 1.
  EXPECT_NEAR(eventOf(sameBank, 1, "ACT").startNs, eventOf(sameBank, 0, "DVE").endNs, kTimeToleranceNs);
}

TEST(PortTiming, PortIsFreeAgainAtTheHoldersEnd) {
  // nc-v2: POOL's second instruction needs SBUF while DVE holds it; DVE's next instruction waits for
  // POOL in turn, and each starts exactly at the other's end.
  Timeline timeline = timelineOf(
      "tensor_copy.DVE dst=sbuf[p0:128, off 0, [1,512]]:f32 src=sbuf[p0:128, off 4096, [1,512]]:f32\n"
      "tensor_copy.POOL dst=sbuf[p0:128, off 8192, [1,512]]:f32 src=sbuf[p0:128, off 16384, [1,512]]:f32\n"
      "tensor_copy.DVE dst=sbuf[p0:128, off 0, [1,512]]:f32 src=sbuf[p0:128, off 4096, [1,512]]:f32\n",
      bundledProfile("nc-v2"));
  EXPECT_NEAR(eventOf(timeline, 1, "POOL").startNs, eventOf(timeline, 0, "DVE").endNs, kTimeToleranceNs);
  EXPECT_NEAR(eventOf(timeline, 2, "DVE").startNs, eventOf(timeline, 1, "POOL").endNs, kTimeToleranceNs);
}

TEST(PortRules, UnknownNamesInTheProfileAreReported) {
  MachineProfile profile = bundledProfile("nc-v2");
  profile.portConflicts.push_back({"dve", "tpu", "sbuf"});
  Expected<std::vector<PortRule>> rules = parsePortRules(profile);
  ASSERT_FALSE(rules.ok());
  EXPECT_NE(rules.diag().message.find("ports.conflicts[2] = [dve, tpu, sbuf]"), std::string::npos)
      << rules.diag().message;
}

}  // namespace
}  // namespace tessel::nc::testing
