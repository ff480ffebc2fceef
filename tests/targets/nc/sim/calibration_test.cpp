// The calibration anchors of accelerator-model.md section 11 that the timing simulator must hit:
// 1. back-to-back 128x128x512 bf16 matmuls reach the PE peak (>= 97% of pePeakFlopsPerSec) on nc-v2
//    and nc-v3 (nc-v3 including its power-throttle ramp); 3. a chain of dependent 1-element ACT
//    instructions issues ~264 ACT cycles apart on nc-v2 (+-15%); 4. one DMA engine moves 32 KiB
//    (4 partitions x 8 KiB) HBM -> SBUF in ~1416 ns of data time on nc-v3 (+-15%). The measured
//    values are printed so that calibration drift shows in the test log.
#include <gtest/gtest.h>

#include <cstdio>

#include "targets/nc/machine/cost.h"
#include "timing_fixture.h"

namespace tessel::nc::testing {
namespace {

constexpr double kAnchorTolerance = 0.15;  // Section 11: within ~15%.

AccessPattern sbufTile(uint64_t offsetBytes, uint32_t freeElements, DType dtype) {
  AccessPattern ap;
  ap.space = MemSpace::SBUF;
  ap.startPartition = 0;
  ap.partitionCount = 128;
  ap.offsetBytes = offsetBytes;
  ap.dims = {FreeDim{1, freeElements}};
  ap.dtype = dtype;
  return ap;
}

// `count` independent 128x128x512 bf16 matmuls; the stationary alternates between two tiles so every
// matmul loads its weights (in the background of the previous multiply), the output between two banks.
std::vector<Instruction> matmulStream(const MachineProfile &profile, int count) {
  const auto m = static_cast<uint32_t>(profile.pe.cols);
  const auto n = static_cast<uint32_t>(profile.psum.bankFp32Elements);
  const uint64_t bankBytes = static_cast<uint64_t>(profile.psum.bytesPerPartition / profile.psum.banks);
  std::vector<Instruction> program;
  for (int i = 0; i < count; ++i) {
    Instruction insn;
    insn.opcode = Opcode::NcMatmul;
    insn.engine = Engine::PE;
    AccessPattern dst = sbufTile(static_cast<uint64_t>(i % 2) * bankBytes, n, DType::F32);
    dst.space = MemSpace::PSUM;
    insn.operands[0] = dst;
    insn.operands[1] = sbufTile(static_cast<uint64_t>(i % 2) * m * 2, m, DType::BF16);
    insn.operands[2] = sbufTile(4 * m * 2, n, DType::BF16);
    program.push_back(insn);
  }
  return program;
}

double streamFlopsPerSec(const std::string &profileName, int count) {
  MachineProfile profile = bundledProfile(profileName);
  Timeline timeline = simulateOk(matmulStream(profile, count), profile).timeline;
  double flops = 0;
  for (const TimelineEvent &event : timeline.events) flops += event.matmulFlops;
  double flopsPerSec = flops / (timeline.totalNs * 1e-9);
  std::printf("[calibration] anchor 1 %s: %d matmuls, %.2f TFLOPS = %.2f%% of the %.2f TFLOPS peak\n",
              profileName.c_str(), count, flopsPerSec * 1e-12, 100 * flopsPerSec / timeline.pePeakFlopsPerSec,
              timeline.pePeakFlopsPerSec * 1e-12);
  EXPECT_DOUBLE_EQ(timeline.pePeakFlopsPerSec, pePeakFlopsPerSec(profile, PeDtype::Bf16));
  return flopsPerSec / timeline.pePeakFlopsPerSec;
}

TEST(Calibration, Anchor1MatmulStreamReachesPeakOnNcV2) { EXPECT_GE(streamFlopsPerSec("nc-v2", 256), 0.97); }

TEST(Calibration, Anchor1MatmulStreamReachesPeakOnNcV3) {
  // The nc-v3 throttle costs ~0.75 us of the 3 us ramp; a stream of 1000 matmuls (~213 us) absorbs it.
  EXPECT_GE(streamFlopsPerSec("nc-v3", 1000), 0.97);
}

TEST(Calibration, Anchor3DependentActivationsIssue264CyclesApart) {
  MachineProfile v2 = bundledProfile("nc-v2");
  std::string text;
  const int chain = 8;
  for (int i = 0; i < chain; ++i) {
    text += "activation.ACT dst=sbuf[p0:128, off 0, [1,1]]:f32 src=sbuf[p0:128, off 0, [1,1]]:f32 func=exp";
    if (i > 0) text += " wait=s0>=" + std::to_string(i);
    text += " inc=s0\n";
  }
  Timeline timeline = timelineOf(text, v2);
  const double periodNs = eventOf(timeline, 2, "ACT").startNs - eventOf(timeline, 1, "ACT").startNs;
  const double periodCycles = periodNs * v2.act.clockGHz;
  std::printf("[calibration] anchor 3 nc-v2: dependent ACT issue period %.1f ACT cycles (%.1f ns)\n", periodCycles,
              periodNs);
  EXPECT_NEAR(periodCycles / 264.0, 1.0, kAnchorTolerance);
  // The simulator and the scheduler's cost function agree exactly.
  EXPECT_NEAR(periodCycles, dependentIssueCycles(v2, Engine::ACT, costActivationCycles(v2, 1, false)), 1e-6);
  for (int i = 2; i < chain; ++i)
    EXPECT_NEAR(eventOf(timeline, i, "ACT").startNs - eventOf(timeline, i - 1, "ACT").startNs, periodNs,
                kTimeToleranceNs);
}

TEST(Calibration, Anchor4OneDmaEngineMoves32KiBIn1416Ns) {
  MachineProfile v3 = bundledProfile("nc-v3");
  // 64 partitions over 16 engines: each engine moves 4 partitions x 8 KiB = 32 KiB (section 9.4 split).
  ASSERT_EQ(dmaPartitionsPerEngine(v3, 64), 4);
  Timeline timeline = timelineOf(
      "dma_copy.DMA dst=sbuf[p0:64, off 0, [1,8192]]:u8 src=hbm[p0:1, off 0, [8192,64], [1,8192]]:u8 queue=q0\n", v3);
  const TimelineEvent &copy = eventOf(timeline, 0, "DMA.q0");
  const double dataNs = copy.completeNs - copy.startNs - v3.dma.triggerNs;
  std::printf("[calibration] anchor 4 nc-v3: 32 KiB per engine in %.1f ns of data time (16 engines, HBM limiter %s)\n",
              dataNs, copy.stall == StallReason::DmaEngine ? "engaged" : "idle");
  EXPECT_NEAR(dataNs / 1416.0, 1.0, kAnchorTolerance);
  EXPECT_EQ(copy.dmaBytes, 64u * 8192u);
  EXPECT_EQ(copy.dmaChunks, 64u);

  // The copy of the anchor itself (4 partitions x 8 KiB) lands on 4 engines, as costDmaCopyNs splits
  // it, and takes exactly what the cost function says when nothing else runs.
  Timeline small = timelineOf(
      "dma_copy.DMA dst=sbuf[p0:4, off 0, [1,8192]]:u8 src=hbm[p0:1, off 0, [8192,4], [1,8192]]:u8 queue=q0\n", v3);
  const TimelineEvent &smallCopy = eventOf(small, 0, "DMA.q0");
  EXPECT_NEAR(smallCopy.completeNs - smallCopy.startNs, costDmaCopyNs(v3, DmaCopyShape{4, 8192}), kTimeToleranceNs);
}

}  // namespace
}  // namespace tessel::nc::testing
