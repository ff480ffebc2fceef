// The matmul family's algorithm: records the tile ops of out[M, N] = stationary[K, M]^T @ moving[K, N] (+ epilogue) for
// a plan (plan.h), over operands in HBM or SBUF as the plan's problem says.
//
//   for m-block (G m-tiles):                  stationary chunks of the m-block (streamed, a resident
//     for n-tile (TN columns):                stripe, or one tile per chunk: plan.stationaryBuffers)
//       for k-chunk: for k-tile: for m-tile:  matmul(psum[m-tile], stationary[k-tile, m-tile],
//                                                    moving[k-tile, n-tile])
//       evict the G banks with the epilogue (epilogue.h): into SBUF staging and one store of
//       [G * TM, TN] (output in HBM), or straight into the output's tiles (output in SBUF)
//
// (MultiplyOrder::MTileOuter swaps the two inner loops and evicts each tile when it is done.) PSUM accumulates each
// output tile over the whole K, so it is evicted once and no partial sums go through SBUF. A moving operand in HBM is
// loaded in chunks of C k-tiles x W n-tiles, a few chunks ahead of the multiplies.
#pragma once

#include <functional>
#include <optional>
#include <string>

#include "targets/nc/kernels/matmul/epilogue.h"
#include "targets/nc/kernels/matmul/plan.h"
#include "targets/nc/kernels/tiling.h"
#include "targets/nc/tile/dsl.h"

namespace tessel::nc::kernels {

/// The operands of one matmul; which members are used follows plan.problem.
struct MatmulOperands {
  /// StationaryLayout::RowMajor: [K, M] in HBM.
  tile::HbmView stationary;
  /// StationaryLayout::Blocked: chunk kc of m-block mb as [TK, k-tiles * columns] in HBM, k-tile i of the chunk at
  /// columns [i * columns, (i + 1) * columns), rows past K zero.
  std::function<tile::HbmView(int64_t mBlock, int64_t kChunk)> stationaryChunk;
  /// Moving in HBM: [K, N].
  tile::HbmView moving;
  /// Moving in SBUF: the rows of k-tile kt as [rows, N] on partitions [0, rows).
  std::function<tile::TileView(int64_t kTile)> movingTile;
  /// Output in HBM: [M, N] in the output dtype.
  tile::HbmView output;
  /// Output in SBUF: the destination of out[m, n] (m.count partitions); its PSUM accumulator sits on the same
  /// partitions, so the eviction moves nothing across partitions.
  std::function<tile::TileView(Span m, Span n)> outputTile;
  /// problem.columnBias: [N] in HBM.
  tile::HbmView columnBias;
  /// Output in SBUF, optional: the bias of out[m, :] as [m.count, 1] f32, and an addend of out[m, n].
  std::function<std::optional<tile::TileView>(Span m)> partitionBias;
  std::function<std::optional<tile::TileView>(Span m, Span n)> residual;
  Epilogue epilogue;
  /// Prefix of the tile names (a model node's name and "/", so that reports name the node).
  std::string tilePrefix;
};

/// Records the matmul. A shape mismatch between the operands and the plan is recorded on `builder`
/// (KernelBuilder::fail) like every DSL error.
void emitMatmul(tile::KernelBuilder &builder, const MatmulPlan &plan, const MatmulOperands &operands);

}  // namespace tessel::nc::kernels
