// Semaphore timing (accelerator-model.md section 9.1): an increment becomes visible
// semLatencyCycles of the consumer engine's clock after the producer completes (start + II +
// pipeline latency). Boundary tests: a consumer whose engine is free just before that moment waits
// until exactly then; one whose engine frees just after it does not wait at all.
#include <gtest/gtest.h>

#include "targets/nc/sim/timing/semaphores.h"
#include "timing_fixture.h"

namespace tessel::nc::testing {
namespace {

TEST(SemaphoreTable, WaitIsSatisfiedAtTheValueThCompletionPlusLatency) {
  SemaphoreTable table;
  EXPECT_EQ(table.satisfiedAtNs({3, 0}, 10.0), 0.0);            // Value 0 holds from the start.
  EXPECT_FALSE(table.satisfiedAtNs({3, 1}, 10.0).has_value());  // No increment yet.
  table.addIncrement(3, 100.0);
  table.addIncrement(3, 40.0);  // Out of order: kept sorted.
  EXPECT_EQ(table.count(3), 2u);
  EXPECT_EQ(*table.satisfiedAtNs({3, 1}, 10.0), 50.0);
  EXPECT_EQ(*table.satisfiedAtNs({3, 2}, 10.0), 110.0);
  EXPECT_FALSE(table.satisfiedAtNs({3, 3}, 10.0).has_value());
  EXPECT_EQ(table.count(4), 0u);
}

// ACT produces s0 (1 element: II = MIN_II); DVE runs a filler copy of `fillerElements` and then an
// instruction that waits for s0.
Timeline producerConsumer(const MachineProfile &profile, int fillerElements) {
  std::string text =
      "activation.ACT dst=sbuf[p0:128, off 0, [1,1]]:f32 src=sbuf[p0:128, off 4, [1,1]]:f32 func=copy inc=s0\n"
      "tensor_copy.DVE dst=sbuf[p0:128, off 4096, [1," + std::to_string(fillerElements) +
      "]]:f32 src=sbuf[p0:128, off 8192, [1," + std::to_string(fillerElements) +
      "]]:f32\n"
      "tensor_copy.DVE dst=sbuf[p0:128, off 64, [1,1]]:f32 src=sbuf[p0:128, off 0, [1,1]]:f32 wait=s0>=1\n";
  return timelineOf(text, profile);
}

TEST(SemaphoreTiming, ConsumerStartsExactlyWhenTheIncrementBecomesVisible) {
  MachineProfile v2 = bundledProfile("nc-v2");
  const double producerCompleteNs =
      ns(v2, Engine::ACT, static_cast<double>(costActivationCycles(v2, 1, false) + v2.act.pipeLatencyCycles));
  const double visibleNs = producerCompleteNs + semLatencyNs(v2, Engine::DVE);
  // The filler frees DVE one DVE cycle (or less) before the increment is visible: the consumer waits.
  const int before = static_cast<int>(visibleNs * v2.dve.clockGHz);
  ASSERT_GE(before, v2.dve.minIiCycles);
  Timeline early = producerConsumer(v2, before);
  EXPECT_NEAR(eventOf(early, 0, "ACT").completeNs, producerCompleteNs, kTimeToleranceNs);
  TimelineEvent waiting = eventOf(early, 2, "DVE");
  EXPECT_LT(waiting.readyNs, visibleNs);
  EXPECT_NEAR(waiting.startNs, visibleNs, kTimeToleranceNs);
  EXPECT_EQ(waiting.stall, StallReason::Semaphore);
  ASSERT_TRUE(waiting.waitedOn.has_value());
  EXPECT_EQ(*waiting.waitedOn, (SemaphoreWait{0, 1}));

  // The filler frees DVE after the increment is visible: no wait, no stall.
  Timeline late = producerConsumer(v2, before + 1);
  TimelineEvent onTime = eventOf(late, 2, "DVE");
  EXPECT_GT(onTime.readyNs, visibleNs);
  EXPECT_NEAR(onTime.startNs, onTime.readyNs, kTimeToleranceNs);
  EXPECT_EQ(onTime.stall, StallReason::None);
  EXPECT_FALSE(onTime.waitedOn.has_value());
}

TEST(SemaphoreTiming, LatencyIsCountedInTheConsumersClock) {
  // One ACT producer, consumers on DVE and ACT: each sees semLatencyCycles of its own clock.
  MachineProfile v3 = bundledProfile("nc-v3");
  Timeline timeline = timelineOf(
      "activation.ACT dst=sbuf[p0:128, off 0, [1,1]]:f32 src=sbuf[p0:128, off 4, [1,1]]:f32 func=copy inc=s7\n"
      "tensor_copy.DVE dst=sbuf[p0:128, off 64, [1,1]]:f32 src=sbuf[p0:128, off 0, [1,1]]:f32 wait=s7>=1\n"
      "tensor_copy.ACT dst=sbuf[p0:128, off 128, [1,1]]:f32 src=sbuf[p0:128, off 0, [1,1]]:f32 wait=s7>=1\n",
      v3);
  const double completeNs = eventOf(timeline, 0, "ACT").completeNs;
  EXPECT_NEAR(eventOf(timeline, 1, "DVE").startNs, completeNs + semLatencyNs(v3, Engine::DVE), kTimeToleranceNs);
  EXPECT_NEAR(eventOf(timeline, 2, "ACT").startNs, completeNs + semLatencyNs(v3, Engine::ACT), kTimeToleranceNs);
}

TEST(SemaphoreTiming, WaitForTheSecondIncrementIgnoresTheFirst) {
  MachineProfile v2 = bundledProfile("nc-v2");
  Timeline timeline = timelineOf(
      "activation.ACT dst=sbuf[p0:128, off 0, [1,1]]:f32 src=sbuf[p0:128, off 4, [1,1]]:f32 func=copy inc=s1\n"
      "tensor_copy.POOL dst=sbuf[p0:128, off 8, [1,1000]]:f32 src=sbuf[p0:128, off 8192, [1,1000]]:f32 inc=s1\n"
      "tensor_copy.DVE dst=sbuf[p0:128, off 64, [1,1]]:f32 src=sbuf[p0:128, off 0, [1,1]]:f32 wait=s1>=2\n",
      v2);
  // The POOL copy completes last; the second increment is its.
  const double secondNs = std::max(eventOf(timeline, 0, "ACT").completeNs, eventOf(timeline, 1, "POOL").completeNs);
  EXPECT_NEAR(eventOf(timeline, 2, "DVE").startNs, secondNs + semLatencyNs(v2, Engine::DVE), kTimeToleranceNs);
}

TEST(SemaphoreTiming, EveryWaitOfAnInstructionMustHold) {
  MachineProfile v2 = bundledProfile("nc-v2");
  Timeline timeline = timelineOf(
      "activation.ACT dst=sbuf[p0:128, off 0, [1,1]]:f32 src=sbuf[p0:128, off 4, [1,1]]:f32 func=copy inc=s1\n"
      "tensor_copy.POOL dst=sbuf[p0:128, off 8, [1,1000]]:f32 src=sbuf[p0:128, off 8192, [1,1000]]:f32 inc=s2\n"
      "tensor_copy.DVE dst=sbuf[p0:128, off 64, [1,1]]:f32 src=sbuf[p0:128, off 0, [1,1]]:f32 wait=s1>=1,s2>=1\n",
      v2);
  TimelineEvent consumer = eventOf(timeline, 2, "DVE");
  EXPECT_NEAR(consumer.startNs, eventOf(timeline, 1, "POOL").completeNs + semLatencyNs(v2, Engine::DVE),
              kTimeToleranceNs);
  ASSERT_TRUE(consumer.waitedOn.has_value());
  EXPECT_EQ(consumer.waitedOn->id, 2);  // The wait that held it last.
}

}  // namespace
}  // namespace tessel::nc::testing
