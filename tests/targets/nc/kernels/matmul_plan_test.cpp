// The matmul family's plan (kernels/matmul/plan.h): the DMA shapes and buffering it chooses for the
// library kernel's HBM operands and for the model compiler's SBUF-resident activations, and its
// printed form.
#include <gtest/gtest.h>

#include "kernel_test_util.h"
#include "targets/nc/kernels/matmul/plan.h"

namespace tessel::nc::kernels {
namespace {

MatmulProblem hbmProblem(int64_t M, int64_t N, int64_t K, DType dtype) {
  MatmulProblem problem;
  problem.M = M, problem.N = N, problem.K = K;
  problem.dtype = dtype;
  problem.outputDtype = dtype == DType::F32 ? DType::F32 : DType::BF16;
  return problem;
}

MatmulProblem loweringProblem(int64_t features, int64_t rows, int64_t K, int64_t mTileColumns = 0) {
  MatmulProblem problem = hbmProblem(features, rows, K, DType::BF16);
  problem.stationaryLayout = StationaryLayout::Blocked;
  problem.moving = OperandPlace::Sbuf;
  problem.output = OperandPlace::Sbuf;
  problem.mTileColumns = mTileColumns;
  return problem;
}

TEST(MatmulPlan, MovingRowsReachTheFullRateRunWhenThePanelFits) {
  // fp8: a 512-column n-tile is a 512 B row; 8 n-tiles per DMA row make it 4 KiB. N = 2048 has only
  // 4 n-tiles: the rows are whole rows of b, 2 KiB.
  const MatmulPlan fp8 = planMatmul(testing::profileNamed("nc-v2"), hbmProblem(2048, 4096, 2048, DType::F8E4M3));
  EXPECT_EQ(fp8.panelTiles, 8);
  EXPECT_EQ(fp8.movingRunBytes(), 4096);
  EXPECT_EQ(fp8.stationaryBuffers, StationaryBuffers::Stripe);
  const MatmulPlan square = planMatmul(testing::profileNamed("nc-v2"), hbmProblem(2048, 2048, 2048, DType::F8E4M3));
  EXPECT_EQ(square.panelTiles, 4);
  EXPECT_EQ(square.movingRunBytes(), 2048);
  // N = 1024 bf16 holds two n-tiles: 2 KiB rows, all N.
  const MatmulPlan narrow = planMatmul(testing::profileNamed("nc-v3"), hbmProblem(512, 1024, 1024, DType::BF16));
  EXPECT_EQ(narrow.panelTiles, 2);
  EXPECT_EQ(narrow.movingRunBytes(), 2048);
}

TEST(MatmulPlan, TheTutorialShapeKeepsOneNTilePerRowAndTheFullGroup) {
  // K = 8192 bf16: the 128 KiB stripe leaves no room for a wider panel, and halving G to make room
  // would read b twice as often for rows twice as long (the same DMA time), so the plan keeps G = 8.
  const MatmulPlan plan = planMatmul(testing::profileNamed("nc-v2"), hbmProblem(4096, 8192, 8192, DType::BF16));
  EXPECT_EQ(plan.panelTiles, 1);
  EXPECT_EQ(plan.groupTiles, 8);
  EXPECT_EQ(plan.stationaryBuffers, StationaryBuffers::Stripe);
  EXPECT_EQ(plan.movingRunBytes(), 1024);
}

TEST(MatmulPlan, NoStripeStreamsTheStationaryOperand) {
  MatmulProblem problem = hbmProblem(520, 520, 520, DType::BF16);
  problem.allowStripe = false;
  const MatmulPlan plan = planMatmul(testing::profileNamed("nc-v2"), problem);
  EXPECT_EQ(plan.stationaryBuffers, StationaryBuffers::Streamed);
  EXPECT_EQ(plan.panelTiles, 1);
}

TEST(MatmulPlan, LoweredWeightsMoveLongContiguousRuns) {
  // A BERT feed-forward output projection (K = 3072 -> 768 features, 128 tokens): one tile per
  // chunk of each 512-feature m-block, each chunk one run per partition of at least 4 KiB.
  const MatmulPlan plan = planMatmul(testing::profileNamed("nc-v2"), loweringProblem(768, 128, 3072));
  EXPECT_EQ(plan.stationaryBuffers, StationaryBuffers::PerBlock);
  EXPECT_EQ(plan.multiplyOrder, MultiplyOrder::MTileOuter);
  EXPECT_EQ(plan.mBlocks, 2);
  EXPECT_GE(plan.stationaryRunBytes(), 4096);
  EXPECT_EQ(plan.kChunks * plan.chunkTiles, plan.kTiles);
  // One core's 64-partition share of each feature tile (2 cores): the chunks stay as long.
  const MatmulPlan shard = planMatmul(testing::profileNamed("nc-v2"), loweringProblem(384, 128, 3072, 64));
  EXPECT_EQ(shard.tileM, 64);
  EXPECT_GE(shard.stationaryRunBytes(), 4096);
}

TEST(MatmulPlan, PrintsItsDecisions) {
  const MatmulPlan plan = planMatmul(testing::profileNamed("nc-v2"), hbmProblem(512, 1024, 1024, DType::BF16));
  EXPECT_EQ(plan.str(),
            "matmul M=512 N=1024 K=1024 bf16 -> bf16\n"
            "operands: stationary hbm row-major, moving hbm, output hbm\n"
            "tiles: TK=128 TM=128 TN=512; k-tiles 8, m-tiles 4, n-tiles 2\n"
            "m-blocks: 1 of 4 m-tiles (512 columns)\n"
            "k-chunks: 4 of 2 k-tiles, loaded 2 ahead\n"
            "stationary: stripe (4 tiles), 1024 B contiguous per partition\n"
            "moving: 1 panels of 2 n-tiles, ring of 7, 2048 B contiguous per partition\n"
            "multiplies: k-chunk by k-chunk over the m-block's banks\n");
}

}  // namespace
}  // namespace tessel::nc::kernels
