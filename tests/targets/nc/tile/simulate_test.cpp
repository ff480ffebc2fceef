// Compiled kernels run in the simulator (sim/simulator.h) on both profiles: the outputs match a
// direct float computation, the race detector finds nothing, DMA overlaps compute in a multi-tile
// kernel, and the scheduler's estimate is within 2x of the simulated time.
#include <algorithm>
#include <cmath>
#include <cstring>

#include <gtest/gtest.h>

#include "support/float_types.h"
#include "targets/nc/sim/simulator.h"
#include "test_util.h"

namespace tessel::nc::tile {
namespace {

/// Deterministic values in [-1, 1) rounded to bf16.
std::vector<float> bf16Values(size_t count, uint32_t seed) {
  std::vector<float> values(count);
  uint32_t state = seed;
  for (float &v : values) {
    state = state * 1664525u + 1013904223u;
    v = static_cast<float>(BFloat16(static_cast<float>(state >> 8) / static_cast<float>(1u << 23) - 1.0f));
  }
  return values;
}

void writeTensor(MachineState &state, const HbmPlacement &tensor, const std::vector<float> &values) {
  ASSERT_EQ(tensor.dtype, DType::BF16);
  std::vector<uint8_t> bytes(values.size() * 2);
  for (size_t i = 0; i < values.size(); ++i) {
    uint16_t bits = BFloat16(values[i]).bits;
    std::memcpy(&bytes[i * 2], &bits, 2);
  }
  ASSERT_TRUE(state.writeHbm(tensor.offsetBytes, bytes).ok());
}

std::vector<float> readBf16Tensor(const MachineState &state, const HbmPlacement &tensor, size_t count) {
  std::vector<uint8_t> bytes(count * 2);
  EXPECT_TRUE(state.readHbm(tensor.offsetBytes, bytes).ok());
  std::vector<float> values(count);
  for (size_t i = 0; i < count; ++i) {
    uint16_t bits;
    std::memcpy(&bits, &bytes[i * 2], 2);
    values[i] = static_cast<float>(BFloat16::fromBits(bits));
  }
  return values;
}

bool overlap(const TimelineEvent &a, const TimelineEvent &b) { return a.startNs < b.endNs && b.startNs < a.endNs; }

bool dmaOverlapsPe(const Timeline &timeline) {
  for (const TimelineEvent &dma : timeline.events) {
    if (dma.track.rfind("DMA", 0) != 0) continue;
    for (const TimelineEvent &pe : timeline.events)
      if (pe.track.rfind("PE", 0) == 0 && overlap(dma, pe)) return true;
  }
  return false;
}

class SimulateTest : public ::testing::TestWithParam<std::string> {};

TEST_P(SimulateTest, AddKernel) {
  MachineProfile profile = loadTestProfile(GetParam());
  Kernel kernel = buildKernel("add", profile, addKernel);
  Expected<CompiledKernel> compiled = compileKernel(kernel, profile);
  ASSERT_TRUE(compiled.ok()) << compiled.diag().str();
  MachineState state(profile, compiled->hbmBytes);
  std::vector<float> x = bf16Values(128 * 512, 1), y = bf16Values(128 * 512, 2);
  writeTensor(state, compiled->hbmTensors[0], x);
  writeTensor(state, compiled->hbmTensors[1], y);
  Expected<SimulationResult> result = simulate(compiled->program, profile, &state);
  ASSERT_TRUE(result.ok()) << result.diag().str();
  EXPECT_TRUE(result->races.empty()) << result->races.front().message;
  std::vector<float> out = readBf16Tensor(state, compiled->hbmTensors[2], x.size());
  for (size_t i = 0; i < x.size(); ++i) ASSERT_EQ(out[i], static_cast<float>(BFloat16(x[i] + y[i]))) << i;
}

TEST_P(SimulateTest, TiledMatmul) {
  MachineProfile profile = loadTestProfile(GetParam());
  const int64_t m = 256, k = 256, n = 512;
  Kernel kernel = buildKernel("matmul", profile, [&](KernelBuilder &b) { matmulKernel(b, m, k, n); });
  Expected<CompiledKernel> compiled = compileKernel(kernel, profile);
  ASSERT_TRUE(compiled.ok()) << compiled.diag().str();
  MachineState state(profile, compiled->hbmBytes);
  std::vector<float> lhsT = bf16Values(k * m, 3), rhs = bf16Values(k * n, 4);
  writeTensor(state, compiled->hbmTensors[0], lhsT);
  writeTensor(state, compiled->hbmTensors[1], rhs);
  Expected<SimulationResult> result = simulate(compiled->program, profile, &state);
  ASSERT_TRUE(result.ok()) << result.diag().str();
  EXPECT_TRUE(result->races.empty()) << result->races.front().message;
  std::vector<float> out = readBf16Tensor(state, compiled->hbmTensors[2], m * n);
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      double want = 0;
      for (int64_t kk = 0; kk < k; ++kk) want += static_cast<double>(lhsT[kk * m + i]) * rhs[kk * n + j];
      ASSERT_NEAR(out[i * n + j], want, 1e-2 * std::abs(want) + 1e-3) << "out[" << i << "][" << j << "]";
    }
  }
  const Timeline &timeline = result->timeline;
  EXPECT_TRUE(dmaOverlapsPe(timeline));
  EXPECT_LE(compiled->estimatedNs, 2 * timeline.totalNs) << printSchedule(*compiled);
  EXPECT_GE(compiled->estimatedNs, 0.5 * timeline.totalNs) << printSchedule(*compiled);
}

