// Golden `--print-allocation` text (printAllocation) for small kernels, one file per case under
// goldens/: a loop whose tiles reuse freed buffers (the reuse policy fires), one whose live tiles
// fit only when placed offline (the largest-first fallback fires), one with nothing to reuse
// (it must not fire), and live data beyond SBUF or PSUM that spills, beside one that just fits. Lines starting with '#' are the file's header. After a deliberate change,
// regenerate with
//   TESSEL_UPDATE_GOLDENS=1 build/bin/nc_tile_tests --gtest_filter='AllocationGolden.*'
// and read the diff.
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include <gtest/gtest.h>

#include "test_util.h"

namespace tessel::nc::tile {
namespace {

const char *kHeader =
    "# Golden printAllocation output of tests/targets/nc/tile/allocation_golden_test.cpp; regenerate with\n"
    "#   TESSEL_UPDATE_GOLDENS=1 build/bin/nc_tile_tests --gtest_filter='AllocationGolden.*'\n";

std::string goldenPath(const std::string &name) {
  return std::string(TESSEL_SOURCE_DIR) + "/tests/targets/nc/tile/goldens/" + name + ".txt";
}

/// The file without its '#' header lines.
std::string readGolden(const std::string &path) {
  std::ifstream in(path);
  std::string line, text;
  while (std::getline(in, line))
    if (line.empty() || line[0] != '#') text += line + "\n";
  return text;
}

void expectGolden(const std::string &name, const Kernel &kernel, const MachineProfile &profile) {
  Expected<CompiledKernel> compiled = compileKernel(kernel, profile);
  ASSERT_TRUE(compiled.ok()) << compiled.diag().str();
  const std::string text = printAllocation(kernel, *compiled);
  const std::string path = goldenPath(name);
  if (const char *update = std::getenv("TESSEL_UPDATE_GOLDENS"); update && std::string(update) == "1") {
    std::ofstream(path) << kHeader << text;
    return;
  }
  EXPECT_EQ(text, readGolden(path)) << "golden " << path;
}

// A loop of 64 KiB tiles, each with a [P, 1] sum; two fit the 192 KiB SBUF beside the sums. From the
// third iteration on each tile takes the buffer freed the longest ago ("reuses"), never the one the
// previous iteration just freed, and the sums fill the alignment gap.
TEST(AllocationGolden, LoopReusesTheBufferFreedLongestAgo) {
  MachineProfile profile = loadTestProfile("nc-v2");
  Kernel kernel = buildKernel("loop", profile, [](KernelBuilder &b) {
    const int64_t cols = 16384, iterations = 5;
    HbmView x = b.input("x", DType::F32, {iterations * 128, cols});
    HbmView out = b.output("out", DType::F32, {iterations * 128, 1});
    for (int64_t i = 0; i < iterations; ++i) {
      TileView t = b.sbuf("t", DType::F32, 128, {cols});
      TileView sum = b.sbuf("sum", DType::F32, 128, {1});
      b.load(t, x.rows(i * 128, 128));
      b.reduce(sum, t, AluOp::Add);
      b.store(out.rows(i * 128, 128), sum);
    }
  });
  expectGolden("allocation_reuse", kernel, profile);
}

// Live tiles that fit only when placed offline: the policy line says largest-first.
TEST(AllocationGolden, FragmentedTilesArePlacedLargestFirst) {
  MachineProfile profile = loadTestProfile("nc-v2");
  const int64_t third = profile.sbuf.bytesPerPartition / 3 / 4;
  Kernel kernel = buildKernel("holes", profile, [&](KernelBuilder &b) {
    TileView a = b.sbuf("a", DType::F32, 128, {third});
    TileView c = b.sbuf("b", DType::F32, 128, {third});
    TileView e = b.sbuf("c", DType::F32, 128, {third});
    b.memset(a, 0.0f);
    b.memset(c, 0.0f);
    b.memset(e, 0.0f);
    b.copy(a, a);
    b.copy(e, e);
    TileView d = b.sbuf("d", DType::F32, 128, {2 * third});
    b.memset(d, 0.0f);
    b.copy(c, d.cols(0, third));
  });
  expectGolden("allocation_fragmented", kernel, profile);
}

// Everything fits side by side: nothing is reused, no line says "reuses".
TEST(AllocationGolden, NothingToReuse) {
  MachineProfile profile = loadTestProfile("nc-v2");
  expectGolden("allocation_no_reuse", buildKernel("add", profile, addKernel), profile);
}

// Live data beyond SBUF spills (firing): six 1 KiB blocks live at once in a 4 KiB SBUF; the spill
// lines name each victim (the block used again the latest) and where it returns. The blocks are
// unchanged copies of the input, so each is loaded again from it rather than saved.
TEST(AllocationGolden, LiveDataBeyondSbufSpills) {
  MachineProfile profile = loadTestProfile("nc-v2");
  profile.sbuf.bytesPerPartition = kSpillTestSbufBytes;
  Kernel kernel = buildKernel("mirrored6", profile, [](KernelBuilder &b) { mirroredSumKernel(b, 6); });
  expectGolden("allocation_spill", kernel, profile);
}

// The same blocks doubled in place after loading are computed values: each victim is saved to an
// HBM scratch tensor and restored from it.
TEST(AllocationGolden, ComputedLiveDataBeyondSbufIsSaved) {
  MachineProfile profile = loadTestProfile("nc-v2");
  profile.sbuf.bytesPerPartition = kSpillTestSbufBytes;
  Kernel kernel = buildKernel("mirrored6_doubled", profile,
                              [](KernelBuilder &b) { mirroredSumKernel(b, 6, /*doubled=*/true); });
  expectGolden("allocation_spill_saved", kernel, profile);
}

// The same kernel with three blocks fills SBUF exactly: no spill (non-firing).
TEST(AllocationGolden, LiveDataThatJustFitsDoesNotSpill) {
  MachineProfile profile = loadTestProfile("nc-v2");
  profile.sbuf.bytesPerPartition = kSpillTestSbufBytes;
  Kernel kernel = buildKernel("mirrored3", profile, [](KernelBuilder &b) { mirroredSumKernel(b, 3); });
  expectGolden("allocation_spill_fits", kernel, profile);
}

// Nine PSUM results live at once in eight banks: one is evicted to SBUF and brought back.
TEST(AllocationGolden, LiveDataBeyondPsumEvictsToSbuf) {
  MachineProfile profile = loadTestProfile("nc-v2");
  Kernel kernel = buildKernel("accumulators9", profile, [](KernelBuilder &b) { manyAccumulatorsKernel(b, 9); });
  expectGolden("allocation_psum_spill", kernel, profile);
}

}  // namespace
}  // namespace tessel::nc::tile
