// How a GEMM driver splits C over threads: a grid of rectangles of whole mr x nr tiles, one per
// task, chosen by a small cost model in multiply-adds. Shared by the float (gemm.cpp) and int8
// (gemm_s8.cpp) drivers, which differ only in their tile sizes and in whether B is packed per call.
#pragma once

#include <cstdint>
#include <limits>

#include "targets/cpu/kernels/gemm.h"

namespace tessel::cpu {

/// Each extra task costs about this many multiply-adds (wake-up, claiming, cold caches).
inline constexpr int64_t kGemmTaskCost = 100'000;

/// A split of C into taskRows x taskCols rectangles of rowsPerTask x colsPerTask (whole tiles).
struct GemmGrid {
  int64_t rowsPerTask, colsPerTask;
  int64_t taskRows, taskCols;

  int64_t tasks() const { return taskRows * taskCols; }
  GemmShape part(const GemmShape &shape) const { return {rowsPerTask, colsPerTask, shape.k}; }
};

/// The grid of at most `threads` tasks with the least cost: the largest task's multiply-adds, plus
/// `packCostPerValue` for each value of B it packs or reads (0 when B is packed once, ahead of the
/// call, and its reads are cheap next to the products), plus `aCostPerValue` for each value of A it
/// reads, plus kGemmTaskCost per extra task.
inline GemmGrid chooseGemmGrid(int64_t mr, int64_t nr, const GemmShape &shape, int threads,
                               int64_t packCostPerValue, int64_t aCostPerValue = 0) {
  auto ceilDiv = [](int64_t a, int64_t b) { return (a + b - 1) / b; };
  const int64_t rowTiles = ceilDiv(shape.m, mr), colTiles = ceilDiv(shape.n, nr);
  GemmGrid best{rowTiles * mr, colTiles * nr, 1, 1};
  int64_t bestCost = std::numeric_limits<int64_t>::max();
  for (int64_t tm = 1; tm <= threads && tm <= rowTiles; ++tm) {
    for (int64_t tn = 1; tm * tn <= threads && tn <= colTiles; ++tn) {
      const int64_t rows = ceilDiv(rowTiles, tm) * mr, cols = ceilDiv(colTiles, tn) * nr;
      const GemmGrid grid{rows, cols, ceilDiv(shape.m, rows), ceilDiv(shape.n, cols)};
      const int64_t cost =
          (rows + packCostPerValue) * cols * shape.k + aCostPerValue * rows * shape.k + kGemmTaskCost * (grid.tasks() - 1);
      if (cost < bestCost) {
        bestCost = cost;
        best = grid;
      }
    }
  }
  return best;
}

}  // namespace tessel::cpu
