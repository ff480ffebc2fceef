// Multi-buffering through the allocator's reuse policy, end to end: independent load -> op -> store
// chains keep the DMA engines busy in the simulator, consecutive iterations of a loop are never
// ordered through a reused buffer (on the dependence graph), and live tiles that fit by bytes are
// placed even where the online pass fragments.
#include <algorithm>
#include <vector>

#include <gtest/gtest.h>

#include "targets/nc/sim/simulator.h"
#include "targets/nc/tile/allocate.h"
#include "targets/nc/tile/dependences.h"
#include "targets/nc/tile/emit.h"
#include "test_util.h"

namespace tessel::nc::tile {
namespace {

/// `chains` independent chains, each: load a [P, cols] bf16 block, exponentiate it on ACT with the
/// row sums accumulated into a [P, 1] tile, transpose the first [P, P] block on PE, evict the
/// transpose, and store the block, the transpose and the sums. The [P, 1] sums leave alignment gaps
/// before the large buffers, as the reductions of real kernels do: an old gap next to the buffer the
/// previous chain just freed is what reuse oldest-first by start reached for. Returns, per op, its
/// chain.
std::vector<int> chainKernel(KernelBuilder &b, int chains, int64_t cols) {
  const int64_t p = b.profile().partitions;
  HbmView x = b.input("x", DType::BF16, {chains * p, cols});
  HbmView y = b.output("y", DType::BF16, {chains * p, cols});
  HbmView yT = b.output("y_t", DType::BF16, {chains * p, p});
  HbmView sums = b.output("sums", DType::F32, {chains * p, 1});
  std::vector<int> chainOfOp;
  auto mark = [&](int chain) { chainOfOp.resize(b.kernel().ops.size(), chain); };
  for (int c = 0; c < chains; ++c) {
    TileView in = b.sbuf("in", DType::BF16, p, {cols});
    b.load(in, x.rows(c * p, p));
    TileView sum = b.sbuf("sum", DType::F32, p, {1});
    TileView out = b.sbuf("out", DType::BF16, p, {cols});
    ActivationArgs args;
    args.accum = sum;
    b.activation(out, in, ActFunc::Exp, args);
    TileView ps = b.psum("t_ps", DType::BF16, p, {p});
    b.transpose(ps, out.cols(0, p));
    TileView t = b.sbuf("t", DType::BF16, p, {p});
    b.copy(t, ps, Engine::DVE);
    b.store(y.rows(c * p, p), out);
    b.store(yT.rows(c * p, p), t);
    b.store(sums.rows(c * p, p), sum);
    mark(c);
  }
  return chainOfOp;
}

/// Time with at least one DMA transfer in flight over the simulated total.
double dmaBusyFraction(const Timeline &timeline) {
  std::vector<std::pair<double, double>> intervals;
  for (const TimelineEvent &event : timeline.events)
    if (event.track.rfind("DMA", 0) == 0) intervals.emplace_back(event.startNs, event.endNs);
  std::sort(intervals.begin(), intervals.end());
  double busy = 0, end = 0;
  for (const auto &[start, stop] : intervals) {
    if (stop <= end) continue;
    busy += stop - std::max(start, end);
    end = stop;
  }
  return timeline.totalNs > 0 ? busy / timeline.totalNs : 0;
}

class MultiBufferTest : public ::testing::TestWithParam<std::string> {};

// Enough chains that SBUF wraps around many times: each chain's buffers must go where the chains
// still running are not, or the next chain waits for the last one and DMA idles.
TEST_P(MultiBufferTest, IndependentChainsKeepTheDmaEnginesBusy) {
  MachineProfile profile = loadTestProfile(GetParam());
  Kernel kernel = buildKernel("chains", profile, [](KernelBuilder &b) { chainKernel(b, 300, 2048); });
  Expected<CompiledKernel> compiled = compileKernel(kernel, profile);
  ASSERT_TRUE(compiled.ok()) << compiled.diag().str();
  SimulateOptions options;
  options.timingOnly = true;
  Expected<SimulationResult> result = simulate(compiled->program, profile, nullptr, options);
  ASSERT_TRUE(result.ok()) << result.diag().str();
  EXPECT_TRUE(result->races.empty());
  EXPECT_GE(dmaBusyFraction(result->timeline), 0.9);
}

// No op of chain i + 1 depends on an op of chain i: the chains share no data, so an edge between
// them can only come from chain i + 1 reusing a buffer chain i just freed.
TEST_P(MultiBufferTest, ConsecutiveIterationsAreNotOrderedThroughAReusedBuffer) {
  MachineProfile profile = loadTestProfile(GetParam());
  std::vector<int> chainOfOp;
  Kernel kernel = buildKernel("chains", profile, [&](KernelBuilder &b) { chainOfOp = chainKernel(b, 300, 2048); });
  Expected<Allocation> allocation = allocateTiles(kernel, profile);
  ASSERT_TRUE(allocation.ok()) << allocation.diag().str();
  uint64_t hbmBytes = 0;
  std::vector<HbmPlacement> hbm = layoutHbm(kernel, &hbmBytes);
  std::vector<Instruction> insns;
  for (const TileOp &op : kernel.ops) insns.push_back(emitOp(op, *allocation, hbm));
  DependenceGraph deps = computeDependences(kernel, insns, *allocation);
  int reuses = 0;
  for (size_t op = 0; op < deps.preds.size(); ++op) {
    for (const Dependence &dep : deps.preds[op]) {
      int from = chainOfOp[static_cast<size_t>(dep.producer)], to = chainOfOp[op];
      EXPECT_NE(to, from + 1) << "op #" << op << " (chain " << to << ") after op #" << dep.producer << " ("
                              << dependenceKindName(dep.kind) << ")";
      if (to != from) ++reuses;
    }
  }
  EXPECT_GT(reuses, 0) << "the kernel should wrap around SBUF";
}

INSTANTIATE_TEST_SUITE_P(Profiles, MultiBufferTest, ::testing::Values("nc-v2", "nc-v3"));

// A small old gap next to the buffer freed last is as fresh as that buffer: the next tile takes the
// block freed before it, whole.
TEST(ReusePolicy, JudgesTheWholeBlockByItsFreshestByte) {
  MachineProfile profile = loadTestProfile("nc-v2");
  const int64_t capacity = profile.sbuf.bytesPerPartition;
  Kernel kernel = buildKernel("gap", profile, [&](KernelBuilder &b) {
    TileView small = b.sbuf("small", DType::F32, 128, {1});            // [0, 4)
    TileView first = b.sbuf("first", DType::F32, 128, {4096});         // [64, 16448)
    TileView second = b.sbuf("second", DType::F32, 128, {4096});       // [16448, 32832)
    TileView rest = b.sbuf("rest", DType::F32, 128, {(capacity - 32832) / 4});
    b.memset(small, 0.0f);                                             // #0
    b.memset(first, 0.0f);                                             // #1
    b.memset(second, 0.0f);                                            // #2
    b.memset(rest, 0.0f);                                              // #3
    b.copy(small, small);                                              // #4: small freed first,
    b.copy(second, second);                                            // #5: then second,
    b.copy(first, first);                                              // #6: then first, last.
    TileView next = b.sbuf("next", DType::F32, 128, {4096});
    b.memset(next, 0.0f);
    b.copy(rest, rest);
  });
  Expected<Allocation> allocation = allocateTiles(kernel, profile);
  ASSERT_TRUE(allocation.ok()) << allocation.diag().str();
  EXPECT_EQ(allocation->tiles[1].offsetBytes, 64u);
  EXPECT_EQ(allocation->tiles[2].offsetBytes, 16448u);
  // [0, 16448) starts with the oldest bytes but ends with the freshest: `second` is older whole.
  EXPECT_EQ(allocation->tiles[4].offsetBytes, 16448u);
  EXPECT_EQ(allocation->predecessors[4], (std::vector<int32_t>{2}));
}

// 64 KiB tiles a, b, c fill SBUF; a and c die, leaving 128 KiB free in two holes around b, and a
// 128 KiB tile d comes while b lives. No placement in op order can give d a block, but 192 KiB live
// at most fits: placed offline, d takes [0, 128 KiB) and a and c share b's neighbourhood.
TEST(ReusePolicy, TilesThatFitByBytesArePlacedDespiteFragmentation) {
  MachineProfile profile = loadTestProfile("nc-v2");
  const int64_t third = profile.sbuf.bytesPerPartition / 3 / 4;  // f32 elements of 64 KiB.
  Kernel kernel = buildKernel("holes", profile, [&](KernelBuilder &b) {
    TileView a = b.sbuf("a", DType::F32, 128, {third});
    TileView bt = b.sbuf("b", DType::F32, 128, {third});
    TileView c = b.sbuf("c", DType::F32, 128, {third});
    b.memset(a, 0.0f);
    b.memset(bt, 0.0f);
    b.memset(c, 0.0f);
    b.copy(a, a);
    b.copy(c, c);
    TileView d = b.sbuf("d", DType::F32, 128, {2 * third});
    b.memset(d, 0.0f);
    b.copy(bt, d.cols(0, third));
  });
  Expected<Allocation> allocation = allocateTiles(kernel, profile);
  ASSERT_TRUE(allocation.ok()) << allocation.diag().str();
  EXPECT_EQ(allocation->policy, AllocationPolicy::LargestFirst);
  EXPECT_EQ(allocation->peakSbufBytesPerPartition, static_cast<uint64_t>(profile.sbuf.bytesPerPartition));
  // No two tiles live at the same time share a byte.
  const std::vector<TilePlacement> &tiles = allocation->tiles;
  for (size_t i = 0; i < tiles.size(); ++i)
    for (size_t j = i + 1; j < tiles.size(); ++j) {
      bool together = tiles[i].firstOp <= tiles[j].lastOp && tiles[j].firstOp <= tiles[i].lastOp;
      bool shared = tiles[i].offsetBytes < tiles[j].offsetBytes + tiles[j].bytesPerPartition &&
                    tiles[j].offsetBytes < tiles[i].offsetBytes + tiles[i].bytesPerPartition;
      EXPECT_FALSE(together && shared) << i << " and " << j;
    }
  // And the result still runs race-free.
  Expected<CompiledKernel> compiled = compileKernel(kernel, profile);
  ASSERT_TRUE(compiled.ok()) << compiled.diag().str();
  EXPECT_EQ(compiled->allocationPolicy, "largest-first");
}

// Placement alone (allocateTiles, no spilling) reports live data beyond SBUF: by how much, where, and
// which tiles.
TEST(ReusePolicy, LiveDataBeyondSbufNamesTheLiveTiles) {
  MachineProfile profile = loadTestProfile("nc-v2");
  const int64_t third = profile.sbuf.bytesPerPartition / 3 / 4;
  Kernel kernel = buildKernel("over", profile, [&](KernelBuilder &b) {
    TileView a = b.sbuf("a", DType::F32, 128, {third});
    TileView bt = b.sbuf("b", DType::F32, 128, {third});
    TileView c = b.sbuf("c", DType::F32, 128, {third + 1});
    b.memset(a, 0.0f);
    b.memset(bt, 0.0f);
    b.memset(c, 0.0f);
    b.copy(a, c.cols(0, third));
    b.copy(bt, bt);
  });
  Expected<Allocation> allocation = allocateTiles(kernel, profile);
  ASSERT_FALSE(allocation.ok());
  EXPECT_EQ(allocation.diag().message,
            "kernel 'over': tile 'c' (65600 bytes per partition) does not fit SBUF: the 3 tiles live at op #2 take "
            "196672 of 196608 bytes (short by 64); live: 'c' 65600, 'a' 65536, 'b' 65536");
}

}  // namespace
}  // namespace tessel::nc::tile
