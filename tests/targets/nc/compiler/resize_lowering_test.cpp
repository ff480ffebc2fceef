// Resize on the accelerator against the reference: isnet's bilinear upsampling (linear, half_pixel,
// sizes), PP-OCR's nearest (asymmetric, floor, scales), one axis only, a ratio that is not an integer
// and two images; a resize whose taps scatter over too many runs stays on the host with the reason.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "targets/nc/compiler/nc_model_check.h"

namespace tessel::nc::compiler {
namespace {

/// Resize of x to y's sizes, by `sizes` (integer) or `scales` (float) given as text.
std::string resizeModel(const std::vector<int64_t> &x, const std::vector<int64_t> &y, const std::string &attributes,
                        bool bySizes) {
  const std::string target = bySizes ? fmt::format("dense<i64[4]: {}>", fmt::join(y, ", "))
                                     : fmt::format("dense<f32[4]: 1, 1, {}, {}>", double(y[2]) / double(x[2]),
                                                   double(y[3]) / double(x[3]));
  return fmt::format(R"(model opset(ai.onnx=13) ir_version=8 {{
func @main(%x: f32[{}]) -> (%y: f32[{}]) {{
  const %roi = dense<f32[0]>
  const %target = {}
  %y = Resize(%x, %roi, {}) {{{}}}
  return %y
}}
}})",
                     fmt::join(x, ","), fmt::join(y, ","), target, bySizes ? "_, %target" : "%target", attributes);
}

void expectOnDeviceAndMatches(const std::string &ir) {
  SCOPED_TRACE(ir);
  auto check = checkModelOnNc(ir, {}, 1e-5, 1e-5);
  ASSERT_TRUE(check.ok()) << check.diag().str();
  EXPECT_LE(check->maxErrorRatio, 1.0) << check->worst;
  EXPECT_EQ(check->hostNodes, 0);
}

const char *kBilinear = R"(mode = "linear", coordinate_transformation_mode = "half_pixel")";
const char *kNearest = R"(mode = "nearest", coordinate_transformation_mode = "asymmetric", nearest_mode = "floor")";

TEST(ResizeLowering, BilinearTwiceBySizes) {
  // 160 channels (two partition blocks, one ragged); the edges clamp their taps.
  expectOnDeviceAndMatches(resizeModel({1, 160, 7, 9}, {1, 160, 14, 18}, kBilinear, true));
}

TEST(ResizeLowering, NearestTwiceByScales) {
  expectOnDeviceAndMatches(resizeModel({1, 8, 5, 6}, {1, 8, 10, 12}, kNearest, false));
}

TEST(ResizeLowering, OneAxisOtherRatiosAndTwoImages) {
  expectOnDeviceAndMatches(resizeModel({1, 8, 6, 5}, {1, 8, 6, 10}, kBilinear, true));   // Columns only.
  expectOnDeviceAndMatches(resizeModel({1, 8, 5, 6}, {1, 8, 15, 6}, kBilinear, true));   // Rows only, 3x.
  expectOnDeviceAndMatches(resizeModel({1, 8, 5, 5}, {1, 8, 7, 8}, kBilinear, true));    // Not an integer factor.
  expectOnDeviceAndMatches(resizeModel({2, 8, 4, 4}, {2, 8, 8, 8}, kNearest, true));     // Two images.
}

TEST(ResizeLowering, ScatteredTapsRunOnTheHost) {
  // 9 -> 100 columns: no integer factor, so nearly one run per output column.
  auto check = checkModelOnNc(resizeModel({1, 8, 4, 9}, {1, 8, 4, 100}, kBilinear, true));
  ASSERT_TRUE(check.ok()) << check.diag().str();
  EXPECT_LE(check->maxErrorRatio, 1.0) << check->worst;
  EXPECT_EQ(check->hostNodes, 1);
}

}  // namespace
}  // namespace tessel::nc::compiler
