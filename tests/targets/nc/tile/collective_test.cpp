// Collectives in the tile DSL: allGather/allReduce record SP ops that read and write dst, are
// checked like other ops, and a kernel using allGather, compiled for each of two cores, runs on
// simulateCores() with every core ending up with both cores' parts.
#include <cstring>
#include <memory>

#include <gtest/gtest.h>

#include "support/float_types.h"
#include "targets/nc/machine/cost.h"
#include "targets/nc/sim/simulator.h"
#include "test_util.h"

namespace tessel::nc::tile {
namespace {

/// Core `core` of 2 loads its [64, 256] shard into its half of a [128, 256] tile, gathers the
/// other half from the other core, adds 1 and stores all 128 rows.
void gatherKernel(KernelBuilder &b, int core) {
  HbmView x = b.input("x", DType::BF16, {64, 256});
  HbmView out = b.output("out", DType::BF16, {128, 256});
  TileView all = b.sbuf("all", DType::BF16, 128, {256});
  TileView result = b.sbuf("result", DType::BF16, 128, {256});
  b.load(all.partitionSlice(64 * core, 64), x);
  b.allGather(all, 2);
  b.tensorScalar(result, all, AluOp::Add, 1.0f);
  b.store(out, result);
}

TEST(TileCollective, AllGatherKernelRunsOnTwoCores) {
  MachineProfile profile = loadTestProfile("nc-v2");
  std::vector<CompiledKernel> compiled;
  for (int core = 0; core < 2; ++core) {
    Kernel kernel = buildKernel("gather", profile, [&](KernelBuilder &b) { gatherKernel(b, core); });
    ASSERT_EQ(kernel.ops[1].kind, TileOpKind::AllGather);
    Expected<CompiledKernel> one = compileKernel(kernel, profile);
    ASSERT_TRUE(one.ok()) << one.diag().str();
    compiled.push_back(std::move(*one));
  }
  std::vector<std::vector<Instruction>> programs;
  std::vector<std::unique_ptr<MachineState>> owned;
  std::vector<MachineState *> states;
  for (int core = 0; core < 2; ++core) {
    const CompiledKernel &kernel = compiled[static_cast<size_t>(core)];
    programs.push_back(kernel.program);
    owned.push_back(std::make_unique<MachineState>(profile, kernel.hbmBytes));
    states.push_back(owned.back().get());
    // Core c's shard holds c * 1000 + flat index, exact in bf16 for these small multiples of 8.
    std::vector<uint8_t> bytes(64 * 256 * 2);
    for (size_t i = 0; i < 64 * 256; ++i) {
      uint16_t bits = BFloat16(static_cast<float>(core * 64 + static_cast<int>(i / 256))).bits;
      std::memcpy(&bytes[i * 2], &bits, 2);
    }
    ASSERT_TRUE(states.back()->writeHbm(kernel.hbmTensors[0].offsetBytes, bytes).ok());
  }
  Expected<std::vector<SimulationResult>> results = simulateCores(programs, profile, states);
  ASSERT_TRUE(results.ok()) << results.diag().str();
  for (int core = 0; core < 2; ++core) {
    const CompiledKernel &kernel = compiled[static_cast<size_t>(core)];
    std::vector<uint8_t> bytes(128 * 256 * 2);
    ASSERT_TRUE(states[static_cast<size_t>(core)]->readHbm(kernel.hbmTensors[1].offsetBytes, bytes).ok());
    for (size_t row : {0u, 63u, 64u, 127u}) {
      uint16_t bits;
      std::memcpy(&bits, &bytes[(row * 256 + 255) * 2], 2);
      EXPECT_EQ(static_cast<float>(BFloat16::fromBits(bits)), static_cast<float>(row) + 1.0f)
          << "core " << core << " row " << row;
    }
    EXPECT_TRUE((*results)[static_cast<size_t>(core)].races.empty());
    bool sawCollective = false;
    for (const TimelineEvent &event : (*results)[static_cast<size_t>(core)].timeline.events)
      sawCollective |= event.track == "CC" && event.collectiveBytes == 128 * 256 * 2;
    EXPECT_TRUE(sawCollective);
  }
  // The scheduler charges the collective what the simulator does.
  for (size_t i = 0; i < compiled[0].program.size(); ++i)
    if (compiled[0].program[i].opcode == Opcode::AllGather) {
      EXPECT_NEAR(compiled[0].timing[i].endNs - compiled[0].timing[i].startNs,
                  costCollectiveNs(profile, Collective::AllGather, 128 * 256 * 2, 2), 1e-6);
    }
}

TEST(TileCollective, AllReduceChecksItsOperands) {
  MachineProfile profile = loadTestProfile("nc-v2");
  KernelBuilder b("reduce", profile);
  TileView ints = b.sbuf("ints", DType::I32, 128, {8});
  b.allReduce(ints, AluOp::Add, 2);
  Expected<Kernel> kernel = b.finish();
  ASSERT_FALSE(kernel.ok());
  EXPECT_NE(kernel.diag().message.find("op #0 (allReduce): dst dtype i32 is not f32 or bf16"), std::string::npos)
      << kernel.diag().message;

  KernelBuilder odd("gather", profile);
  odd.allGather(odd.sbuf("t", DType::F32, 96, {8}), 5);
  kernel = odd.finish();
  ASSERT_FALSE(kernel.ok());
  EXPECT_NE(kernel.diag().message.find("96 partitions, which do not split into 5 equal parts"), std::string::npos)
      << kernel.diag().message;
}

}  // namespace
}  // namespace tessel::nc::tile
