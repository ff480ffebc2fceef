// Shared helpers of the tile tests: profiles, and a few small kernels built with the DSL.
#pragma once

#include <string>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "targets/nc/machine/profile.h"
#include "targets/nc/sim/simulator.h"
#include "targets/nc/tile/compile.h"
#include "targets/nc/tile/dsl.h"

namespace tessel::nc::tile {

inline MachineProfile loadTestProfile(const std::string &name) {
  Expected<MachineProfile> profile = loadProfile(name);
  EXPECT_TRUE(profile.ok()) << profile.diag().str();
  return profile.ok() ? *profile : MachineProfile{};
}

/// Simulated time of a compiled kernel, timing only.
inline double simulatedNs(const CompiledKernel &compiled, const MachineProfile &profile) {
  SimulateOptions options;
  options.timingOnly = true;
  Expected<SimulationResult> result = simulate(compiled.program, profile, nullptr, options);
  EXPECT_TRUE(result.ok()) << result.diag().str();
  return result.ok() ? result->timeline.totalNs : 0;
}

/// Records a kernel and returns it; fails the test on a DSL error.
template <class Body>
Kernel buildKernel(const std::string &name, const MachineProfile &profile, Body body) {
  KernelBuilder builder(name, profile);
  body(builder);
  Expected<Kernel> kernel = builder.finish();
  EXPECT_TRUE(kernel.ok()) << kernel.diag().str();
  return kernel.ok() ? *kernel : Kernel{};
}

/// out = x + y over [128, 512] bf16, on DVE.
inline void addKernel(KernelBuilder &b) {
  HbmView x = b.input("x", DType::BF16, {128, 512});
  HbmView y = b.input("y", DType::BF16, {128, 512});
  HbmView out = b.output("out", DType::BF16, {128, 512});
  TileView a = b.sbuf("a", DType::BF16, 128, {512});
  TileView c = b.sbuf("b", DType::BF16, 128, {512});
  TileView sum = b.sbuf("sum", DType::BF16, 128, {512});
  b.load(a, x);
  b.load(c, y);
  b.tensorTensor(sum, a, c, AluOp::Add, Engine::DVE);
  b.store(out, sum);
}

/// SBUF kept small so that the spill tests stay small: 4 KiB per partition.
inline constexpr int64_t kSpillTestSbufBytes = 4096;

/// out block i = x block i + x block n-1-i over n blocks of [128, 256] f32 (1 KiB per partition each),
/// all loaded before any is added: n * 1 KiB live, plus the 1 KiB sum. With kSpillTestSbufBytes, n = 3
/// just fits and n = 6 must spill. `doubled`: each block is doubled in place after its load (out =
/// 2 x_i + 2 x_{n-1-i}), so a spilled block is a computed value that must be saved, not reloaded.
inline void mirroredSumKernel(KernelBuilder &b, int64_t n, bool doubled = false) {
  const int64_t cols = 256;
  HbmView x = b.input("x", DType::F32, {n * 128, cols});
  HbmView out = b.output("out", DType::F32, {n * 128, cols});
  std::vector<TileView> blocks;
  for (int64_t i = 0; i < n; ++i) {
    blocks.push_back(b.sbuf(fmt::format("x{}", i), DType::F32, 128, {cols}));
    b.load(blocks.back(), x.rows(i * 128, 128));
    if (doubled) b.tensorTensor(blocks.back(), blocks.back(), blocks.back(), AluOp::Add);
  }
  for (int64_t i = 0; i < n; ++i) {
    TileView sum = b.sbuf("sum", DType::F32, 128, {cols});
    b.tensorTensor(sum, blocks[i], blocks[n - 1 - i], AluOp::Add);
    b.store(out.rows(i * 128, 128), sum);
  }
}

/// out[:, i] block = stationary^T @ rhs block i for n blocks of [32, 512], all n PSUM results (one
/// 2 KiB bank each) computed before any is copied out: n = 9 exceeds the 8 banks and must spill.
inline void manyAccumulatorsKernel(KernelBuilder &b, int64_t n) {
  const int64_t k = 32, m = 32, cols = 512;
  HbmView st = b.input("st", DType::BF16, {k, m});
  HbmView rhs = b.input("rhs", DType::BF16, {k, n * cols});
  HbmView out = b.output("out", DType::F32, {m, n * cols});
  TileView stationary = b.sbuf("st", DType::BF16, k, {m});
  b.load(stationary, st);
  std::vector<TileView> accumulators;
  for (int64_t i = 0; i < n; ++i) {
    TileView moving = b.sbuf("mv", DType::BF16, k, {cols});
    b.load(moving, rhs.cols(i * cols, cols));
    accumulators.push_back(b.psum(fmt::format("acc{}", i), DType::F32, m, {cols}));
    b.matmul(accumulators.back(), stationary, moving, /*accumulate=*/false);
  }
  for (int64_t i = 0; i < n; ++i) {
    TileView result = b.sbuf("o", DType::F32, m, {cols});
    b.copy(result, accumulators[i], Engine::DVE);
    b.store(out.cols(i * cols, cols), result);
  }
}

/// out[M, N] = lhsT[K, M]^T @ rhs[K, N] in bf16 with f32 PSUM and a bf16 result: K in tiles of
/// 128 accumulated in PSUM, M in tiles of 128, N in tiles of `nTile` columns.
inline void matmulKernel(KernelBuilder &b, int64_t m, int64_t k, int64_t n, int64_t nTile = 512) {
  const int64_t p = b.profile().partitions;
  HbmView lhsT = b.input("lhsT", DType::BF16, {k, m});
  HbmView rhs = b.input("rhs", DType::BF16, {k, n});
  HbmView out = b.output("out", DType::BF16, {m, n});
  for (int64_t mi = 0; mi < m / p; ++mi) {
    for (int64_t ni = 0; ni < n / nTile; ++ni) {
      TileView acc = b.psum("acc", DType::F32, p, {nTile});
      for (int64_t ki = 0; ki < k / p; ++ki) {
        TileView st = b.sbuf("st", DType::BF16, p, {p});
        TileView mv = b.sbuf("mv", DType::BF16, p, {nTile});
        b.load(st, lhsT.rows(ki * p, p).cols(mi * p, p));
        b.load(mv, rhs.rows(ki * p, p).cols(ni * nTile, nTile));
        b.matmul(acc, st, mv, /*accumulate=*/ki > 0);
      }
      TileView res = b.sbuf("res", DType::BF16, p, {nTile});
      b.copy(res, acc);
      b.store(out.rows(mi * p, p).cols(ni * nTile, nTile), res);
    }
  }
}

}  // namespace tessel::nc::tile
