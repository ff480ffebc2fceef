// The NKI matmul tutorial's kernels (tutorial.h). Tiles come from the profile: TK = partitions
// (contraction on partitions), TM = PE columns (stationary free), TN = one PSUM bank of fp32 (moving
// free). Loop structure and loads per variant, as in the tutorial:
//
//   tiled:        for m-tile, n-tile: for k-tile: load a_t[k, m] and b[k, n]; matmul into PSUM;
//                 copy PSUM -> SBUF; store.
//   hoisted:      for m-tile: load the K column of a_t tiles; for n-tile: load the K column of b
//                 tiles; K matmuls; copy; store.
//   mn-blocked:   blocks of 2 m-tiles x 2 n-tiles: the block's a_t and b tiles are loaded once per
//                 block (one [TK, TM] or [TK, TN] load each), then every (m, n) pair of the block
//                 accumulates over K in PSUM, is copied and stored.
//   mnk-blocked:  for n-block (2 n-tiles): zeroed SBUF accumulators for all of M; for k-block (8
//                 k-tiles): one [TK, 2*TN] load of b per k-tile; for m-block (16 m-tiles): one
//                 [TK, 16*TM] load of a_t per k-tile; per (n-tile, m-tile) 8 matmuls into PSUM and a
//                 DVE add into the SBUF accumulator; at the end, each m-tile's n-block is packed
//                 into one fp32 row and stored with one DMA (which casts).
//
// Block sizes are the tutorial's, clamped to the shape so that small shapes (the numerics tests)
// run the same code.
#include "targets/nc/kernels/matmul/tutorial.h"

#include <algorithm>
#include <tuple>

#include <fmt/format.h>

#include "targets/nc/kernels/tiling.h"

namespace tessel::nc::kernels {
namespace {

using tile::HbmView;
using tile::KernelBuilder;
using tile::TileView;

/// The tutorial's block sizes, in tiles.
constexpr int64_t kMnBlockTilesM = 2, kMnBlockTilesN = 2;
constexpr int64_t kMnkBlockTilesM = 16, kMnkBlockTilesN = 2, kMnkBlockTilesK = 8;

DType outputDtype(DType input) { return input == DType::F32 ? DType::F32 : DType::BF16; }

struct Tutorial {
  KernelBuilder &b;
  DType dtype;
  int64_t M, N, K;
  int64_t tileK, tileM, tileN;
  HbmView aT, bIn, c;

  int64_t kTiles() const { return K / tileK; }
  int64_t mTiles() const { return M / tileM; }
  int64_t nTiles() const { return N / tileN; }

  TileView loadA(int64_t kt, int64_t mt, int64_t count = 1) {
    TileView t = b.sbuf("a_t", dtype, tileK, {count * tileM});
    b.load(t, aT.rows(kt * tileK, tileK).cols(mt * tileM, count * tileM));
    return t;
  }
  TileView loadB(int64_t kt, int64_t nt, int64_t count = 1) {
    TileView t = b.sbuf("b", dtype, tileK, {count * tileN});
    b.load(t, bIn.rows(kt * tileK, tileK).cols(nt * tileN, count * tileN));
    return t;
  }
  /// PSUM -> SBUF (the engine is the scheduler's choice, as nl.copy / tensor_copy leaves it) -> HBM.
  void evict(const TileView &acc, int64_t mt, int64_t nt) {
    TileView out = b.sbuf("c", outputDtype(dtype), tileM, {tileN});
    b.copy(out, acc);
    b.store(c.rows(mt * tileM, tileM).cols(nt * tileN, tileN), out);
  }
  TileView accumulator() { return b.psum("acc", DType::F32, tileM, {tileN}); }

  /// Fails unless `tiles` tiles of dim `name` split into blocks of `block`.
  static Status checkBlocks(const char *name, int64_t tiles, int64_t block) {
    if (tiles % block == 0) return Status::success();
    return makeError(ErrorCode::InvalidArgument, "{} has {} tiles, not a multiple of the block of {} tiles", name,
                     tiles, block);
  }

