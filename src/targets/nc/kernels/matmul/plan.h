// The schedule of one matmul of the matmul family, out[M, N] = stationary[K, M]^T @ moving[K, N]: a pure function of
// the machine profile, the shapes and where the operands live. It fixes the tiles, the m-blocks (m-tiles sharing one
// pass over the moving operand, one PSUM bank each), the k-chunks (k-tiles per DMA), the moving panels (n-tiles per DMA
// row) and the buffering of each operand; emit.h records the tile ops from it.
//
// Callers: the library kernel `matmul` (kernel.cpp: stationary a_t and moving b in HBM, row-major; output c in HBM) and
// the model compiler's matmul lowering (compiler/emit_matmul.cpp: the weights are the stationary operand, laid out in
// HBM at compile time per (m-block, k-chunk); the activation is the SBUF-resident moving operand; the output stays in
// SBUF).
#pragma once

#include <cstdint>
#include <string>

#include "targets/nc/isa/instruction.h"
#include "targets/nc/machine/profile.h"

namespace tessel::nc::kernels {

/// Where an operand lives. The stationary operand always comes from HBM.
enum class OperandPlace { Hbm, Sbuf };

/// How the stationary operand is laid out in HBM.
enum class StationaryLayout {
  RowMajor,  // [K, M] as stored: a chunk's rows are blockCols contiguous elements per k-tile.
  Blocked,   // One [TK, C * columns] tensor per (m-block, k-chunk): one contiguous run per partition.
};

/// How the stationary chunks are buffered in SBUF.
enum class StationaryBuffers {
  Streamed,  // A ring of chunk tiles, reloaded for every n-tile.
  Stripe,    // An m-block's chunks stay resident across its n-tiles in fixed tiles; the next m-block
             // reloads chunk kc once the current one is done with it.
  PerBlock,  // A new tile per (m-block, chunk), resident across the m-block's n-tiles; the allocator
             // places them, so a model's weight loads can start under earlier layers' work.
};

/// The order of the multiplies of one (m-block, n-tile).
enum class MultiplyOrder {
  KChunkOuter,  // Chunk by chunk, each k-tile feeding all G banks: a streamed chunk is used once.
  MTileOuter,   // Tile by tile over the whole K, each output tile evicted as soon as it is done
                // (every chunk of the m-block is resident: PerBlock buffers, moving in SBUF).
};

struct MatmulProblem {
  int64_t M = 0, N = 0, K = 0;
  DType dtype = DType::BF16;  // Of the operands; PSUM accumulates in fp32.
  DType outputDtype = DType::BF16;
  StationaryLayout stationaryLayout = StationaryLayout::RowMajor;
  OperandPlace moving = OperandPlace::Hbm;
  OperandPlace output = OperandPlace::Hbm;
  bool columnBias = false;    // A bias per output column, from HBM (added on the eviction).
  int64_t mTileColumns = 0;   // Output partitions per m-tile; 0: the PE's columns.
  int64_t maxGroupTiles = 0;  // At most this many m-tiles per m-block; 0: the plan's choice.
  bool allowStripe = true;    // Whether a resident stripe may be chosen (off for tests).
};

struct MatmulPlan {
  MatmulProblem problem;
  int64_t tileK = 0, tileM = 0,
          tileN = 0;  // TK (partitions), TM (PE columns), TN (one PSUM bank).
  int64_t kTiles = 0, mTiles = 0, nTiles = 0;
  int64_t groupTiles = 0;  // G: m-tiles per m-block, one PSUM bank each.
  int64_t chunkTiles = 0;  // C: k-tiles per DMA chunk.
  int64_t kChunks = 0, mBlocks = 0;
  int64_t loadAheadSteps = 0;  // (m-block, n-tile, k-chunk) steps whose loads are recorded ahead.
  int64_t panelTiles = 1;      // W: n-tiles of the moving operand per DMA row (HBM moving only).
  int64_t nPanels = 0;
  StationaryBuffers stationaryBuffers = StationaryBuffers::Streamed;
  MultiplyOrder multiplyOrder = MultiplyOrder::KChunkOuter;
  int64_t stationarySlots = 0;  // Ring or stripe tiles (0 for PerBlock).
  int64_t movingSlots = 0;      // Ring tiles of moving chunks (0 when the moving operand is in SBUF).

  int64_t blockCols() const { return groupTiles * tileM; }
  int64_t panelCols() const { return panelTiles * tileN; }
  /// Contiguous bytes per partition of one stationary and one moving chunk DMA (per k-tile row for row-major layouts).
  int64_t stationaryRunBytes() const;
  int64_t movingRunBytes() const;
  /// The decisions as text, one `key: value` line each.
  std::string str() const;
};

MatmulPlan planMatmul(const MachineProfile &profile, const MatmulProblem &problem);

}  // namespace tessel::nc::kernels
