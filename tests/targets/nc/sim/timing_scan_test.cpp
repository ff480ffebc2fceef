// tensor_tensor_scan timing (accelerator-model.md section 6.1): max(MIN_II, 2N) DVE cycles, streamed
// like a two-input tensor_tensor; boundary at N = MIN_II / 2.
#include <gtest/gtest.h>

#include "timing_fixture.h"

namespace tessel::nc::testing {
namespace {

std::string scanOf(int n) {
  return "tensor_tensor_scan.DVE dst=sbuf[p0:128, off 0, [1," + std::to_string(n) + "]]:f32 in0=sbuf[p0:128, off 8192, [1," +
         std::to_string(n) + "]]:f32 in1=sbuf[p0:128, off 16384, [1," + std::to_string(n) + "]]:f32 op0=multiply op1=add\n";
}

TEST(ScanTiming, TwoCyclesPerElementAboveTheMinimum) {
  MachineProfile v2 = bundledProfile("nc-v2");
  for (int n : {512, 1024}) {
    TimelineEvent scan = eventOf(timelineOf(scanOf(n), v2), 0, "DVE");
    EXPECT_NEAR(scan.endNs - scan.startNs, 2.0 * n / v2.dve.clockGHz, kTimeToleranceNs) << n;
  }
  const int atMinimum = static_cast<int>(v2.dve.minIiCycles / 2);
  for (int n : {1, atMinimum}) {
    TimelineEvent scan = eventOf(timelineOf(scanOf(n), v2), 0, "DVE");
    EXPECT_NEAR(scan.endNs - scan.startNs, v2.dve.minIiCycles / v2.dve.clockGHz, kTimeToleranceNs) << n;
  }
  TimelineEvent above = eventOf(timelineOf(scanOf(atMinimum + 1), v2), 0, "DVE");
  EXPECT_GT(above.endNs - above.startNs, v2.dve.minIiCycles / v2.dve.clockGHz);
}

}  // namespace
}  // namespace tessel::nc::testing