  void tiled() {
    for (int64_t mt = 0; mt < mTiles(); ++mt)
      for (int64_t nt = 0; nt < nTiles(); ++nt) {
        TileView acc = accumulator();
        for (int64_t kt = 0; kt < kTiles(); ++kt) {
          TileView a = loadA(kt, mt), bt = loadB(kt, nt);
          b.matmul(acc, a, bt, /*accumulate=*/kt > 0);
        }
        evict(acc, mt, nt);
      }
  }

  void hoisted() {
    for (int64_t mt = 0; mt < mTiles(); ++mt) {
      std::vector<TileView> aTiles;
      for (int64_t kt = 0; kt < kTiles(); ++kt) aTiles.push_back(loadA(kt, mt));
      for (int64_t nt = 0; nt < nTiles(); ++nt) {
        std::vector<TileView> bTiles;
        for (int64_t kt = 0; kt < kTiles(); ++kt) bTiles.push_back(loadB(kt, nt));
        TileView acc = accumulator();
        for (int64_t kt = 0; kt < kTiles(); ++kt)
          b.matmul(acc, aTiles[static_cast<size_t>(kt)], bTiles[static_cast<size_t>(kt)], /*accumulate=*/kt > 0);
        evict(acc, mt, nt);
      }
    }
  }

  Status mnBlocked() {
    const int64_t blockM = std::min(kMnBlockTilesM, mTiles()), blockN = std::min(kMnBlockTilesN, nTiles());
    TESSEL_RETURN_IF_ERROR(checkBlocks("M", mTiles(), blockM));
    TESSEL_RETURN_IF_ERROR(checkBlocks("N", nTiles(), blockN));
    for (int64_t mb = 0; mb < mTiles() / blockM; ++mb) {
      std::vector<std::vector<TileView>> aTiles(static_cast<size_t>(blockM));
      for (int64_t bm = 0; bm < blockM; ++bm)
        for (int64_t kt = 0; kt < kTiles(); ++kt) aTiles[static_cast<size_t>(bm)].push_back(loadA(kt, mb * blockM + bm));
      for (int64_t nb = 0; nb < nTiles() / blockN; ++nb) {
        std::vector<std::vector<TileView>> bTiles(static_cast<size_t>(blockN));
        for (int64_t bn = 0; bn < blockN; ++bn)
          for (int64_t kt = 0; kt < kTiles(); ++kt)
            bTiles[static_cast<size_t>(bn)].push_back(loadB(kt, nb * blockN + bn));
        for (int64_t bm = 0; bm < blockM; ++bm)
          for (int64_t bn = 0; bn < blockN; ++bn) {
            TileView acc = accumulator();
            for (int64_t kt = 0; kt < kTiles(); ++kt)
              b.matmul(acc, aTiles[static_cast<size_t>(bm)][static_cast<size_t>(kt)],
                       bTiles[static_cast<size_t>(bn)][static_cast<size_t>(kt)], /*accumulate=*/kt > 0);
            evict(acc, mb * blockM + bm, nb * blockN + bn);
          }
      }
    }
    return Status::success();
  }

