// simulate(): the driver around the timing model. Deadlocks name every blocked instruction with the
// semaphore it waits for and the value it has; the functional simulation runs in simulated start
// order (not program order); errors from the verifier and the functional simulation come back; the
// timeline is complete, ordered and deterministic.
#include <gtest/gtest.h>

#include <cstring>

#include "timing_fixture.h"

namespace tessel::nc::testing {
namespace {

TEST(Simulator, DeadlockNamesEachBlockedInstructionAndItsSemaphore) {
  std::vector<Instruction> program = assembleText(
      "tensor_copy.DVE dst=sbuf[p0:128, off 0, [1,8]]:f32 src=sbuf[p0:128, off 64, [1,8]]:f32 inc=s1\n"
      "activation.ACT dst=sbuf[p0:128, off 128, [1,8]]:f32 src=sbuf[p0:128, off 64, [1,8]]:f32 func=copy wait=s5>=1\n"
      "tensor_copy.ACT dst=sbuf[p0:128, off 256, [1,8]]:f32 src=sbuf[p0:128, off 64, [1,8]]:f32\n"
      "tensor_copy.POOL dst=sbuf[p0:128, off 512, [1,8]]:f32 src=sbuf[p0:128, off 64, [1,8]]:f32 wait=s1>=2\n");
  SimulateOptions options;
  options.timingOnly = true;
  Expected<SimulationResult> result = simulate(program, bundledProfile("nc-v2"), nullptr, options);
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.diag().code, ErrorCode::RuntimeError);
  const std::string &message = result.diag().message;
  EXPECT_NE(message.find("deadlock"), std::string::npos) << message;
  EXPECT_NE(message.find("3 instruction(s) never started"), std::string::npos) << message;
  EXPECT_NE(message.find("instruction 1 (activation.ACT, head of ACT) waits for s5 >= 1; s5 is 0 (1 more "
                         "instruction(s) queued behind it)"),
            std::string::npos)
      << message;
  EXPECT_NE(message.find("instruction 3 (tensor_copy.POOL, head of POOL) waits for s1 >= 2; s1 is 1"),
            std::string::npos)
      << message;
}

TEST(Simulator, CyclicWaitIsADeadlock) {
  SimulateOptions options;
  options.timingOnly = true;
  Expected<SimulationResult> result = simulate(
      assembleText(
          "tensor_copy.DVE dst=sbuf[p0:128, off 0, [1,8]]:f32 src=sbuf[p0:128, off 64, [1,8]]:f32 wait=s2>=1 inc=s1\n"
          "tensor_copy.ACT dst=sbuf[p0:128, off 128, [1,8]]:f32 src=sbuf[p0:128, off 64, [1,8]]:f32 wait=s1>=1 "
          "inc=s2\n"),
      bundledProfile("nc-v3"), nullptr, options);
  ASSERT_FALSE(result.ok());
  EXPECT_NE(result.diag().message.find("instruction 0 (tensor_copy.DVE, head of DVE) waits for s2 >= 1; s2 is 0"),
            std::string::npos)
      << result.diag().message;
  EXPECT_NE(result.diag().message.find("instruction 1 (tensor_copy.ACT, head of ACT) waits for s1 >= 1; s1 is 0"),
            std::string::npos)
      << result.diag().message;
}

TEST(Simulator, RequiresAStateUnlessTimingOnly) {
  Expected<SimulationResult> result = simulate(
      assembleText("memset.DVE dst=sbuf[p0:128, off 0, [1,8]]:f32 imm=1\n"), bundledProfile("nc-v2"), nullptr);
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.diag().code, ErrorCode::InvalidArgument);
  EXPECT_NE(result.diag().message.find("timingOnly"), std::string::npos);
}

TEST(Simulator, VerifierErrorsComeBackFirst) {
  SimulateOptions options;
  options.timingOnly = true;
  Expected<SimulationResult> result = simulate(
      assembleText("memset.DVE dst=sbuf[p16:16, off 0, [1,8]]:f32 imm=1\n"), bundledProfile("nc-v2"), nullptr, options);
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.diag().code, ErrorCode::InvalidArgument);
  EXPECT_NE(result.diag().message.find("T6"), std::string::npos) << result.diag().message;
}

