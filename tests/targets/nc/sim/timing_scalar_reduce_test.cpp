// tensor_scalar_reduce timing (accelerator-model.md section 6.1): max(MIN_II, N) + MIN_II DVE cycles,
// the tensor_scalar stream plus the reduction's fixed MIN_II; the boundary at N = MIN_II.
#include <gtest/gtest.h>

#include "timing_fixture.h"

namespace tessel::nc::testing {
namespace {

std::string scalarOp(const std::string &mnemonic, int n, const std::string &accum) {
  const std::string dims = "[1," + std::to_string(n) + "]]:f32";
  return mnemonic + ".DVE dst=sbuf[p0:128, off 0, " + dims + " src=sbuf[p0:128, off 16384, " + dims + accum +
         " op0=multiply" + (accum.empty() ? "" : " op1=add") + " imm=2\n";
}

double busyNs(const std::string &text, const MachineProfile &profile) {
  TimelineEvent event = eventOf(timelineOf(text, profile), 0, "DVE");
  return event.endNs - event.startNs;
}

TEST(ScalarReduceTiming, TensorScalarPlusOneMinimumInterval) {
  MachineProfile v2 = bundledProfile("nc-v2");
  const double minIiNs = v2.dve.minIiCycles / v2.dve.clockGHz;
  const std::string accum = " accum=sbuf[p0:128, off 32768]:f32";
  for (int n : {512, 2048}) {
    const double reduce = busyNs(scalarOp("tensor_scalar_reduce", n, accum), v2);
    EXPECT_NEAR(reduce, n / v2.dve.clockGHz + minIiNs, kTimeToleranceNs) << n;
    EXPECT_NEAR(reduce - busyNs(scalarOp("tensor_scalar", n, ""), v2), minIiNs, kTimeToleranceNs) << n;
  }
  const int atMinimum = static_cast<int>(v2.dve.minIiCycles);
  for (int n : {1, atMinimum})
    EXPECT_NEAR(busyNs(scalarOp("tensor_scalar_reduce", n, accum), v2), 2 * minIiNs, kTimeToleranceNs) << n;
  EXPECT_GT(busyNs(scalarOp("tensor_scalar_reduce", atMinimum + 1, accum), v2), 2 * minIiNs);
}

}  // namespace
}  // namespace tessel::nc::testing