  Status mnkBlocked() {
    const int64_t blockM = std::min(kMnkBlockTilesM, mTiles()), blockN = std::min(kMnkBlockTilesN, nTiles());
    const int64_t blockK = std::min(kMnkBlockTilesK, kTiles());
    TESSEL_RETURN_IF_ERROR(checkBlocks("M", mTiles(), blockM));
    TESSEL_RETURN_IF_ERROR(checkBlocks("N", nTiles(), blockN));
    TESSEL_RETURN_IF_ERROR(checkBlocks("K", kTiles(), blockK));
    const int64_t mBlocks = mTiles() / blockM;
    const DType accDtype = outputDtype(dtype);
    for (int64_t nb = 0; nb < nTiles() / blockN; ++nb) {
      // result[m-block][bm][bn]: SBUF accumulators over the whole K.
      std::vector<TileView> sums;
      for (int64_t i = 0; i < mBlocks * blockM * blockN; ++i) {
        sums.push_back(b.sbuf("sum", accDtype, tileM, {tileN}));
        b.memset(sums.back(), 0.0f);
      }
      auto sum = [&](int64_t mb, int64_t bm, int64_t bn) { return sums[static_cast<size_t>((mb * blockM + bm) * blockN + bn)]; };
      for (int64_t kb = 0; kb < kTiles() / blockK; ++kb) {
        std::vector<TileView> bTiles;
        for (int64_t bk = 0; bk < blockK; ++bk) bTiles.push_back(loadB(kb * blockK + bk, nb * blockN, blockN));
        for (int64_t mb = 0; mb < mBlocks; ++mb) {
          std::vector<TileView> aTiles;
          for (int64_t bk = 0; bk < blockK; ++bk) aTiles.push_back(loadA(kb * blockK + bk, mb * blockM, blockM));
          for (int64_t bn = 0; bn < blockN; ++bn)
            for (int64_t bm = 0; bm < blockM; ++bm) {
              TileView acc = accumulator();
              for (int64_t bk = 0; bk < blockK; ++bk)
                b.matmul(acc, aTiles[static_cast<size_t>(bk)].cols(bm * tileM, tileM),
                         bTiles[static_cast<size_t>(bk)].cols(bn * tileN, tileN), /*accumulate=*/bk > 0);
              TileView s = sum(mb, bm, bn);
              b.tensorTensor(s, s, acc, AluOp::Add, Engine::DVE);
            }
        }
      }
      for (int64_t mb = 0; mb < mBlocks; ++mb)
        for (int64_t bm = 0; bm < blockM; ++bm) {
          TileView packed = b.sbuf("packed", DType::F32, tileM, {blockN * tileN});
          for (int64_t bn = 0; bn < blockN; ++bn) b.copy(packed.cols(bn * tileN, tileN), sum(mb, bm, bn));
          b.store(c.rows((mb * blockM + bm) * tileM, tileM).cols(nb * blockN * tileN, blockN * tileN), packed);
        }
    }
    return Status::success();
  }
};

}  // namespace

const std::vector<std::string> &matmulTutorialVariants() {
  static const std::vector<std::string> variants = {"tiled", "hoisted", "mn-blocked", "mnk-blocked"};
  return variants;
}

Status buildMatmulTutorial(KernelBuilder &b, const KernelParams &params) {
  if (!params.option("bias").empty() || !params.option("act").empty())
    return makeError(ErrorCode::InvalidArgument, "matmul variant '{}' has no bias or activation epilogue",
                     params.variant);
  const MachineProfile &profile = b.profile();
  Tutorial t{b, params.dtype, params.dim("M"), params.dim("N"), params.dim("K"),
             std::min(profile.partitions, profile.pe.rows), std::min(profile.partitions, profile.pe.cols),
             profile.psum.bankFp32Elements, {}, {}, {}};
  for (auto [name, size, tileSize] : {std::tuple{"M", t.M, t.tileM}, {"N", t.N, t.tileN}, {"K", t.K, t.tileK}})
    if (size % tileSize != 0)
      return makeError(ErrorCode::InvalidArgument, "matmul variant '{}': {}={} is not a multiple of its tile {}",
                       params.variant, name, size, tileSize);
  t.aT = b.input("a_t", params.dtype, {t.K, t.M});
  t.bIn = b.input("b", params.dtype, {t.K, t.N});
  t.c = b.output("c", outputDtype(params.dtype), {t.M, t.N});
  Status status = Status::success();
  if (params.variant == "tiled") t.tiled();
  else if (params.variant == "hoisted") t.hoisted();
  else if (params.variant == "mn-blocked") status = t.mnBlocked();
  else if (params.variant == "mnk-blocked") status = t.mnkBlocked();
  else return makeError(ErrorCode::Internal, "matmul: no tutorial variant '{}'", params.variant);
  if (!status.ok()) {
    Diagnostic diag = status.diag();
    diag.message = fmt::format("matmul variant '{}': {}", params.variant, diag.message);
    return diag;
  }
  return Status::success();
}

}  // namespace tessel::nc::kernels