class SimulatorFunctional : public ::testing::Test {
 protected:
  void SetUp() override {
    profile_ = bundledProfile("nc-v2");
    state_ = std::make_unique<MachineState>(profile_, 1 << 20);
  }
  float sbufF32(int64_t partition, uint64_t offset) {
    float value;
    std::memcpy(&value, state_->sbuf().data() + partition * state_->sbufBytesPerPartition() + offset, sizeof value);
    return value;
  }
  MachineProfile profile_;
  std::unique_ptr<MachineState> state_;
};

TEST_F(SimulatorFunctional, LoadComputeStoreThroughSemaphores) {
  std::vector<float> input(128 * 4);
  for (size_t i = 0; i < input.size(); ++i) input[i] = static_cast<float>(i) - 100.0f;
  std::span<const uint8_t> inputBytes(reinterpret_cast<const uint8_t *>(input.data()), input.size() * sizeof(float));
  ASSERT_TRUE(state_->writeHbm(0, inputBytes).ok());
  std::vector<Instruction> program = assembleText(
      "dma_copy.DMA dst=sbuf[p0:128, off 0, [1,4]]:f32 src=hbm[p0:1, off 0, [4,128], [1,4]]:f32 queue=q0 inc=s0\n"
      "activation.ACT dst=sbuf[p0:128, off 64, [1,4]]:f32 src=sbuf[p0:128, off 0, [1,4]]:f32 func=copy imm=2 "
      "wait=s0>=1 inc=s1\n"
      "dma_copy.DMA dst=hbm[p0:1, off 4096, [4,128], [1,4]]:f32 src=sbuf[p0:128, off 64, [1,4]]:f32 queue=q1 "
      "wait=s1>=1\n");
  Expected<SimulationResult> result = simulate(program, profile_, state_.get());
  ASSERT_TRUE(result.ok()) << result.diag().str();
  EXPECT_TRUE(result->races.empty());
  std::vector<float> output(input.size());
  ASSERT_TRUE(state_->readHbm(4096, std::span(reinterpret_cast<uint8_t *>(output.data()), output.size() * sizeof(float))).ok());
  for (size_t i = 0; i < input.size(); ++i) ASSERT_EQ(output[i], 2 * input[i]) << "element " << i;
}

TEST_F(SimulatorFunctional, ExecutesInSimulatedStartOrderNotProgramOrder) {
  // The POOL copy comes first in the program but waits for the DVE memset.
  std::vector<Instruction> program = assembleText(
      "tensor_copy.POOL dst=sbuf[p0:128, off 64, [1,4]]:f32 src=sbuf[p0:128, off 0, [1,4]]:f32 wait=s1>=1\n"
      "memset.DVE dst=sbuf[p0:128, off 0, [1,4]]:f32 imm=7 inc=s1\n");
  Expected<SimulationResult> result = simulate(program, profile_, state_.get());
  ASSERT_TRUE(result.ok()) << result.diag().str();
  EXPECT_EQ(sbufF32(5, 64), 7.0f);
  EXPECT_TRUE(result->races.empty());
}

TEST_F(SimulatorFunctional, FunctionalErrorsStopTheSimulation) {
  // Accumulating onto PSUM that a memset wrote is undefined (section 4.3).
  std::vector<Instruction> program = assembleText(
      "memset.DVE dst=psum[p0:128, off 0, [1,8]]:f32 imm=0 inc=s1\n"
      "nc_matmul.PE dst=psum[p0:128, off 0, [1,8]]:f32 stationary=sbuf[p0:128, off 0, [1,128]]:bf16 "
      "moving=sbuf[p0:128, off 256, [1,8]]:bf16 acc=1 wait=s1>=1\n");
  Expected<SimulationResult> result = simulate(program, profile_, state_.get());
  ASSERT_FALSE(result.ok());
  EXPECT_NE(result.diag().message.find("instruction 1"), std::string::npos) << result.diag().message;
}

