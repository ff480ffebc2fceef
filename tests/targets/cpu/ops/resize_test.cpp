// Resize on the cpu target (the table-driven 2-D kernel) against the reference interpreter:
// nearest with each rounding, linear, the coordinate modes, integer and fractional scales, sizes
// instead of scales, downsampling, channels-last H and W, opset 10's form, one and two threads;
// and the fallbacks
// (a leading axis resized, cubic).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include <fmt/format.h>

#include "../cpu_test_util.h"

namespace tessel::cpu {
namespace {

using testing::CpuCheck;
using testing::expectCpuMatchesReference;

/// A Resize of X by constant `scales` (or `sizes` when given) with `attributes`.
std::string modelText(const std::vector<int64_t> &x, const std::vector<double> &scales,
                      const std::vector<int64_t> &sizes, const std::string &attributes, int opset = 13) {
  std::string body, args;
  if (opset < 11) {
    body = fmt::format("  const %s = dense<f32[{}]: {}>\n", scales.size(), fmt::join(scales, ", "));
    args = "%x, %s";
  } else if (!sizes.empty()) {
    body = fmt::format("  const %sizes = dense<i64[{}]: {}>\n", sizes.size(), fmt::join(sizes, ", "));
    args = "%x, _, _, %sizes";
  } else {
    body = fmt::format("  const %s = dense<f32[{}]: {}>\n", scales.size(), fmt::join(scales, ", "));
    args = "%x, _, %s";
  }
  return fmt::format(
      "model opset(ai.onnx={}) ir_version=8 {{\n"
      "func @main(%x: f32[{}]) -> (%y: ?) {{\n{}  %y = Resize({}) {{{}}}\n  return %y\n}}\n}}\n",
      opset, fmt::join(x, ","), body, args, attributes);
}

void check(const std::string &text, int threads = 2, bool requireNoFallback = true) {
  SCOPED_TRACE(text);
  CpuCheck options;
  options.threads = threads;
  options.requireNoFallback = requireNoFallback;
  expectCpuMatchesReference(text, options);
}

TEST(CpuResize, NearestIntegerScales) {
  const char *paddle = "mode = \"nearest\", coordinate_transformation_mode = \"asymmetric\", nearest_mode = \"floor\"";
  check(modelText({1, 6, 5, 7}, {1, 1, 2, 2}, {}, paddle));
  check(modelText({2, 3, 4, 4}, {1, 1, 8, 8}, {}, paddle), 1);
  check(modelText({1, 4, 6, 5}, {1, 1, 3, 2}, {}, "mode = \"nearest\""));
}

TEST(CpuResize, NearestRoundingAndFractionalSizes) {
  for (const char *rounding : {"round_prefer_floor", "round_prefer_ceil", "floor", "ceil"}) {
    const std::string attributes = fmt::format("mode = \"nearest\", nearest_mode = \"{}\"", rounding);
    check(modelText({1, 3, 5, 7}, {}, {1, 3, 8, 11}, attributes));
    check(modelText({1, 2, 9, 8}, {}, {1, 2, 4, 5}, attributes), 1);
  }
  check(modelText({1, 2, 5, 6}, {1, 1, 1.5, 2.5},
                  {}, "mode = \"nearest\", coordinate_transformation_mode = \"tf_half_pixel_for_nn\""));
}

TEST(CpuResize, LinearCoordinateModes) {
  for (const char *coordinates : {"half_pixel", "pytorch_half_pixel", "align_corners", "asymmetric"}) {
    const std::string attributes =
        fmt::format("mode = \"linear\", coordinate_transformation_mode = \"{}\"", coordinates);
    check(modelText({1, 3, 6, 7}, {1, 1, 2, 2}, {}, attributes));
    check(modelText({2, 2, 9, 10}, {}, {2, 2, 4, 1}, attributes), 1);
    check(modelText({4, 5}, {}, {7, 13}, attributes));
  }
}

TEST(CpuResize, ChannelsLastPixelsMoveWhole) {
  // [N, H, W, C] resized along H and W: each pixel's C floats move as one block.
  check(modelText({1, 5, 7, 24}, {1, 2, 2, 1}, {},
                  "mode = \"nearest\", coordinate_transformation_mode = \"asymmetric\", nearest_mode = \"floor\""));
  check(modelText({2, 6, 5, 3}, {}, {2, 9, 11, 3}, "mode = \"linear\""), 1);
  check(modelText({1, 4, 4, 5}, {}, {1, 4, 7, 5}, "mode = \"linear\", coordinate_transformation_mode = \"align_corners\""));
}

TEST(CpuResize, OpsetTenForm) {
  check(modelText({1, 3, 4, 5}, {1, 1, 2, 3}, {}, "mode = \"nearest\"", /*opset=*/10));
  check(modelText({1, 3, 4, 5}, {1, 1, 2, 2}, {}, "mode = \"linear\"", /*opset=*/10));
}

TEST(CpuResize, UncoveredFormsFallBack) {
  check(modelText({1, 2, 4, 4}, {1, 2, 2, 2}, {}, "mode = \"nearest\""), 2, /*requireNoFallback=*/false);
  check(modelText({1, 2, 4, 4}, {1, 1, 2, 2}, {}, "mode = \"cubic\""), 2, /*requireNoFallback=*/false);
}

}  // namespace
}  // namespace tessel::cpu
