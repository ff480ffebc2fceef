// Spilling (spill.h): kernels whose live tiles exceed SBUF or PSUM compile, run in the functional
// simulator without races and match a direct computation bit for bit; the victim is the tile used
// again the latest; an op whose own operands exceed SBUF stays an error with the shortfall and the
// tiles; the policy function itself.
#include "targets/nc/tile/spill.h"

#include <cstring>
#include <vector>

#include <gtest/gtest.h>

#include "support/float_types.h"
#include "targets/nc/sim/simulator.h"
#include "test_util.h"

namespace tessel::nc::tile {
namespace {

/// Deterministic values: small integers in bf16 and f32 (exact sums and products), or any f32.
std::vector<float> values(size_t count, uint32_t seed, bool smallIntegers) {
  std::vector<float> out(count);
  uint32_t state = seed;
  for (float &v : out) {
    state = state * 1664525u + 1013904223u;
    v = smallIntegers ? static_cast<float>(static_cast<int>(state >> 28) - 8)
                      : static_cast<float>(state >> 8) / static_cast<float>(1u << 20) - 8.0f;
  }
  return out;
}

void writeHbm(MachineState &state, const HbmPlacement &tensor, const std::vector<float> &data) {
  std::vector<uint8_t> bytes;
  if (tensor.dtype == DType::BF16) {
    bytes.resize(data.size() * 2);
    for (size_t i = 0; i < data.size(); ++i) {
      uint16_t bits = BFloat16(data[i]).bits;
      std::memcpy(&bytes[i * 2], &bits, 2);
    }
  } else {
    ASSERT_EQ(tensor.dtype, DType::F32);
    bytes.resize(data.size() * 4);
    std::memcpy(bytes.data(), data.data(), bytes.size());
  }
  ASSERT_TRUE(state.writeHbm(tensor.offsetBytes, bytes).ok());
}

std::vector<float> readF32(const MachineState &state, const HbmPlacement &tensor, size_t count) {
  std::vector<uint8_t> bytes(count * 4);
  EXPECT_TRUE(state.readHbm(tensor.offsetBytes, bytes).ok());
  std::vector<float> out(count);
  std::memcpy(out.data(), bytes.data(), bytes.size());
  return out;
}

/// Compiles and runs `kernel` on `inputs` (in declaration order), checking for races; returns the
/// first output.
std::vector<float> runKernel(const Kernel &kernel, const MachineProfile &profile, const CompiledKernel &compiled,
                             const std::vector<std::vector<float>> &inputs, size_t outputCount) {
  MachineState state(profile, compiled.hbmBytes);
  for (size_t i = 0; i < inputs.size(); ++i) writeHbm(state, compiled.hbmTensors[i], inputs[i]);
  SimulateOptions options;
  options.detectRaces = true;
  Expected<SimulationResult> result = simulate(compiled.program, profile, &state, options);
  EXPECT_TRUE(result.ok()) << result.diag().str();
  if (!result.ok()) return {};
  EXPECT_TRUE(result->races.empty()) << result->races.front().message;
  return readF32(state, compiled.hbmTensors[kernel.tensors.size() - 1], outputCount);
}

TEST(Spill, LiveDataBeyondSbufGoesToHbmAndComesBackExact) {
  MachineProfile profile = loadTestProfile("nc-v2");
  profile.sbuf.bytesPerPartition = kSpillTestSbufBytes;
  const int64_t n = 6, cols = 256;
  Kernel kernel =
      buildKernel("mirrored", profile, [&](KernelBuilder &b) { mirroredSumKernel(b, n, /*doubled=*/true); });
  // As written it does not fit: placement alone fails.
  EXPECT_FALSE(allocateTiles(kernel, profile).ok());
  Expected<CompiledKernel> compiled = compileKernel(kernel, profile);
  ASSERT_TRUE(compiled.ok()) << compiled.diag().str();
  ASSERT_FALSE(compiled->spills.empty());
  EXPECT_LE(compiled->peakSbufBytesPerPartition, static_cast<uint64_t>(kSpillTestSbufBytes));
  for (const Spill &spill : compiled->spills) {
    EXPECT_EQ(spill.from, MemSpace::SBUF);
    EXPECT_EQ(spill.to, MemSpace::HBM);
    EXPECT_FALSE(spill.reloaded);  // Doubled in place: no longer a copy of x.
    EXPECT_TRUE(compiled->hbmTensors[static_cast<size_t>(spill.holder)].isScratch);
  }
  // The first victim, when block x4 (op 8) finds no room beside x0..x3: x2 and x3 are used again
  // the latest (both by the third sum); the lower id goes, saved after its doubling (op 5).
  EXPECT_EQ(compiled->spills.front().tile, 2);
  EXPECT_EQ(compiled->spills.front().pressureOp, 8);
  EXPECT_EQ(compiled->spills.front().saveAfterOp, 5);

  const std::vector<float> x = values(static_cast<size_t>(n * 128 * cols), 7, /*smallIntegers=*/false);
  const std::vector<float> out = runKernel(kernel, profile, *compiled, {x}, x.size());
  ASSERT_EQ(out.size(), x.size());
  const size_t block = 128 * cols;
  for (int64_t i = 0; i < n; ++i)
    for (size_t e = 0; e < block; ++e)
      ASSERT_EQ(out[i * block + e], (x[i * block + e] + x[i * block + e]) +
                                        (x[(n - 1 - i) * block + e] + x[(n - 1 - i) * block + e]))
          << "block " << i << " element " << e;
}

TEST(Spill, AnUnchangedInputTileIsLoadedAgainInsteadOfSaved) {
  MachineProfile profile = loadTestProfile("nc-v2");
  profile.sbuf.bytesPerPartition = kSpillTestSbufBytes;
  const int64_t n = 6, cols = 256;
  Kernel kernel = buildKernel("mirrored", profile, [&](KernelBuilder &b) { mirroredSumKernel(b, n); });
  Expected<CompiledKernel> compiled = compileKernel(kernel, profile);
  ASSERT_TRUE(compiled.ok()) << compiled.diag().str();
  ASSERT_FALSE(compiled->spills.empty());
  EXPECT_LE(compiled->peakSbufBytesPerPartition, static_cast<uint64_t>(kSpillTestSbufBytes));
  size_t dmas = 0;
  for (const Instruction &insn : compiled->program) dmas += insn.engine == Engine::DMA;
  for (const Spill &spill : compiled->spills) {
    EXPECT_TRUE(spill.reloaded);
    EXPECT_EQ(spill.saveAfterOp, -1);
    EXPECT_EQ(spill.holderName, "x");
  }
  for (const HbmPlacement &tensor : compiled->hbmTensors) EXPECT_FALSE(tensor.isScratch) << tensor.name;
  // n loads, n stores and one load per spill: no saves.
  EXPECT_EQ(dmas, static_cast<size_t>(2 * n) + compiled->spills.size());

  const std::vector<float> x = values(static_cast<size_t>(n * 128 * cols), 7, /*smallIntegers=*/false);
  const std::vector<float> out = runKernel(kernel, profile, *compiled, {x}, x.size());
  ASSERT_EQ(out.size(), x.size());
  const size_t block = 128 * cols;
  for (int64_t i = 0; i < n; ++i)
    for (size_t e = 0; e < block; ++e)
      ASSERT_EQ(out[i * block + e], x[i * block + e] + x[(n - 1 - i) * block + e]) << "block " << i << " element " << e;
}

TEST(Spill, LiveDataBeyondPsumIsEvictedToSbufAndComesBackExact) {
  MachineProfile profile = loadTestProfile("nc-v2");
  const int64_t n = 9, k = 32, m = 32, cols = 512;
  Kernel kernel = buildKernel("accumulators", profile, [&](KernelBuilder &b) { manyAccumulatorsKernel(b, n); });
  Expected<CompiledKernel> compiled = compileKernel(kernel, profile);
  ASSERT_TRUE(compiled.ok()) << compiled.diag().str();
  ASSERT_EQ(compiled->spills.size(), 1u);
  const Spill &spill = compiled->spills.front();
  EXPECT_EQ(spill.from, MemSpace::PSUM);
  EXPECT_EQ(spill.to, MemSpace::SBUF);
  // acc7 is copied out last of the eight live when acc8 needs a bank.
  EXPECT_EQ(kernel.tiles[static_cast<size_t>(spill.tile)].name, "acc7");

  const std::vector<float> st = values(static_cast<size_t>(k * m), 11, true);
  const std::vector<float> rhs = values(static_cast<size_t>(k * n * cols), 12, true);
  const std::vector<float> out = runKernel(kernel, profile, *compiled, {st, rhs}, static_cast<size_t>(m * n * cols));
  ASSERT_EQ(out.size(), static_cast<size_t>(m * n * cols));
  for (int64_t row = 0; row < m; ++row) {
    for (int64_t col = 0; col < n * cols; ++col) {
      float want = 0;  // Small integers: every partial sum is exact in fp32.
      for (int64_t kk = 0; kk < k; ++kk) want += st[kk * m + row] * rhs[kk * n * cols + col];
      ASSERT_EQ(out[row * n * cols + col], want) << row << "," << col;
    }
  }
}

TEST(Spill, OneOpWhoseOperandsExceedSbufIsAnError) {
  MachineProfile profile = loadTestProfile("nc-v2");
  profile.sbuf.bytesPerPartition = kSpillTestSbufBytes;
  Kernel kernel = buildKernel("wide", profile, [](KernelBuilder &b) {
    TileView a = b.sbuf("a", DType::F32, 128, {512});  // 2 KiB each: three of them are 6 KiB.
    TileView c = b.sbuf("b", DType::F32, 128, {512});
    TileView sum = b.sbuf("sum", DType::F32, 128, {512});
    b.memset(a, 1.0f);
    b.memset(c, 2.0f);
    b.tensorTensor(sum, a, c, AluOp::Add);
  });
  Expected<CompiledKernel> compiled = compileKernel(kernel, profile);
  ASSERT_FALSE(compiled.ok());
  EXPECT_EQ(compiled.diag().message,
            "kernel 'wide': op #2 (tensorTensor) does not fit SBUF: its operands alone take 6144 of 4096 bytes per "
            "partition (short by 2048); live: 'sum' 2048, 'a' 2048, 'b' 2048");
}

TEST(Spill, VictimIsTheCandidateUsedAgainTheLatest) {
  EXPECT_EQ(chooseSpillVictim({}), -1);
  EXPECT_EQ(chooseSpillVictim({{0, 5, 64}, {1, 9, 64}, {2, 7, 4096}}), 1);
  // Ties on the next use: the larger frees more; then the lower id.
  EXPECT_EQ(chooseSpillVictim({{3, 9, 64}, {1, 9, 128}}), 1);
  EXPECT_EQ(chooseSpillVictim({{3, 9, 64}, {1, 9, 64}}), 1);
}

}  // namespace
}  // namespace tessel::nc::tile
