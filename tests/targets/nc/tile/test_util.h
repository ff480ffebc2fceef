// Shared helpers of the tile tests: profiles, and a few small kernels built with the DSL.
#pragma once

#include <string>

#include <gtest/gtest.h>

#include "targets/nc/machine/profile.h"
#include "targets/nc/tile/compile.h"
#include "targets/nc/tile/dsl.h"

namespace tessel::nc::tile {

inline MachineProfile loadTestProfile(const std::string &name) {
  Expected<MachineProfile> profile = loadProfile(name);
  EXPECT_TRUE(profile.ok()) << profile.diag().str();
  return profile.ok() ? *profile : MachineProfile{};
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
