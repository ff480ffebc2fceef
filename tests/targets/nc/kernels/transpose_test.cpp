// The PE transpose kernel: bit-exact at aligned and ragged shapes, across super-block edges.
#include <gtest/gtest.h>

#include "kernel_test_util.h"

namespace tessel::nc::kernels {
namespace {

TEST(TransposeKernel, AtEveryShape) { testing::expectKernelPassesAtShapes("transpose"); }

TEST(TransposeKernel, AcrossSuperBlocks) {
  testing::expectKernelPasses("transpose", {{"R", 1100}, {"C", 600}}, DType::BF16, "nc-v2");
  testing::expectKernelPasses("transpose", {{"R", 600}, {"C", 1100}}, DType::F32, "nc-v3");
}

}  // namespace
}  // namespace tessel::nc::kernels
