// Prefetch gates (tile/prefetch.h): a load whose reader comes long after the kernel starts waits for
// an op that ends shortly before it is needed; a load the first ops read does not wait. The gated
// program still runs in the time the scheduler expects.
#include <gtest/gtest.h>

#include "test_util.h"

namespace tessel::nc::tile {
namespace {

/// `early` [128, 32] (into a tile zeroed first, so that the load waits for the memset) is read by the
/// first op; then `chain` dependent DVE passes over [128, 2048] bf16 (about 1.8 us each on nc-v2); then
/// `late` [128, 16384] bf16 (4 MiB, about 15 us of DMA) is loaded and read. Nothing orders `late` after
/// the rest: loaded at once, it holds the DMA engines while the chain waits for `early`.
void lateWeightKernel(KernelBuilder &b, int chain) {
  HbmView early = b.input("early", DType::BF16, {128, 32});
  HbmView late = b.input("late", DType::BF16, {128, 16384});
  HbmView out = b.output("out", DType::BF16, {128, 64});
  TileView e = b.sbuf("e", DType::BF16, 128, {64});
  b.memset(e, 0.0f, Engine::DVE);
  b.load(e.cols(0, 32), early);
  TileView x = b.sbuf("x", DType::BF16, 128, {2048});
  b.memset(x, 1.0f, Engine::POOL);
  b.tensorTensor(x.cols(0, 64), x.cols(0, 64), e, AluOp::Add, Engine::DVE);
  for (int i = 0; i < chain; ++i) b.tensorScalar(x, x, AluOp::Multiply, 0.5f, AluOp::None, 0.0f, Engine::DVE);
  TileView l = b.sbuf("l", DType::BF16, 128, {16384});
  b.load(l, late);
  TileView r = b.sbuf("r", DType::BF16, 128, {64});
  b.tensorTensor(r, x.cols(0, 64), l.cols(0, 64), AluOp::Add, Engine::DVE);
  b.store(out, r);
}

/// The waits of the load into a tile of `columns` columns.
std::vector<SemaphoreWait> loadWaits(const CompiledKernel &compiled, uint64_t columns) {
  for (const Instruction &insn : compiled.program)
    if (insn.opcode == Opcode::DmaCopy && insn.operands[0]->space == MemSpace::SBUF &&
        freeSizeElements(*insn.operands[0]) == columns)
      return insn.waits;
  ADD_FAILURE() << "no load into " << columns << " columns";
  return {};
}

TEST(Prefetch, ALoadReadLongAfterTheStartWaitsForItsPrefetchPoint) {
  const MachineProfile profile = loadTestProfile("nc-v2");
  Kernel kernel = buildKernel("late_weight", profile, [](KernelBuilder &b) { lateWeightKernel(b, 48); });
  Expected<CompiledKernel> gated = compileKernel(kernel, profile);
  ASSERT_TRUE(gated.ok()) << gated.diag().str();
  CompileOptions options;
  options.prefetchGates = false;
  Expected<CompiledKernel> ungated = compileKernel(kernel, profile, options);
  ASSERT_TRUE(ungated.ok()) << ungated.diag().str();
  EXPECT_EQ(loadWaits(*gated, 16384).size(), 1u);
  EXPECT_TRUE(loadWaits(*ungated, 16384).empty());
  // The chain no longer waits for the 15 us of `late`, in the scheduler and in the simulator.
  const double simulated = simulatedNs(*gated, profile);
  EXPECT_LT(simulated + 10000, simulatedNs(*ungated, profile));
  EXPECT_NEAR(gated->estimatedNs / simulated, 1.0, 0.02)
      << "estimate " << gated->estimatedNs << " ns, simulated " << simulated << " ns";
}

TEST(Prefetch, ALoadNeededSoonStartsAtOnce) {
  const MachineProfile profile = loadTestProfile("nc-v2");
  Kernel kernel = buildKernel("soon_weight", profile, [](KernelBuilder &b) { lateWeightKernel(b, 1); });
  Expected<CompiledKernel> compiled = compileKernel(kernel, profile);
  ASSERT_TRUE(compiled.ok()) << compiled.diag().str();
  EXPECT_TRUE(loadWaits(*compiled, 16384).empty());
}

}  // namespace
}  // namespace tessel::nc::tile
