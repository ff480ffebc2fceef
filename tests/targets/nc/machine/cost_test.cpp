// Timing cost functions: the per-instruction formulas of accelerator-model.md sections 5, 6.1 and
// 9.2/9.4, the peak figures the document derives from the profiles (section 5.1), and the section-11
// calibration anchors that the cost functions determine on their own. Anchors 2 (tiled matmul
// latencies) and 5 (fused Mamba) need the full simulator and are left to its tests.
#include "targets/nc/machine/cost.h"

#include <gtest/gtest.h>

namespace tessel::nc {
namespace {

MachineProfile load(const std::string &name) {
  Expected<MachineProfile> loaded = loadProfile(name);
  EXPECT_TRUE(loaded.ok()) << loaded.diag().str();
  return loaded.ok() ? *loaded : MachineProfile{};
}

/// |got / want - 1| <= tolerance.
void expectWithin(double got, double want, double tolerance) {
  EXPECT_NEAR(got / want, 1.0, tolerance) << "got " << got << ", want " << want;
}

TEST(MatmulCost, FollowsSection51Formula) {
  MachineProfile v2 = load("nc-v2");
  EXPECT_EQ(costMatmulCycles(v2, {128, 128, 512, PeDtype::Bf16}), 512);
  EXPECT_EQ(costMatmulCycles(v2, {128, 128, 32, PeDtype::Bf16}), 64);   // MIN_II floor for a full stationary.
  EXPECT_EQ(costMatmulCycles(v2, {128, 16, 8, PeDtype::Bf16}), 16);     // Small stationary: min(64, M).
  EXPECT_EQ(costMatmulCycles(v2, {128, 128, 512, PeDtype::Fp32}), 2048);
  EXPECT_EQ(costMatmulCycles(v2, {128, 128, 512, PeDtype::Tf32}), 512);
  EXPECT_EQ(costLoadStationaryCycles(v2, 128), 32);                      // "32 cycles for M=128".
  EXPECT_EQ(costMatmulStreamPairCycles(v2, {128, 128, 64, PeDtype::Bf16}), 64);
  EXPECT_EQ(costPeTransposeCycles(v2, 128, 128), 128);
  EXPECT_EQ(costPeTransposeCycles(v2, 32, 512), 64);
}

TEST(PeakFigures, MatchTheDocument) {
  // Section 5.1 peak check and section 10 pe_peak_tflops: per-core PE peaks derived from the profile.
  MachineProfile v2 = load("nc-v2");
  MachineProfile v3 = load("nc-v3");
  expectWithin(pePeakFlopsPerSec(v2, PeDtype::Bf16), 91.75e12, 0.001);
  expectWithin(pePeakFlopsPerSec(v2, PeDtype::Fp8), 91.75e12, 0.001);
  expectWithin(pePeakFlopsPerSec(v2, PeDtype::Fp32), 22.9e12, 0.005);
  expectWithin(pePeakFlopsPerSec(v3, PeDtype::Bf16), 78.6e12, 0.001);
  expectWithin(pePeakFlopsPerSec(v3, PeDtype::Fp8), 157.3e12, 0.001);  // Double row.
  expectWithin(pePeakFlopsPerSec(v3, PeDtype::Fp32), 19.7e12, 0.005);
  for (const MachineProfile *p : {&v2, &v3}) {
    expectWithin(pePeakFlopsPerSec(*p, PeDtype::Bf16), p->pe.statedPeakTflops.bf16 * 1e12, 0.005);
    expectWithin(pePeakFlopsPerSec(*p, PeDtype::Fp8), p->pe.statedPeakTflops.fp8 * 1e12, 0.005);
    expectWithin(pePeakFlopsPerSec(*p, PeDtype::Fp32), p->pe.statedPeakTflops.fp32 * 1e12, 0.005);
  }
  // HBM per core is the chip figure split over the cores (section 1: 820/2, 2900/8).
  expectWithin(v2.hbm.bytesPerNsPerCore, v2.chip.hbmBytesPerNsPerChip / v2.chip.coresPerChip, 0.001);
  expectWithin(v3.hbm.bytesPerNsPerCore, v3.chip.hbmBytesPerNsPerChip / v3.chip.coresPerChip, 0.005);
  // Roofline knee (section 5.1): ~222 flop/byte on nc-v2 (the document divides by 413 GB/s), ~217 on nc-v3.
  expectWithin(pePeakFlopsPerSec(v2, PeDtype::Bf16) / (v2.hbm.bytesPerNsPerCore * 1e9), 222, 0.02);
  expectWithin(pePeakFlopsPerSec(v3, PeDtype::Bf16) / (v3.hbm.bytesPerNsPerCore * 1e9), 217, 0.01);
  // Sustained DMA per core (section 5.5): 272 and 368 GB/s.
  EXPECT_DOUBLE_EQ(dmaBytesPerNsPerCore(v2), 272);
  EXPECT_DOUBLE_EQ(dmaBytesPerNsPerCore(v3), 368);
}

TEST(StreamingCost, FollowsSection92Formula) {
  MachineProfile v2 = load("nc-v2");
  MachineProfile v3 = load("nc-v3");
  EXPECT_EQ(costStreamingCycles(v2, Engine::DVE, {1}), 64);                 // MIN_II floor.
  EXPECT_EQ(costStreamingCycles(v2, Engine::DVE, {1000}), 1000);            // One streamed input: N.
  EXPECT_EQ(costStreamingCycles(v2, Engine::DVE, {1000, 2}), 2000);         // Two SBUF inputs: 2N.
  EXPECT_EQ(costStreamingCycles(v2, Engine::DVE, {1000, 1, 16}), 1000);     // Stride 16 B: full rate.
  EXPECT_EQ(costStreamingCycles(v2, Engine::DVE, {1000, 1, 17}), 2000);     // Stride > 16 B: half rate.
  double contiguous = dvePerfModeSpeedup(v3, DvePerfCase::CopyOrTensorScalarBf16SbufContiguous);
  EXPECT_EQ(costStreamingCycles(v3, Engine::DVE, {1000, 1, 2, contiguous}), 250);  // Perf mode 4x.
  double tensorTensor = dvePerfModeSpeedup(v3, DvePerfCase::TensorTensorBf16Sbuf);
  EXPECT_EQ(costStreamingCycles(v3, Engine::DVE, {1000, 2, 2, tensorTensor}), 1000);  // Perf mode 2x.
  double v2Contiguous = dvePerfModeSpeedup(v2, DvePerfCase::CopyOrTensorScalarBf16SbufContiguous);
  EXPECT_EQ(costStreamingCycles(v2, Engine::DVE, {1000, 1, 2, v2Contiguous}), 1000);  // No perf mode on nc-v2.
  EXPECT_EQ(costActivationCycles(v2, 512, /*reduce=*/false), 512);
  EXPECT_EQ(costActivationCycles(v2, 512, /*reduce=*/true), 576);
  EXPECT_EQ(costPoolCycles(v2, 100), 250);
}

TEST(CalibrationAnchors, PeStreamReachesPeak) {
  // Anchor 1 (section 11): back-to-back 128x128x512 bf16 matmuls reach 91.75 / 78.6 TFLOPS per core.
  // Exercises the PE pair cost max(LS_II, MM_II) (section 9.2) and the PE clock.
  for (auto [name, tflops] : {std::pair{"nc-v2", 91.75}, std::pair{"nc-v3", 78.6}}) {
    MachineProfile p = load(name);
    MatmulShape shape{128, 128, 512, PeDtype::Bf16};
    double ns = cyclesToNs(p, Engine::PE, static_cast<double>(costMatmulStreamPairCycles(p, shape)));
    expectWithin(matmulFlops(shape) / ns * 1e-3, tflops, 0.01);  // FLOP/ns * 1e-3 = TFLOP/s.
  }
}

TEST(CalibrationAnchors, DependentActivationSpacing) {
  // Anchor 3 (section 11): dependent 1-element ACT instructions issue ~264 ACT cycles (~189 ns) apart
  // on nc-v2. Exercises the ACT cost max(MIN_II, N) plus the section 9.1 latency rule
  // (ACT pipeline latency + semaphore latency).
  MachineProfile v2 = load("nc-v2");
  int64_t spacing = dependentIssueCycles(v2, Engine::ACT, costActivationCycles(v2, 1, /*reduce=*/false));
  expectWithin(static_cast<double>(spacing), 264, 0.15);
  expectWithin(cyclesToNs(v2, Engine::ACT, static_cast<double>(spacing)), 189, 0.15);
}

TEST(CalibrationAnchors, DependentSmallDveOverhead) {
  // Section 9.1 target: dependent small DVE instructions add ~100 cycles beyond their II on nc-v2.
  // Exercises the DVE pipeline latency + semaphore latency against the profile's stated overhead.
  MachineProfile v2 = load("nc-v2");
  int64_t ii = costStreamingCycles(v2, Engine::DVE, {1});
  expectWithin(static_cast<double>(dependentIssueCycles(v2, Engine::DVE, ii) - ii),
               static_cast<double>(v2.dve.smallDependencyOverheadCycles), 0.15);
}

TEST(CalibrationAnchors, OneDmaEngineMoves32KiB) {
  // Anchor 4 (section 11): one nc-v3 DMA engine moved 4 partitions x 8 KiB HBM->SBUF in 1416 ns.
  // Exercises the per-engine transfer time of section 9.4 (chunk rate, T_CHUNK_MIN, T_XFER_FIXED);
  // the measurement excludes the trigger latency.
  MachineProfile v3 = load("nc-v3");
  expectWithin(dmaTransferNs(v3, /*chunks=*/4, /*bytesPerChunk=*/8192), 1416, 0.15);
}

TEST(DmaCost, ChunkEfficiencyCurve) {
  // Section 9.4: chunks of >= 4 KiB stream at the sustained rate, 2 KiB at 0.8 of it, 256 B to 1 KiB
  // at 0.4 (flat per byte), in between interpolated in log2(bytes); below 256 B a chunk takes as
  // long as a 256 B one (the floor).
  for (const char *name : {"nc-v2", "nc-v3"}) {
    MachineProfile p = load(name);
    auto efficiency = [&](int64_t bytes) {
      return static_cast<double>(bytes) / p.dma.bytesPerNsPerEngine / dmaChunkNs(p, bytes);
    };
    EXPECT_DOUBLE_EQ(efficiency(4096), 1.0) << name;
    EXPECT_DOUBLE_EQ(efficiency(65536), 1.0) << name;
    EXPECT_DOUBLE_EQ(efficiency(2048), 0.8) << name;
    EXPECT_DOUBLE_EQ(efficiency(1024), 0.4) << name;
    EXPECT_DOUBLE_EQ(dmaChunkEfficiency(p, 512), 0.4) << name;
    EXPECT_NEAR(dmaChunkEfficiency(p, 1448), 0.6, 0.001) << name;  // Half way in log2 between 1 and 2 KiB.
    EXPECT_NEAR(dmaChunkEfficiency(p, 2896), 0.9, 0.001) << name;
    // The floor: within 2% of a 256 B chunk's time, and what every smaller chunk takes.
    EXPECT_NEAR(dmaChunkNs(p, 256) / p.dma.chunkMinNs, 1.0, 0.02) << name;
    EXPECT_DOUBLE_EQ(dmaChunkNs(p, 64), p.dma.chunkMinNs) << name;
    EXPECT_DOUBLE_EQ(dmaChunkNs(p, 4), p.dma.chunkMinNs) << name;
  }
}

TEST(DmaCost, CopySplitsPartitionsOverEngines) {
  // Section 9.4 example: 128 x 512 fp32 HBM->SBUF is 16 transfers of 8 partitions (2 KiB each).
  MachineProfile v2 = load("nc-v2");
  EXPECT_EQ(dmaPartitionsPerEngine(v2, 128), 8);
  EXPECT_EQ(dmaPartitionsPerEngine(v2, 1), 1);
  double ns = costDmaCopyNs(v2, {/*partitions=*/128, /*bytesPerPartition=*/2048});
  EXPECT_DOUBLE_EQ(ns, v2.dma.triggerNs + 8 * 2048 / (v2.dma.bytesPerNsPerEngine * dmaChunkEfficiency(v2, 2048)));
  MachineProfile v3 = load("nc-v3");
  double transposed = costDmaCopyNs(v3, {128, 2048, 1, v3.dma.transpose->hbmToSbufEfficiency});
  EXPECT_DOUBLE_EQ(transposed,
                   v3.dma.triggerNs + 8 * 2048 / (v3.dma.bytesPerNsPerEngine * dmaChunkEfficiency(v3, 2048) * 0.9));
}

}  // namespace
}  // namespace tessel::nc
