// DMA timing (accelerator-model.md section 9.4): how a dma_copy splits into per-engine transfers of
// contiguous chunks (from both access patterns), the trigger latency that the next transfer on a
// queue overlaps with the data phase of the current one, FIFO order within a queue, round robin
// between queues on one engine, and the core's HBM bandwidth limiter.
#include <gtest/gtest.h>

#include "targets/nc/sim/timing/dma_transfer.h"
#include "timing_fixture.h"

namespace tessel::nc::testing {
namespace {

DmaTransferPlan planOf(const std::string &text, const MachineProfile &profile) {
  std::vector<Instruction> program = assembleText(text);
  EXPECT_EQ(program.size(), 1u);
  if (program.empty()) return {};
  Expected<DmaTransferPlan> plan = planDmaTransfer(program[0], 0, profile);
  EXPECT_TRUE(plan.ok()) << plan.diag().str();
  return plan.ok() ? *plan : DmaTransferPlan{};
}

TEST(DmaTransferPlan, SplitsPartitionsOverTheEnginesOneChunkPerContiguousPartition) {
  MachineProfile v2 = bundledProfile("nc-v2");
  // Section 5.5 example: 128x512 fp32 HBM -> SBUF = 16 transfers x 8 buffers.
  DmaTransferPlan plan = planOf(
      "dma_copy.DMA dst=sbuf[p0:128, off 0, [1,512]]:f32 src=hbm[p0:1, off 0, [512,128], [1,512]]:f32 queue=q0\n", v2);
  ASSERT_EQ(plan.shares.size(), 16u);
  for (const DmaEngineShare &share : plan.shares) {
    EXPECT_EQ(share.chunks, 8u);
    EXPECT_EQ(share.bytes, 8u * 2048u);
    EXPECT_NEAR(share.busyNs, dmaTransferNs(v2, 8, 2048), kTimeToleranceNs);
  }
  EXPECT_EQ(plan.chunks, 128u);
  EXPECT_TRUE(plan.touchesHbm);
  EXPECT_EQ(plan.hbmReadBytes, 128u * 2048u);
  EXPECT_EQ(plan.hbmWriteBytes, 0u);
  EXPECT_EQ(plan.bytes, 128u * 2048u);
}

TEST(DmaTransferPlan, ChunksBreakWhereEitherSideJumps) {
  MachineProfile v2 = bundledProfile("nc-v2");
  // HBM rows strided apart: still one chunk per partition.
  EXPECT_EQ(planOf("dma_copy.DMA dst=sbuf[p0:16, off 0, [1,512]]:f32 src=hbm[p0:1, off 0, [4096,16], [1,512]]:f32\n",
                   v2).chunks,
            16u);
  // HBM side in runs of 256 elements: two chunks per partition.
  EXPECT_EQ(planOf("dma_copy.DMA dst=sbuf[p0:16, off 0, [1,512]]:f32 "
                   "src=hbm[p0:1, off 0, [4096,16], [1024,2], [1,256]]:f32\n",
                   v2).chunks,
            32u);
  // SBUF side strided (every other element): one chunk per element, each at the chunk minimum.
  DmaTransferPlan strided = planOf(
      "dma_copy.DMA dst=sbuf[p0:1, off 0, [2,64]]:f32 src=hbm[p0:1, off 0, [1,64]]:f32\n", v2);
  EXPECT_EQ(strided.chunks, 64u);
  EXPECT_NEAR(strided.shares[0].busyNs, 64 * v2.dma.chunkMinNs, kTimeToleranceNs);
  // Runs of 3 (HBM) against runs of 4 (SBUF) over 12 elements: breaks at 3, 4, 6, 8, 9.
  EXPECT_EQ(planOf("dma_copy.DMA dst=sbuf[p0:1, off 0, [8,3], [1,4]]:f32 src=hbm[p0:1, off 0, [5,4], [1,3]]:f32\n",
                   v2).chunks,
            6u);
}

TEST(DmaTransferPlan, HbmToHbmUsesTheOutermostDimAsRows) {
  MachineProfile v2 = bundledProfile("nc-v2");
  DmaTransferPlan plan = planOf(
      "dma_copy.DMA dst=hbm[p0:1, off 0, [1024,32], [1,1024]]:bf16 src=hbm[p0:1, off 1048576, [1,32768]]:bf16\n", v2);
  EXPECT_EQ(plan.shares.size(), 16u);  // 32 rows, 2 per engine.
  EXPECT_EQ(plan.hbmReadBytes, 65536u);
  EXPECT_EQ(plan.hbmWriteBytes, 65536u);
  EXPECT_EQ(plan.shares[0].chunks, 1u);  // Both sides contiguous over the engine's two rows.
}

TEST(DmaTiming, IsolatedCopyTakesWhatTheCostFunctionSays) {
  MachineProfile v2 = bundledProfile("nc-v2");
  Timeline timeline = timelineOf(
      "dma_copy.DMA dst=sbuf[p0:128, off 0, [1,512]]:f32 src=hbm[p0:1, off 0, [512,128], [1,512]]:f32 queue=q3\n", v2);
  TimelineEvent copy = eventOf(timeline, 0, "DMA.q3");
  EXPECT_EQ(copy.startNs, 0.0);
  EXPECT_NEAR(copy.completeNs, costDmaCopyNs(v2, DmaCopyShape{128, 2048}), kTimeToleranceNs);
  EXPECT_EQ(copy.endNs, copy.completeNs);
  EXPECT_EQ(copy.stall, StallReason::None);
  EXPECT_EQ(copy.hbmReadBytes, 128u * 2048u);
  EXPECT_EQ(copy.dmaChunks, 128u);
  EXPECT_EQ(timeline.totalNs, copy.completeNs);
}

// An 8 KiB copy of one partition: it lands on DMA engine 0.
std::string onePartitionCopy(int sbufOffset, int hbmOffset, int queue, const std::string &extra = "") {
  return "dma_copy.DMA dst=sbuf[p0:1, off " + std::to_string(sbufOffset) + ", [1,8192]]:u8 src=hbm[p0:1, off " +
         std::to_string(hbmOffset) + ", [1,8192]]:u8 queue=q" + std::to_string(queue) + extra + "\n";
}

TEST(DmaTiming, NextTransferOnAQueueOverlapsItsTriggerWithTheCurrentDataPhase) {
  MachineProfile v2 = bundledProfile("nc-v2");
  const double dataNs = dmaTransferNs(v2, 1, 8192);
  Timeline timeline = timelineOf(onePartitionCopy(0, 0, 0) + onePartitionCopy(8192, 8192, 0), v2);
  TimelineEvent first = eventOf(timeline, 0, "DMA.q0"), second = eventOf(timeline, 1, "DMA.q0");
  EXPECT_NEAR(first.completeNs, v2.dma.triggerNs + dataNs, kTimeToleranceNs);
  EXPECT_EQ(second.startNs, 0.0);  // Triggered right behind the first.
  EXPECT_NEAR(second.completeNs, v2.dma.triggerNs + 2 * dataNs, kTimeToleranceNs);  // Not 2 x trigger.
  EXPECT_EQ(second.stall, StallReason::DmaEngine);  // Its data waited for engine 0.
}

TEST(DmaTiming, QueueIsFifoBehindAWaitButOtherQueuesGoAhead) {
  MachineProfile v2 = bundledProfile("nc-v2");
  const std::string producer =
      "tensor_copy.POOL dst=sbuf[p0:128, off 65536, [1,4000]]:f32 src=sbuf[p0:128, off 100000, [1,4000]]:f32 inc=s9\n";
  Timeline timeline = timelineOf(producer + onePartitionCopy(0, 0, 0, " wait=s9>=1") + onePartitionCopy(8192, 8192, 0) +
                                     "dma_copy.DMA dst=sbuf[p32:32, off 0, [1,64]]:u8 src=hbm[p0:1, off 0, [64,32], "
                                     "[1,64]]:u8 queue=q1\n",
                                 v2);
  const double visibleNs = eventOf(timeline, 0, "POOL").completeNs + semLatencyNs(v2, Engine::SP);
  EXPECT_NEAR(eventOf(timeline, 1, "DMA.q0").startNs, visibleNs, kTimeToleranceNs);
  EXPECT_EQ(eventOf(timeline, 1, "DMA.q0").stall, StallReason::Semaphore);
  EXPECT_NEAR(eventOf(timeline, 2, "DMA.q0").startNs, visibleNs, kTimeToleranceNs);  // Behind it in the FIFO.
  EXPECT_EQ(eventOf(timeline, 3, "DMA.q1").startNs, 0.0);
}

TEST(DmaTiming, EngineServesQueuesRoundRobin) {
  MachineProfile v2 = bundledProfile("nc-v2");
  const double dataNs = dmaTransferNs(v2, 1, 8192);
  // Engine 0 gets A (q0), B (q0), C (q1), all ready at the same time: A, then C, then B.
  Timeline timeline = timelineOf(
      onePartitionCopy(0, 0, 0) + onePartitionCopy(8192, 8192, 0) + onePartitionCopy(16384, 16384, 1), v2);
  EXPECT_NEAR(eventOf(timeline, 0, "DMA.q0").completeNs, v2.dma.triggerNs + dataNs, kTimeToleranceNs);
  EXPECT_NEAR(eventOf(timeline, 2, "DMA.q1").completeNs, v2.dma.triggerNs + 2 * dataNs, kTimeToleranceNs);
  EXPECT_NEAR(eventOf(timeline, 1, "DMA.q0").completeNs, v2.dma.triggerNs + 3 * dataNs, kTimeToleranceNs);
}

TEST(DmaTiming, HbmLimiterSlowsAllEnginesWhenTheirSumExceedsTheCoreShare) {
  // nc-v3: 16 engines x 23 B/ns = 368 B/ns > 362 B/ns per core, so a full-width copy is slowed.
  MachineProfile v3 = bundledProfile("nc-v3");
  const std::string copy =
      "dma_copy.DMA dst=sbuf[p0:128, off 0, [1,8192]]:u8 src=hbm[p0:1, off 0, [8192,128], [1,8192]]:u8 queue=q0\n";
  Timeline timeline = timelineOf(copy, v3);
  const double fullRateNs = dmaTransferNs(v3, 8, 8192);
  const double demand = static_cast<double>(v3.dma.enginesPerCore) * v3.dma.bytesPerNsPerEngine;
  ASSERT_GT(demand, v3.hbm.bytesPerNsPerCore);
  TimelineEvent event = eventOf(timeline, 0, "DMA.q0");
  EXPECT_NEAR(event.completeNs - v3.dma.triggerNs, fullRateNs * demand / v3.hbm.bytesPerNsPerCore, 1e-3);
  EXPECT_EQ(event.stall, StallReason::DmaEngine);

  // SBUF -> SBUF traffic does not count against HBM.
  Timeline local = timelineOf(
      "dma_copy.DMA dst=sbuf[p0:128, off 0, [1,8192]]:u8 src=sbuf[p0:128, off 65536, [1,8192]]:u8 queue=q0\n", v3);
  EXPECT_NEAR(eventOf(local, 0, "DMA.q0").completeNs, v3.dma.triggerNs + fullRateNs, kTimeToleranceNs);
  EXPECT_EQ(eventOf(local, 0, "DMA.q0").hbmReadBytes, 0u);

  // nc-v2: 16 x 17 = 272 B/ns < 410 B/ns, never limited.
  MachineProfile v2 = bundledProfile("nc-v2");
  EXPECT_NEAR(eventOf(timelineOf(copy, v2), 0, "DMA.q0").completeNs, costDmaCopyNs(v2, DmaCopyShape{128, 8192}),
              kTimeToleranceNs);
}

TEST(DmaTiming, StoreCountsHbmWriteBytes) {
  MachineProfile v2 = bundledProfile("nc-v2");
  Timeline timeline = timelineOf(
      "dma_copy.DMA dst=hbm[p0:1, off 0, [256,128], [1,256]]:bf16 src=sbuf[p0:128, off 0, [1,256]]:bf16 queue=q2\n",
      v2);
  TimelineEvent store = eventOf(timeline, 0, "DMA.q2");
  EXPECT_EQ(store.hbmWriteBytes, 128u * 512u);
  EXPECT_EQ(store.hbmReadBytes, 0u);
  EXPECT_EQ(store.dmaBytes, 128u * 512u);
}

}  // namespace
}  // namespace tessel::nc::testing
