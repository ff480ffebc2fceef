// The race detector: accesses to the same SBUF/PSUM/HBM bytes from different threads (engines, DMA
// queues), at least one a write, must be ordered by semaphores (directly or transitively) or by
// program order on one thread. Each rule has a racy case and its ordered twin that must stay silent.
#include <gtest/gtest.h>

#include "targets/nc/isa/disassembler.h"
#include "targets/nc/sim/race_detector.h"
#include "targets/nc/sim/timing/timing_simulator.h"
#include "timing_fixture.h"

namespace tessel::nc::testing {
namespace {

std::vector<Race> racesOf(const std::string &text, const std::string &profileName = "nc-v2") {
  return simulateOk(assembleText(text), bundledProfile(profileName), /*detectRaces=*/true).races;
}

const std::string kLoad =
    "dma_copy.DMA dst=sbuf[p0:128, off 0, [1,512]]:bf16 src=hbm[p0:1, off 0, [512,128], [1,512]]:bf16 queue=q0 "
    "inc=s0\n";
const std::string kRead = "tensor_copy.DVE dst=sbuf[p0:128, off 4096, [1,512]]:f32 src=sbuf[p0:128, off 0, [1,512]]:bf16";

TEST(RaceDetector, DmaLoadReadByDveWithoutASemaphoreIsARace) {
  std::vector<Instruction> program = assembleText(kLoad + kRead + "\n");
  std::vector<Race> races = racesOf(kLoad + kRead + "\n");
  ASSERT_EQ(races.size(), 1u);
  const Race &race = races[0];
  EXPECT_EQ(race.first, 0u);
  EXPECT_EQ(race.second, 1u);
  EXPECT_EQ(race.space, MemSpace::SBUF);
  EXPECT_EQ(race.partition, 0);
  EXPECT_EQ(race.offsetBytes, 0u);
  EXPECT_NE(race.message.find(formatInstruction(program[0])), std::string::npos) << race.message;
  EXPECT_NE(race.message.find(formatInstruction(program[1])), std::string::npos) << race.message;
  EXPECT_NE(race.message.find("sbuf partition 0 byte 0"), std::string::npos) << race.message;
  EXPECT_NE(race.message.find("instruction 0 (DMA.q0) writes"), std::string::npos) << race.message;
  EXPECT_NE(race.message.find("instruction 1 (DVE) reads"), std::string::npos) << race.message;
}

TEST(RaceDetector, SameProgramWithTheSemaphoreHasNoRace) {
  EXPECT_TRUE(racesOf(kLoad + kRead + " wait=s0>=1\n").empty());
}

TEST(RaceDetector, ReportsTheFirstOverlappingByte) {
  std::vector<Race> races = racesOf(
      kLoad + "tensor_copy.DVE dst=sbuf[p64:64, off 4096, [1,8]]:f32 src=sbuf[p64:64, off 1000, [1,64]]:bf16\n");
  ASSERT_EQ(races.size(), 1u);
  EXPECT_EQ(races[0].partition, 64);
  EXPECT_EQ(races[0].offsetBytes, 1000u);
}

TEST(RaceDetector, DisjointBytesReadsAndOneThreadAreNotRaces) {
  // Disjoint bytes: the load covers bytes [0, 1024) of each partition.
  EXPECT_TRUE(racesOf(kLoad + "tensor_copy.DVE dst=sbuf[p0:128, off 4096, [1,8]]:f32 "
                              "src=sbuf[p0:128, off 1024, [1,8]]:bf16\n")
                  .empty());
  // Two readers on different engines.
  EXPECT_TRUE(racesOf("tensor_copy.DVE dst=sbuf[p0:128, off 4096, [1,8]]:f32 src=sbuf[p0:128, off 0, [1,8]]:f32\n"
                      "tensor_copy.POOL dst=sbuf[p0:128, off 8192, [1,8]]:f32 src=sbuf[p0:128, off 0, [1,8]]:f32\n")
                  .empty());
  // Write then read on one engine: program order.
  EXPECT_TRUE(racesOf("memset.DVE dst=sbuf[p0:128, off 0, [1,8]]:f32 imm=1\n"
                      "tensor_copy.DVE dst=sbuf[p0:128, off 64, [1,8]]:f32 src=sbuf[p0:128, off 0, [1,8]]:f32\n")
                  .empty());
}

TEST(RaceDetector, OrderingIsTransitiveThroughAChainOfSemaphores) {
  const std::string chain =
      kLoad +
      "activation.ACT dst=sbuf[p0:128, off 8192, [1,8]]:f32 src=sbuf[p0:128, off 2048, [1,8]]:f32 func=copy "
      "wait=s0>=1 inc=s1\n";
  EXPECT_TRUE(racesOf(chain + kRead + " wait=s1>=1\n").empty());
  EXPECT_EQ(racesOf(chain + kRead + "\n").size(), 1u);
}

TEST(RaceDetector, WaitOrdersOnlyAfterTheFirstValueIncrements) {
  // A quick POOL memset and the load both increment s0; the memset completes first. Waiting for
  // s0 >= 1 orders the reader after the memset only, so reading the load's bytes races; s0 >= 2
  // orders it after both.
  const std::string producers = "memset.POOL dst=sbuf[p0:128, off 65536, [1,1]]:f32 imm=0 inc=s0\n" + kLoad;
  std::vector<Race> races = racesOf(producers + kRead + " wait=s0>=1\n");
  ASSERT_EQ(races.size(), 1u);
  EXPECT_EQ(races[0].first, 1u);
  EXPECT_TRUE(racesOf(producers + kRead + " wait=s0>=2\n").empty());
}

TEST(RaceDetector, SupersededWriteStillExposesALaterUnorderedReader) {
  // DVE overwrites the loaded bytes after the load (ordered); POOL reads them later in simulated time
  // (it waits for a long, unrelated ACT instruction) but unordered with both writes. The load's
  // record was dropped when the DVE write covered it; the race is reported against the DVE write.
  std::vector<Race> races = racesOf(
      kLoad + "memset.DVE dst=sbuf[p0:128, off 0, [1,512]]:bf16 imm=0 wait=s0>=1\n"
              "activation.ACT dst=sbuf[p0:128, off 32768, [1,60000]]:u8 src=sbuf[p0:128, off 100000, [1,60000]]:u8 "
              "func=copy inc=s5\n"
              "tensor_copy.POOL dst=sbuf[p0:128, off 8192, [1,8]]:f32 src=sbuf[p0:128, off 0, [1,8]]:bf16 "
              "wait=s5>=1\n");
  ASSERT_EQ(races.size(), 1u);
  EXPECT_EQ(races[0].first, 1u);
  EXPECT_EQ(races[0].second, 3u);
}

TEST(RaceDetector, PsumWrittenByMatmulAndReadByActNeedsASemaphore) {
  const std::string matmul =
      "nc_matmul.PE dst=psum[p0:128, off 0, [1,512]]:f32 stationary=sbuf[p0:128, off 0, [1,128]]:bf16 "
      "moving=sbuf[p0:128, off 8192, [1,512]]:bf16 inc=s3\n";
  const std::string evict = "activation.ACT dst=sbuf[p0:128, off 16384, [1,512]]:f32 src=psum[p0:128, off 0, [1,512]]:f32 func=copy";
  std::vector<Race> races = racesOf(matmul + evict + "\n");
  ASSERT_EQ(races.size(), 1u);
  EXPECT_EQ(races[0].space, MemSpace::PSUM);
  EXPECT_TRUE(racesOf(matmul + evict + " wait=s3>=1\n").empty());
}

TEST(RaceDetector, HbmWritesFromTwoQueuesRaceButOneQueueIsOrdered) {
  const std::string store0 =
      "dma_copy.DMA dst=hbm[p0:1, off 4096, [512,128], [1,512]]:bf16 src=sbuf[p0:128, off 0, [1,512]]:bf16 queue=q0\n";
  const std::string store1 =
      "dma_copy.DMA dst=hbm[p0:1, off 5120, [1,8]]:bf16 src=sbuf[p0:1, off 2048, [1,8]]:bf16 queue=q";
  std::vector<Race> races = racesOf(store0 + store1 + "1\n");
  ASSERT_EQ(races.size(), 1u);
  EXPECT_EQ(races[0].space, MemSpace::HBM);
  EXPECT_EQ(races[0].offsetBytes, 5120u);
  EXPECT_NE(races[0].message.find("hbm byte 5120"), std::string::npos) << races[0].message;
  EXPECT_TRUE(racesOf(store0 + store1 + "0\n").empty());
}

// Drives a RaceDetector from the timing simulation and remembers the most accesses it kept.
class BoundedObserver : public TimingObserver {
 public:
  BoundedObserver(std::span<const Instruction> program, const MachineProfile &profile) : detector_(program, profile) {}
  Status onStart(size_t index) override {
    detector_.onStart(index);
    maxLive_ = std::max(maxLive_, detector_.liveAccessCount());
    return Status::success();
  }
  void onIncrement(uint16_t id, size_t producer) override { detector_.onIncrement(id, producer); }
  RaceDetector detector_;
  size_t maxLive_ = 0;
};

TEST(RaceDetector, KeepsOnlyTheAccessesInFlight) {
  // 500 rounds of load -> evict through two buffers, with a POOL instruction that waits for nothing
  // and never syncs (so the "every thread ordered after it" rule alone would keep everything).
  MachineProfile v2 = bundledProfile("nc-v2");
  std::string text = "memset.POOL dst=sbuf[p0:128, off 100000, [1,8]]:f32 imm=0\n";
  const int rounds = 500;
  for (int i = 0; i < rounds; ++i) {
    std::string buffer = std::to_string((i % 2) * 1024);
    std::string load = "dma_copy.DMA dst=sbuf[p0:128, off " + buffer +
                       ", [1,512]]:bf16 src=hbm[p0:1, off 0, [512,128], [1,512]]:bf16 queue=q0 inc=s0";
    if (i >= 2) load += " wait=s1>=" + std::to_string(i - 1);
    text += load + "\n";
    text += "tensor_copy.DVE dst=sbuf[p0:128, off 8192, [1,512]]:f32 src=sbuf[p0:128, off " + buffer +
            ", [1,512]]:bf16 wait=s0>=" + std::to_string(i + 1) + " inc=s1\n";
  }
  text += "memset.POOL dst=sbuf[p0:128, off 100000, [1,8]]:f32 imm=0 wait=s1>=" + std::to_string(rounds) + "\n";
  std::vector<Instruction> program = assembleText(text);
  BoundedObserver observer(program, v2);
  Expected<Timeline> timeline = simulateTiming(program, v2, &observer);
  ASSERT_TRUE(timeline.ok()) << timeline.diag().str();
  EXPECT_TRUE(observer.detector_.races().empty());
  EXPECT_LT(observer.maxLive_, 100u);
}

}  // namespace
}  // namespace tessel::nc::testing
