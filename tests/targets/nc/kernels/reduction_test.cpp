// reduce_sum and reduce_max over the last dim at aligned and ragged shapes.
#include <gtest/gtest.h>

#include "kernel_test_util.h"

namespace tessel::nc::kernels {
namespace {

TEST(ReductionKernels, ReduceSumAtEveryShape) { testing::expectKernelPassesAtShapes("reduce_sum"); }
TEST(ReductionKernels, ReduceMaxAtEveryShape) { testing::expectKernelPassesAtShapes("reduce_max"); }

TEST(ReductionKernels, ManyColumnTiles) {
  testing::expectKernelPasses("reduce_sum", {{"R", 130}, {"C", 9000}}, DType::F32, "nc-v2");
  testing::expectKernelPasses("reduce_max", {{"R", 130}, {"C", 9000}}, DType::BF16, "nc-v3");
}

}  // namespace
}  // namespace tessel::nc::kernels
