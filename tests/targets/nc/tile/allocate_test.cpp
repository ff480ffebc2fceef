// SBUF/PSUM allocation: live ranges, least-recently-freed reuse (loop iterations alternate buffers,
// judged over the whole block), the largest-first fallback against fragmentation, alignment, the
// PSUM bank rule, and the "does not fit" error with the shortfall and the live tiles.
#include "targets/nc/tile/allocate.h"

#include <gtest/gtest.h>

#include "test_util.h"

namespace tessel::nc::tile {
namespace {

Allocation allocateOrDie(const Kernel &kernel, const MachineProfile &profile) {
  Expected<Allocation> allocation = allocateTiles(kernel, profile);
  EXPECT_TRUE(allocation.ok()) << allocation.diag().str();
  return allocation.ok() ? *allocation : Allocation{};
}

/// A loop of load-then-store through a fresh tile of `elements` f32 per partition each iteration.
Kernel copyLoop(const MachineProfile &profile, int64_t elements, int iterations) {
  return buildKernel("loop", profile, [&](KernelBuilder &b) {
    HbmView x = b.input("x", DType::F32, {iterations * 128, elements});
    HbmView out = b.output("out", DType::F32, {iterations * 128, elements});
    for (int i = 0; i < iterations; ++i) {
      TileView t = b.sbuf("t", DType::F32, 128, {elements});
      b.load(t, x.rows(i * 128, 128));
      b.store(out.rows(i * 128, 128), t);
    }
  });
}

TEST(Allocate, LoopTilesAlternateBetweenTwoBuffersWhenTwoFit) {
  MachineProfile profile = loadTestProfile("nc-v2");
  // 80 KiB per partition: two fit the 192 KiB SBUF, three do not.
  Allocation allocation = allocateOrDie(copyLoop(profile, 20480, 5), profile);
  std::vector<uint64_t> offsets;
  for (const TilePlacement &tile : allocation.tiles) offsets.push_back(tile.offsetBytes);
  EXPECT_EQ(offsets, (std::vector<uint64_t>{0, 81920, 0, 81920, 0}));
  EXPECT_EQ(allocation.tiles[2].firstOp, 4);
  EXPECT_EQ(allocation.tiles[2].lastOp, 5);
  EXPECT_EQ(allocation.predecessors[2], (std::vector<int32_t>{0}));
  EXPECT_EQ(allocation.peakSbufBytesPerPartition, 81920u);
}

TEST(Allocate, ConsecutiveIterationsUseDifferentBuffers) {
  MachineProfile profile = loadTestProfile("nc-v2");
  Allocation allocation = allocateOrDie(copyLoop(profile, 256, 8), profile);
  for (size_t i = 1; i < allocation.tiles.size(); ++i)
    EXPECT_NE(allocation.tiles[i].offsetBytes, allocation.tiles[i - 1].offsetBytes) << i;
}

TEST(Allocate, AlignsSmallAndLargeTiles) {
  MachineProfile profile = loadTestProfile("nc-v2");
  Kernel kernel = buildKernel("align", profile, [](KernelBuilder &b) {
    TileView a = b.sbuf("a", DType::BF16, 128, {3});      // 6 bytes -> 8 (4-byte alignment).
    TileView c = b.sbuf("c", DType::BF16, 128, {300});    // 600 bytes -> 64-byte aligned.
    TileView d = b.sbuf("d", DType::F32, 128, {1});
    b.memset(a, 0.0f);
    b.memset(c, 0.0f);
    b.memset(d, 0.0f);
    b.copy(d, a.cols(0, 1));
    b.copy(c.cols(0, 1), d);
  });
  Allocation allocation = allocateOrDie(kernel, profile);
  EXPECT_EQ(allocation.tiles[0].offsetBytes, 0u);
  EXPECT_EQ(allocation.tiles[0].bytesPerPartition, 8u);
  EXPECT_EQ(allocation.tiles[1].offsetBytes, 64u);
  EXPECT_EQ(allocation.tiles[1].bytesPerPartition, 640u);
  // The 4-byte tile fills the alignment gap before c rather than going past it.
  EXPECT_EQ(allocation.tiles[2].offsetBytes, 8u);
}

TEST(Allocate, TooLargeSaysByHowMuch) {
  MachineProfile profile = loadTestProfile("nc-v2");
  Kernel kernel = buildKernel("big", profile, [](KernelBuilder &b) {
    TileView a = b.sbuf("a", DType::F32, 128, {25600});   // 100 KiB.
    TileView c = b.sbuf("c", DType::F32, 128, {25600});   // Another 100 KiB while a is live.
    b.memset(a, 0.0f);
    b.memset(c, 0.0f);
    b.copy(c, a);
  });
  Expected<Allocation> allocation = allocateTiles(kernel, profile);
  ASSERT_FALSE(allocation.ok());
  EXPECT_EQ(allocation.diag().message,
            "kernel 'big': tile 'c' (102400 bytes per partition) does not fit SBUF: the 2 tiles live at op #1 take "
            "204800 of 196608 bytes (short by 8192); live: 'a' 102400, 'c' 102400");
  // compileKernel would spill 'a' across op #1, but op #2 needs both: its operands alone do not fit.
  Expected<CompiledKernel> compiled = compileKernel(kernel, profile);
  ASSERT_FALSE(compiled.ok());
  EXPECT_EQ(compiled.diag().message,
            "kernel 'big': op #2 (copy) does not fit SBUF: its operands alone take 204800 of 196608 bytes per "
            "partition (short by 8192); live: 'c' 102400, 'a' 102400");
}

TEST(Allocate, PsumTilesStayInsideOneBank) {
  MachineProfile profile = loadTestProfile("nc-v2");
  Kernel kernel = buildKernel("banks", profile, [](KernelBuilder &b) {
    TileView st = b.sbuf("st", DType::BF16, 128, {128});
    TileView mv = b.sbuf("mv", DType::BF16, 128, {384});
    b.memset(st, 1.0f);
    b.memset(mv, 1.0f);
    TileView p0 = b.psum("p0", DType::F32, 128, {384});  // 1536 bytes at 0.
    TileView p1 = b.psum("p1", DType::F32, 128, {384});  // At 1536 it would cross the 2 KiB boundary.
    TileView p2 = b.psum("p2", DType::F32, 128, {128});  // 512 bytes: the rest of bank 0.
    b.matmul(p0, st, mv, false);
    b.matmul(p1, st, mv, false);
    b.matmul(p2, st, mv.cols(0, 128), false);
    for (TileView p : {p0, p1, p2}) b.copy(b.sbuf("o", DType::F32, 128, p.freeShape()), p);
  });
  Allocation allocation = allocateOrDie(kernel, profile);
  EXPECT_EQ(allocation.tiles[2].offsetBytes, 0u);
  EXPECT_EQ(allocation.tiles[3].offsetBytes, 2048u);
  EXPECT_EQ(allocation.tiles[4].offsetBytes, 1536u);
  EXPECT_EQ(allocation.peakPsumBytesPerPartition, 1536u + 1536u + 512u);
}

TEST(Allocate, PsumTileLargerThanABankIsRejected) {
  MachineProfile profile = loadTestProfile("nc-v2");
  KernelBuilder b("wide", profile);
  b.psum("acc", DType::F32, 128, {1024});
  Expected<Kernel> kernel = b.finish();
  ASSERT_FALSE(kernel.ok());
  EXPECT_EQ(kernel.diag().message,
            "kernel 'wide': tile 'acc': 4096 bytes per partition in PSUM; a PSUM tile must fit one 2048-byte bank (T2)");
}

}  // namespace
}  // namespace tessel::nc::tile
