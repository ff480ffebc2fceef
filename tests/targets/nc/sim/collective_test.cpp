// simulateCores(): cores running together. all_gather and all_reduce exchange data between the
// cores' states and take the profile's ring time (latency + bytes * (N - 1) / N / bandwidth), starting
// when the last core reaches them; mismatched collectives are errors before the run; a collective
// that waits for a blocked core is a deadlock naming both; one core is exactly simulate().
#include <gtest/gtest.h>

#include <bit>
#include <cstring>
#include <memory>

#include "targets/nc/machine/cost.h"
#include "timing_fixture.h"

namespace tessel::nc::testing {
namespace {

class CollectiveTest : public ::testing::Test {
 protected:
  void SetUp() override {
    profile_ = bundledProfile("nc-v2");
    for (auto &state : states_) state = std::make_unique<MachineState>(profile_, 1 << 20);
  }
  std::vector<MachineState *> states() { return {states_[0].get(), states_[1].get()}; }
  float sbufF32(int core, int64_t partition, uint64_t offset) {
    float value;
    std::memcpy(&value, states_[core]->sbuf().data() + partition * states_[core]->sbufBytesPerPartition() + offset,
                sizeof value);
    return value;
  }
  float sbufBf16(int core, int64_t partition, uint64_t offset) {
    uint16_t bits;
    std::memcpy(&bits, states_[core]->sbuf().data() + partition * states_[core]->sbufBytesPerPartition() + offset,
                sizeof bits);
    return std::bit_cast<float>(static_cast<uint32_t>(bits) << 16);
  }
  Expected<std::vector<SimulationResult>> run(const std::string &core0, const std::string &core1) {
    std::vector<std::vector<Instruction>> programs = {assembleText(core0), assembleText(core1)};
    std::vector<MachineState *> all = states();
    return simulateCores(programs, profile_, all);
  }

