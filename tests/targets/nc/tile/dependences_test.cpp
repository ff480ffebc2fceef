// Dependence analysis on placed kernels: RAW/WAR/WAW between ops on overlapping bytes, none between
// disjoint slices of one tile or disjoint blocks of an HBM tensor, and reuse of a dead tile's bytes.
#include "targets/nc/tile/dependences.h"

#include <algorithm>

#include <gtest/gtest.h>

#include "targets/nc/tile/emit.h"
#include "test_util.h"

namespace tessel::nc::tile {
namespace {

/// The dependences of `kernel` as text: one "#consumer <- #producer KIND" per edge.
std::string dependencesOf(const Kernel &kernel, const MachineProfile &profile) {
  Expected<Allocation> allocation = allocateTiles(kernel, profile);
  EXPECT_TRUE(allocation.ok()) << allocation.diag().str();
  if (!allocation.ok()) return "";
  uint64_t hbmBytes = 0;
  std::vector<HbmPlacement> hbm = layoutHbm(kernel, &hbmBytes);
  std::vector<Instruction> insns;
  for (const TileOp &op : kernel.ops) insns.push_back(emitOp(op, *allocation, hbm));
  DependenceGraph graph = computeDependences(kernel, insns, *allocation);
  std::string text;
  for (size_t i = 0; i < graph.preds.size(); ++i) {
    std::vector<Dependence> preds = graph.preds[i];
    std::sort(preds.begin(), preds.end(), [](const Dependence &a, const Dependence &b) { return a.producer < b.producer; });
    for (const Dependence &dep : preds)
      text += "#" + std::to_string(i) + " <- #" + std::to_string(dep.producer) + " " +
              std::string(dependenceKindName(dep.kind)) + "\n";
  }
  return text;
}

TEST(Dependences, RawWarWaw) {
  MachineProfile profile = loadTestProfile("nc-v2");
  Kernel kernel = buildKernel("kinds", profile, [](KernelBuilder &b) {
    HbmView x = b.input("x", DType::F32, {128, 64});
    HbmView out = b.output("out", DType::F32, {128, 64});
    TileView t = b.sbuf("t", DType::F32, 128, {64});
    TileView u = b.sbuf("u", DType::F32, 128, {64});
    b.load(t, x);                                        // #0
    b.copy(u, t);                                        // #1
    b.memset(t, 2.0f);                                   // #2
    b.tensorTensor(u, u, t, AluOp::Add);                 // #3
    b.store(out, u);                                     // #4
  });
  EXPECT_EQ(dependencesOf(kernel, profile),
            "#1 <- #0 RAW\n"
            "#2 <- #0 WAW\n"
            "#2 <- #1 WAR\n"
            "#3 <- #1 WAW\n"
            "#3 <- #2 RAW\n"
            "#4 <- #3 RAW\n");
}

TEST(Dependences, CollectivesKeepTheirRecordedOrder) {
  // Two collectives on unrelated tiles: every core's k-th collective must be the same one, so the
  // second waits for the first whatever the scheduler would prefer.
  MachineProfile profile = loadTestProfile("nc-v2");
  Kernel kernel = buildKernel("collectives", profile, [](KernelBuilder &b) {
    TileView t = b.sbuf("t", DType::F32, 128, {64});
    TileView u = b.sbuf("u", DType::F32, 128, {64});
    HbmView out = b.output("out", DType::F32, {128, 128});
    b.memset(t, 1.0f);                    // #0
    b.memset(u, 2.0f);                    // #1
    b.allReduce(t, AluOp::Add, 2);        // #2
    b.allGather(u, 2);                    // #3
    b.store(out.pattern(0, {FreeDim{128, 128}, FreeDim{1, 64}}), t);   // #4
    b.store(out.pattern(64, {FreeDim{128, 128}, FreeDim{1, 64}}), u);  // #5
  });
  EXPECT_EQ(dependencesOf(kernel, profile),
            "#2 <- #0 RAW\n"
            "#3 <- #1 RAW\n"
            "#3 <- #2 order\n"
            "#4 <- #2 RAW\n"
            "#5 <- #3 RAW\n");
}

TEST(Dependences, DisjointSlicesAndBlocksAreIndependent) {
  MachineProfile profile = loadTestProfile("nc-v2");
  Kernel kernel = buildKernel("slices", profile, [](KernelBuilder &b) {
    HbmView x = b.input("x", DType::F32, {128, 256});
    HbmView out = b.output("out", DType::F32, {256, 256});
    TileView t = b.sbuf("t", DType::F32, 128, {256});
    b.load(t.cols(0, 128), x.cols(0, 128));              // #0
    b.load(t.cols(128, 128), x.cols(128, 128));          // #1: other half, no dependence.
    b.store(out.rows(0, 128).cols(0, 128), t.cols(0, 128));     // #2 RAW on #0 only.
    b.store(out.rows(0, 128).cols(128, 128), t.cols(128, 128)); // #3 RAW on #1; disjoint HBM columns.
    b.store(out.rows(128, 128), t);                      // #4 RAW on both; rows disjoint from #2/#3.
    b.memset(t.partitionSlice(64, 64), 0.0f);            // #5 WAR on #2, #3, #4 (partitions 64..127).
    b.store(out.rows(0, 128), t);                        // #6 RAW on #5 (and #0, #1), WAW on #2, #3.
  });
  EXPECT_EQ(dependencesOf(kernel, profile),
            "#2 <- #0 RAW\n"
            "#3 <- #1 RAW\n"
            "#4 <- #0 RAW\n"
            "#4 <- #1 RAW\n"
            "#5 <- #0 WAW\n"
            "#5 <- #1 WAW\n"
            "#5 <- #2 WAR\n"
            "#5 <- #3 WAR\n"
            "#5 <- #4 WAR\n"
            "#6 <- #0 RAW\n"
            "#6 <- #1 RAW\n"
            "#6 <- #2 WAW\n"
            "#6 <- #3 WAW\n"
            "#6 <- #5 RAW\n");
}

TEST(Dependences, ReusedBytesWaitForTheDeadTile) {
  MachineProfile profile = loadTestProfile("nc-v2");
  // Two 80 KiB tiles alternate; the third iteration's load reuses the first tile's bytes.
  Kernel kernel = buildKernel("reuse", profile, [](KernelBuilder &b) {
    HbmView x = b.input("x", DType::F32, {384, 20480});
    HbmView out = b.output("out", DType::F32, {384, 20480});
    for (int i = 0; i < 3; ++i) {
      TileView t = b.sbuf("t", DType::F32, 128, {20480});
      b.load(t, x.rows(i * 128, 128));
      b.store(out.rows(i * 128, 128), t);
    }
  });
  EXPECT_EQ(dependencesOf(kernel, profile),
            "#1 <- #0 RAW\n"
            "#3 <- #2 RAW\n"
            "#4 <- #0 WAW\n"
            "#4 <- #1 WAR\n"
            "#5 <- #4 RAW\n");
}

TEST(Dependences, AccumulatingMatmulsChain) {
  MachineProfile profile = loadTestProfile("nc-v2");
  Kernel kernel = buildKernel("acc", profile, [](KernelBuilder &b) {
    TileView st = b.sbuf("st", DType::BF16, 128, {128});
    TileView acc = b.psum("acc", DType::F32, 128, {128});
    b.memset(st, 1.0f);                  // #0
    b.matmul(acc, st, st, false);        // #1
    b.matmul(acc, st, st, true);         // #2
    b.matmul(acc, st, st, true);         // #3
  });
  EXPECT_EQ(dependencesOf(kernel, profile),
            "#1 <- #0 RAW\n"
            "#2 <- #0 RAW\n"
            "#2 <- #1 RAW\n"
            "#3 <- #0 RAW\n"
            "#3 <- #2 RAW\n");
}

}  // namespace
}  // namespace tessel::nc::tile