// A bigger multi-buffered kernel (416 ops), timing only: no races, and the estimate holds.
TEST_P(SimulateTest, LargerMatmulTimingIsRaceFree) {
  MachineProfile profile = loadTestProfile(GetParam());
  Kernel kernel = buildKernel("matmul", profile, [](KernelBuilder &b) { matmulKernel(b, 512, 1024, 2048); });
  Expected<CompiledKernel> compiled = compileKernel(kernel, profile);
  ASSERT_TRUE(compiled.ok()) << compiled.diag().str();
  SimulateOptions options;
  options.timingOnly = true;
  Expected<SimulationResult> result = simulate(compiled->program, profile, nullptr, options);
  ASSERT_TRUE(result.ok()) << result.diag().str();
  EXPECT_TRUE(result->races.empty()) << result->races.front().message;
  EXPECT_TRUE(dmaOverlapsPe(result->timeline));
  EXPECT_LE(compiled->estimatedNs, 2 * result->timeline.totalNs);
  EXPECT_GE(compiled->estimatedNs, 0.5 * result->timeline.totalNs);
}

void writeF32(MachineState &state, const HbmPlacement &tensor, const std::vector<float> &values) {
  std::vector<uint8_t> bytes(values.size() * 4);
  std::memcpy(bytes.data(), values.data(), bytes.size());
  ASSERT_TRUE(state.writeHbm(tensor.offsetBytes, bytes).ok());
}

std::vector<float> readF32(const MachineState &state, const HbmPlacement &tensor, size_t count) {
  std::vector<float> values(count);
  std::vector<uint8_t> bytes(count * 4);
  EXPECT_TRUE(state.readHbm(tensor.offsetBytes, bytes).ok());
  std::memcpy(values.data(), bytes.data(), bytes.size());
  return values;
}

// A row softmax over 8 blocks of 128 rows: reductions, ACT with accumulate, tensor_scalar with
// per-partition operands, ops on engines the compiler picks, and tiles reused across iterations.
TEST_P(SimulateTest, RowSoftmaxLoop) {
  MachineProfile profile = loadTestProfile(GetParam());
  const int64_t rows = 8 * 128, cols = 256;
  Kernel kernel = buildKernel("softmax", profile, [&](KernelBuilder &b) {
    HbmView x = b.input("x", DType::F32, {rows, cols});
    HbmView out = b.output("out", DType::F32, {rows, cols});
    for (int64_t r = 0; r < rows; r += 128) {
      TileView t = b.sbuf("t", DType::F32, 128, {cols});
      TileView mx = b.sbuf("max", DType::F32, 128, {1});
      TileView sum = b.sbuf("sum", DType::F32, 128, {1});
      TileView e = b.sbuf("e", DType::F32, 128, {cols});
      b.load(t, x.rows(r, 128));
      b.reduce(mx, t, AluOp::Maximum);
      b.tensorScalar(t, t, AluOp::Subtract, mx);
      b.activation(e, t, ActFunc::Exp, ActivationArgs{1.0f, std::nullopt, sum});
      b.activation(sum, sum, ActFunc::Reciprocal);
      b.tensorScalar(e, e, AluOp::Multiply, sum);
      b.store(out.rows(r, 128), e);
    }
  });
  Expected<CompiledKernel> compiled = compileKernel(kernel, profile);
  ASSERT_TRUE(compiled.ok()) << compiled.diag().str();
  MachineState state(profile, compiled->hbmBytes);
  std::vector<float> x = bf16Values(rows * cols, 5);
  writeF32(state, compiled->hbmTensors[0], x);
  Expected<SimulationResult> result = simulate(compiled->program, profile, &state);
  ASSERT_TRUE(result.ok()) << result.diag().str();
  EXPECT_TRUE(result->races.empty()) << result->races.front().message;
  std::vector<float> out = readF32(state, compiled->hbmTensors[1], x.size());
  for (int64_t r = 0; r < rows; ++r) {
    double mx = x[r * cols], sum = 0;
    for (int64_t c = 0; c < cols; ++c) mx = std::max(mx, static_cast<double>(x[r * cols + c]));
    for (int64_t c = 0; c < cols; ++c) sum += std::exp(x[r * cols + c] - mx);
    for (int64_t c = 0; c < cols; ++c) {
      double want = std::exp(x[r * cols + c] - mx) / sum;
      ASSERT_NEAR(out[r * cols + c], want, 1e-3 * want + 1e-6) << r << "," << c;
    }
  }
  EXPECT_LE(compiled->estimatedNs, 2 * result->timeline.totalNs);
  EXPECT_GE(compiled->estimatedNs, 0.5 * result->timeline.totalNs);
}