TEST(Simulator, TimelineIsCompleteOrderedAndDeterministic) {
  MachineProfile v3 = bundledProfile("nc-v3");
  std::vector<Instruction> program = assembleText(
      "dma_copy.DMA dst=sbuf[p0:128, off 0, [1,512]]:bf16 src=hbm[p0:1, off 0, [512,128], [1,512]]:bf16 queue=q0 "
      "inc=s0\n"
      "dma_copy.DMA dst=sbuf[p0:128, off 1024, [1,128]]:bf16 src=hbm[p0:1, off 262144, [128,128], [1,128]]:bf16 "
      "queue=q1 inc=s0\n"
      "nc_matmul.PE dst=psum[p0:128, off 0, [1,512]]:f32 stationary=sbuf[p0:128, off 1024, [1,128]]:bf16 "
      "moving=sbuf[p0:128, off 0, [1,512]]:bf16 wait=s0>=2 inc=s1\n"
      "activation.ACT dst=sbuf[p0:128, off 4096, [1,512]]:bf16 src=psum[p0:128, off 0, [1,512]]:f32 func=gelu "
      "wait=s1>=1 inc=s2\n"
      "tensor_tensor.DVE dst=sbuf[p0:128, off 8192, [1,512]]:bf16 in0=sbuf[p0:128, off 4096, [1,512]]:bf16 "
      "in1=sbuf[p0:128, off 0, [1,512]]:bf16 op0=add wait=s2>=1 inc=s3\n"
      "dma_copy.DMA dst=hbm[p0:1, off 1048576, [512,128], [1,512]]:bf16 src=sbuf[p0:128, off 8192, [1,512]]:bf16 "
      "queue=q2 wait=s3>=1\n");
  SimulationResult first = simulateOk(program, v3, /*detectRaces=*/true);
  SimulationResult second = simulateOk(program, v3, /*detectRaces=*/true);
  EXPECT_TRUE(first.races.empty());
  const Timeline &timeline = first.timeline;
  EXPECT_EQ(timeline.profileName, "nc-v3");
  EXPECT_DOUBLE_EQ(timeline.pePeakFlopsPerSec, pePeakFlopsPerSec(v3, PeDtype::Bf16));
  EXPECT_DOUBLE_EQ(timeline.hbmPeakBytesPerNs, v3.hbm.bytesPerNsPerCore);
  ASSERT_EQ(timeline.events.size(), program.size() + 1);  // The matmul has two events.
  double latest = 0, previousStart = 0;
  for (const TimelineEvent &event : timeline.events) {
    EXPECT_LE(event.readyNs, event.startNs);
    EXPECT_LE(event.startNs, event.endNs);
    EXPECT_LE(event.endNs, event.completeNs);
    EXPECT_GE(event.startNs, previousStart);
    previousStart = event.startNs;
    latest = std::max(latest, event.completeNs);
  }
  EXPECT_EQ(timeline.totalNs, latest);
  ASSERT_EQ(second.timeline.events.size(), timeline.events.size());
  for (size_t i = 0; i < timeline.events.size(); ++i) {
    EXPECT_EQ(second.timeline.events[i].instruction, timeline.events[i].instruction);
    EXPECT_EQ(second.timeline.events[i].startNs, timeline.events[i].startNs);
    EXPECT_EQ(second.timeline.events[i].completeNs, timeline.events[i].completeNs);
  }
  EXPECT_EQ(eventOf(timeline, 3, "ACT").stall, StallReason::Semaphore);
  EXPECT_EQ(eventOf(timeline, 5, "DMA.q2").hbmWriteBytes, 128u * 1024u);
}

TEST(Simulator, DependentDveInstructionsAddPipelineAndSemaphoreLatency) {
  // Section 9.1: dependent small DVE instructions add ~100 cycles beyond their II.
  MachineProfile v2 = bundledProfile("nc-v2");
  std::string text;
  for (int i = 0; i < 4; ++i) {
    text += "tensor_copy.DVE dst=sbuf[p0:128, off " + std::to_string(64 * (i + 1)) +
            ", [1,1]]:f32 src=sbuf[p0:128, off " + std::to_string(64 * i) + ", [1,1]]:f32 inc=s0";
    if (i > 0) text += " wait=s0>=" + std::to_string(i);
    text += "\n";
  }
  Timeline timeline = timelineOf(text, v2);
  const double periodNs = eventOf(timeline, 2, "DVE").startNs - eventOf(timeline, 1, "DVE").startNs;
  EXPECT_NEAR(periodNs, ns(v2, Engine::DVE, static_cast<double>(dependentIssueCycles(v2, Engine::DVE, v2.dve.minIiCycles))),
              kTimeToleranceNs);
}

}  // namespace
}  // namespace tessel::nc::testing