  MachineProfile profile_;
  std::unique_ptr<MachineState> states_[2];
};

TEST_F(CollectiveTest, AllGatherGivesEveryCoreEachCoresPart) {
  // Core c fills its part (partitions 64c..64c+63) with c + 1 and the other part with -1; core 1
  // takes longer, so the collective starts when core 1 arrives.
  auto program = [](int core, int width) {
    int mine = core * 64, other = (1 - core) * 64;
    return fmt::format(
        "memset.DVE dst=sbuf[p{}:64, off 0, [1,{}]]:f32 imm={} inc=s0\n"
        "memset.POOL dst=sbuf[p{}:64, off 0, [1,64]]:f32 imm=-1 inc=s0\n"
        "all_gather.SP dst=sbuf[p0:128, off 0, [1,64]]:f32 cores=2 wait=s0>=2 inc=s1\n",
        mine, width, core + 1, other);
  };
  Expected<std::vector<SimulationResult>> results = run(program(0, 64), program(1, 4096));
  ASSERT_TRUE(results.ok()) << results.diag().str();
  for (int core = 0; core < 2; ++core)
    for (int64_t p : {0, 63, 64, 127}) {
      EXPECT_EQ(sbufF32(core, p, 0), p < 64 ? 1.0f : 2.0f) << "core " << core << " partition " << p;
      EXPECT_EQ(sbufF32(core, p, 63 * 4), p < 64 ? 1.0f : 2.0f) << "core " << core << " partition " << p;
    }
  const uint64_t bytes = 128 * 64 * 4;
  const double expectedNs = profile_.collective.latencyNs + bytes * 0.5 / profile_.collective.bytesPerNs;
  EXPECT_NEAR(costCollectiveNs(profile_, Collective::AllGather, bytes, 2), expectedNs, kTimeToleranceNs);
  TimelineEvent gather0 = eventOf((*results)[0].timeline, 2, "CC");
  TimelineEvent gather1 = eventOf((*results)[1].timeline, 2, "CC");
  TimelineEvent slowFill = eventOf((*results)[1].timeline, 0, "DVE");
  EXPECT_EQ(gather0.name, "all_gather");
  EXPECT_EQ(gather0.collectiveBytes, bytes);
  EXPECT_EQ(gather0.startNs, gather1.startNs);
  EXPECT_GE(gather1.startNs, slowFill.completeNs);
  EXPECT_GT(gather0.startNs, eventOf((*results)[0].timeline, 0, "DVE").completeNs + 1000);
  EXPECT_NEAR(gather0.endNs - gather0.startNs, expectedNs, kTimeToleranceNs);
  EXPECT_NEAR(gather1.completeNs - gather1.startNs, expectedNs, kTimeToleranceNs);
  EXPECT_NEAR((*results)[0].timeline.totalNs, gather0.completeNs, kTimeToleranceNs);
  EXPECT_TRUE((*results)[0].races.empty());
  EXPECT_TRUE((*results)[1].races.empty());
}

TEST_F(CollectiveTest, AllReduceAddsEveryCoresTile) {
  auto program = [](int core) {
    return fmt::format(
        "iota.POOL dst=sbuf[p0:128, off 0, [1,32]]:i32 imm={},1,1 inc=s0\n"
        "tensor_copy.DVE dst=sbuf[p0:128, off 256, [1,32]]:f32 src=sbuf[p0:128, off 0, [1,32]]:i32 "
        "wait=s0>=1 inc=s1\n"
        "tensor_copy.DVE dst=sbuf[p0:128, off 512, [1,32]]:bf16 src=sbuf[p0:128, off 0, [1,32]]:i32 inc=s1\n"
        "all_reduce.SP dst=sbuf[p0:128, off 256, [1,32]]:f32 op0=add cores=2 wait=s1>=2 inc=s2\n"
        "all_reduce.SP dst=sbuf[p0:128, off 512, [1,32]]:bf16 op0=add cores=2 inc=s2\n",
        core * 10);
  };
  Expected<std::vector<SimulationResult>> results = run(program(0), program(1));
  ASSERT_TRUE(results.ok()) << results.diag().str();
  // Core c holds 10c + p + k; the sum is 10 + 2(p + k).
  for (int core = 0; core < 2; ++core)
    for (int64_t p : {0, 5, 127})
      for (uint64_t k : {0u, 31u}) {
        float expected = 10.0f + 2.0f * static_cast<float>(p + static_cast<int64_t>(k));
        EXPECT_EQ(sbufF32(core, p, 256 + 4 * k), expected) << "core " << core << " p " << p << " k " << k;
        EXPECT_EQ(sbufBf16(core, p, 512 + 2 * k), expected) << "core " << core << " p " << p << " k " << k;
      }
  TimelineEvent f32 = eventOf((*results)[0].timeline, 3, "CC"), bf16 = eventOf((*results)[0].timeline, 4, "CC");
  // A ring all_reduce moves twice an all_gather's bytes: a reduce-scatter, then an all_gather.
  auto ringNs = [&](double bytes) { return profile_.collective.latencyNs + 2 * bytes * 0.5 / profile_.collective.bytesPerNs; };
  EXPECT_NEAR(f32.endNs - f32.startNs, ringNs(128 * 32 * 4), kTimeToleranceNs);
  EXPECT_NEAR(bf16.endNs - bf16.startNs, ringNs(128 * 32 * 2), kTimeToleranceNs);
  EXPECT_NEAR(ringNs(128 * 32 * 4), costCollectiveNs(profile_, Collective::AllReduce, 128 * 32 * 4, 2), kTimeToleranceNs);
  // SP runs the collectives in order, one after the other.
  EXPECT_NEAR(bf16.startNs, f32.endNs, kTimeToleranceNs);
}

TEST_F(CollectiveTest, MismatchedKindsAreAnErrorNamingBothCores) {
  Expected<std::vector<SimulationResult>> results =
      run("all_gather.SP dst=sbuf[p0:128, off 0, [1,64]]:f32 cores=2\n",
          "memset.DVE dst=sbuf[p0:128, off 0, [1,8]]:f32 imm=0\n"
          "all_reduce.SP dst=sbuf[p0:128, off 0, [1,64]]:f32 op0=add cores=2\n");
  ASSERT_FALSE(results.ok());
  EXPECT_EQ(results.diag().message,
            "nc simulation: collective #0 differs between cores: core 0 instruction 0 (all_gather.SP) has dst 32768 "
            "bytes in 128 partitions (f32, op0 none), core 1 instruction 1 (all_reduce.SP) has 32768 bytes in 128 "
            "partitions (f32, op0 add)");
}

TEST_F(CollectiveTest, MismatchedSizesAreAnError) {
  Expected<std::vector<SimulationResult>> results = run("all_gather.SP dst=sbuf[p0:128, off 0, [1,64]]:f32 cores=2\n",
                                                        "all_gather.SP dst=sbuf[p0:128, off 0, [1,32]]:f32 cores=2\n");
  ASSERT_FALSE(results.ok());
  EXPECT_NE(results.diag().message.find("collective #0 differs between cores"), std::string::npos)
      << results.diag().message;
}

TEST_F(CollectiveTest, ACoreWithMoreCollectivesIsAnErrorNotAHang) {
  Expected<std::vector<SimulationResult>> results =
      run("all_gather.SP dst=sbuf[p0:128, off 0, [1,64]]:f32 cores=2\n",
          "all_gather.SP dst=sbuf[p0:128, off 0, [1,64]]:f32 cores=2\n"
          "all_gather.SP dst=sbuf[p0:128, off 0, [1,64]]:f32 cores=2\n");
  ASSERT_FALSE(results.ok());
  EXPECT_EQ(results.diag().message,
            "nc simulation: core 1 has 2 collective(s), core 0 has 1: core 1 instruction 1 (all_gather.SP) "
            "(collective #1) would wait for core 0, which finishes without it");
}

TEST_F(CollectiveTest, CoreCountMustMatchTheCoresSimulated) {
  Expected<std::vector<SimulationResult>> results = run("all_gather.SP dst=sbuf[p0:128, off 0, [1,64]]:f32 cores=1\n",
                                                        "all_gather.SP dst=sbuf[p0:128, off 0, [1,64]]:f32 cores=1\n");
  ASSERT_FALSE(results.ok());
  EXPECT_EQ(results.diag().message,
            "nc simulation: core 0 instruction 0 (all_gather.SP) spans cores=1, but 2 core(s) are simulated together");
}

TEST_F(CollectiveTest, ACollectiveWaitingForABlockedCoreIsADeadlock) {
  Expected<std::vector<SimulationResult>> results =
      run("all_gather.SP dst=sbuf[p0:128, off 0, [1,64]]:f32 cores=2 wait=s5>=1\n",
          "all_gather.SP dst=sbuf[p0:128, off 0, [1,64]]:f32 cores=2\n");
  ASSERT_FALSE(results.ok());
  EXPECT_EQ(results.diag().message,
            "nc simulation deadlocked at 0.0 ns: 2 instruction(s) never started and no running instruction can "
            "increment the semaphores they wait for:\n"
            "  core 0:\n"
            "    instruction 0 (all_gather.SP, head of SP) waits for s5 >= 1; s5 is 0\n"
            "  core 1:\n"
            "    instruction 0 (all_gather.SP) waits for the other cores to reach it");
}

TEST_F(CollectiveTest, VerifierErrorsNameTheCore) {
  Expected<std::vector<SimulationResult>> results =
      run("memset.DVE dst=sbuf[p0:128, off 0, [1,8]]:f32 imm=0\n", "iota.DVE dst=sbuf[p0:128, off 0, [1,8]]:i32\n");
  ASSERT_FALSE(results.ok());
  EXPECT_EQ(results.diag().message.rfind("core 1: nc program: 1 tile-rule violation(s):", 0), 0u)
      << results.diag().message;
}

TEST(SimulateCores, OneCoreIsSimulate) {
  MachineProfile profile = bundledProfile("nc-v3");
  std::vector<Instruction> program = assembleText(
      "dma_copy.DMA dst=sbuf[p0:128, off 0, [1,64]]:f32 src=hbm[p0:1, off 0, [64,128], [1,64]]:f32 queue=q0 inc=s0\n"
      "activation.ACT dst=sbuf[p0:128, off 256, [1,64]]:f32 src=sbuf[p0:128, off 0, [1,64]]:f32 func=exp "
      "wait=s0>=1 inc=s1\n"
      "nc_matmul.PE dst=psum[p0:64, off 0, [1,64]]:f32 stationary=sbuf[p0:128, off 0, [1,64]]:f32 "
      "moving=sbuf[p0:128, off 256, [1,64]]:f32 wait=s1>=1 inc=s2\n"
      "all_reduce.SP dst=sbuf[p0:128, off 256, [1,64]]:f32 op0=add cores=1 wait=s1>=1 inc=s3\n"
      "tensor_copy.DVE dst=sbuf[p0:64, off 1024, [1,64]]:f32 src=psum[p0:64, off 0, [1,64]]:f32 wait=s2>=1,s3>=1\n");
  std::vector<float> input(128 * 64);
  for (size_t i = 0; i < input.size(); ++i) input[i] = static_cast<float>(i % 97) * 0.01f;
  std::span<const uint8_t> bytes(reinterpret_cast<const uint8_t *>(input.data()), input.size() * sizeof(float));
  MachineState single(profile, 1 << 20), together(profile, 1 << 20);
  ASSERT_TRUE(single.writeHbm(0, bytes).ok());
  ASSERT_TRUE(together.writeHbm(0, bytes).ok());
  Expected<SimulationResult> one = simulate(program, profile, &single);
  ASSERT_TRUE(one.ok()) << one.diag().str();
  std::vector<std::vector<Instruction>> programs = {program};
  MachineState *states[] = {&together};
  Expected<std::vector<SimulationResult>> cores = simulateCores(programs, profile, states);
  ASSERT_TRUE(cores.ok()) << cores.diag().str();
  ASSERT_EQ(cores->size(), 1u);
  const Timeline &a = one->timeline, &b = (*cores)[0].timeline;
  EXPECT_EQ(a.totalNs, b.totalNs);
  ASSERT_EQ(a.events.size(), b.events.size());
  for (size_t i = 0; i < a.events.size(); ++i) {
    EXPECT_EQ(a.events[i].track, b.events[i].track);
    EXPECT_EQ(a.events[i].instruction, b.events[i].instruction);
    EXPECT_EQ(a.events[i].startNs, b.events[i].startNs);
    EXPECT_EQ(a.events[i].endNs, b.events[i].endNs);
  }
  EXPECT_TRUE(std::equal(single.sbuf().begin(), single.sbuf().end(), together.sbuf().begin()));
  EXPECT_TRUE(std::equal(single.psum().begin(), single.psum().end(), together.psum().begin()));
  // The one-core collective costs the fixed latency only.
  TimelineEvent reduce = eventOf(a, 3, "CC");
  EXPECT_NEAR(reduce.endNs - reduce.startNs, profile.collective.latencyNs, kTimeToleranceNs);
}

}  // namespace
}  // namespace tessel::nc::testing