// One copy reads a tile assembled by 16 loads on 16 queues: waits beyond kMaxWaits are relayed.
TEST_P(SimulateTest, ManyProducerQueues) {
  MachineProfile profile = loadTestProfile(GetParam());
  Kernel kernel = buildKernel("gather", profile, [](KernelBuilder &b) {
    HbmView x = b.input("x", DType::F32, {128, 16 * 64});
    HbmView out = b.output("out", DType::F32, {128, 16 * 64});
    TileView t = b.sbuf("t", DType::F32, 128, {16 * 64});
    TileView u = b.sbuf("u", DType::F32, 128, {16 * 64});
    for (int i = 0; i < 16; ++i) b.load(t.cols(i * 64, 64), x.cols(i * 64, 64));
    b.tensorScalar(u, t, AluOp::Multiply, 2.0f, AluOp::None, 0.0f, Engine::DVE);
    b.store(out, u);
  });
  Expected<CompiledKernel> compiled = compileKernel(kernel, profile);
  ASSERT_TRUE(compiled.ok()) << compiled.diag().str();
  MachineState state(profile, compiled->hbmBytes);
  std::vector<float> x = bf16Values(128 * 16 * 64, 6);
  writeF32(state, compiled->hbmTensors[0], x);
  Expected<SimulationResult> result = simulate(compiled->program, profile, &state);
  ASSERT_TRUE(result.ok()) << result.diag().str();
  EXPECT_TRUE(result->races.empty()) << result->races.front().message;
  std::vector<float> out = readF32(state, compiled->hbmTensors[1], x.size());
  for (size_t i = 0; i < x.size(); ++i) ASSERT_EQ(out[i], 2 * x[i]) << i;
}

// tensorScalarReduce through the compiler: y = x * s[p] and the row sums of y in one instruction,
// bit-exact against the same products folded in order in fp32.
TEST_P(SimulateTest, TensorScalarReduceScalesAndSumsRows) {
  MachineProfile profile = loadTestProfile(GetParam());
  const int64_t cols = 96;
  Kernel kernel = buildKernel("scale_sum", profile, [&](KernelBuilder &b) {
    HbmView x = b.input("x", DType::F32, {128, cols});
    HbmView scale = b.input("scale", DType::F32, {128, 1});
    HbmView y = b.output("y", DType::F32, {128, cols});
    HbmView sums = b.output("sums", DType::F32, {128, 1});
    TileView xt = b.sbuf("x", DType::F32, 128, {cols});
    TileView st = b.sbuf("scale", DType::F32, 128, {1});
    TileView yt = b.sbuf("y", DType::F32, 128, {cols});
    TileView sum = b.sbuf("sum", DType::F32, 128, {1});
    b.load(xt, x);
    b.load(st, scale);
    b.tensorScalarReduce(yt, xt, AluOp::Multiply, st, sum, AluOp::Add);
    b.store(y, yt);
    b.store(sums, sum);
  });
  Expected<CompiledKernel> compiled = compileKernel(kernel, profile);
  ASSERT_TRUE(compiled.ok()) << compiled.diag().str();
  MachineState state(profile, compiled->hbmBytes);
  std::vector<float> x = bf16Values(128 * cols, 8), scale = bf16Values(128, 9);
  writeF32(state, compiled->hbmTensors[0], x);
  writeF32(state, compiled->hbmTensors[1], scale);
  Expected<SimulationResult> result = simulate(compiled->program, profile, &state);
  ASSERT_TRUE(result.ok()) << result.diag().str();
  EXPECT_TRUE(result->races.empty()) << result->races.front().message;
  std::vector<float> y = readF32(state, compiled->hbmTensors[2], x.size());
  std::vector<float> sums = readF32(state, compiled->hbmTensors[3], 128);
  for (int64_t p = 0; p < 128; ++p) {
    float want = 0;
    for (int64_t c = 0; c < cols; ++c) {
      const float product = x[p * cols + c] * scale[p];
      ASSERT_EQ(y[p * cols + c], product) << p << "," << c;
      want = c == 0 ? product : want + product;
    }
    ASSERT_EQ(sums[p], want) << p;
  }
}

INSTANTIATE_TEST_SUITE_P(Profiles, SimulateTest, ::testing::Values("nc-v2", "nc-v3"));

}  // namespace
}  // namespace tessel::nc::tile
