#include "ops/resize_geometry.h"

#include <algorithm>
#include <cmath>

namespace tessel {

Expected<std::optional<double>> resizeInputCoordinate(double x, int64_t inSize, double scale, double roiStart,
                                                      double roiEnd, std::string_view mode) {
  const double resized = scale * static_cast<double>(inSize);
  const double lastIn = static_cast<double>(inSize - 1);
  if (mode == "half_pixel") return std::optional<double>{(x + 0.5) / scale - 0.5};
  if (mode == "pytorch_half_pixel") return std::optional<double>{resized == 1 ? -0.5 : (x + 0.5) / scale - 0.5};
  if (mode == "align_corners") return std::optional<double>{resized == 1 ? 0.0 : x * lastIn / (resized - 1)};
  if (mode == "asymmetric") return std::optional<double>{x / scale};
  if (mode == "tf_half_pixel_for_nn") return std::optional<double>{(x + 0.5) / scale};
  if (mode == "tf_crop_and_resize") {
    // The specification's operation order, so boundary points extrapolate exactly as it does.
    const double roiSize = roiEnd - roiStart;
    double original = resized == 1 ? roiSize * lastIn / 2 : x * roiSize * lastIn / (resized - 1);
    original += roiStart * lastIn;
    if (original < 0 || original > lastIn) return std::optional<double>{};
    return std::optional<double>{original};
  }
  return makeError(ErrorCode::InvalidArgument, "unknown coordinate_transformation_mode '{}'", mode);
}

bool nearestPicksRight(double ratio, std::string_view mode) {
  if (ratio == 1) return true;
  if (mode == "round_prefer_floor") return ratio > 0.5;
  if (mode == "round_prefer_ceil") return ratio >= 0.5;
  if (mode == "floor") return false;
  return true;  // ceil
}

std::optional<ResizeTwoTaps> resizeTwoTaps(int64_t inSize, int64_t outSize, double scale, std::string_view mode,
                                           std::string_view coordinateMode, std::string_view nearestMode) {
  // tf_crop_and_resize reads a region of interest: not two taps inside the input.
  if (coordinateMode == "tf_crop_and_resize") return std::nullopt;
  ResizeTwoTaps axis;
  for (int64_t x = 0; x < outSize; ++x) {
    auto coordinate = resizeInputCoordinate(static_cast<double>(x), inSize, scale, 0, 1, coordinateMode);
    if (!coordinate.ok() || !*coordinate) return std::nullopt;
    const double original = **coordinate;
    double left = std::floor(original);
    if (left == original) left -= 1;
    const double ratio = original - left;
    double w0 = 0, w1 = 0;
    if (mode == "linear") {
      w0 = 1 - ratio;
      w1 = ratio;
    } else {
      (nearestPicksRight(ratio, nearestMode) ? w1 : w0) = 1;
    }
    const int64_t first = static_cast<int64_t>(left);
    int64_t i0 = std::clamp<int64_t>(first, 0, inSize - 1), i1 = std::clamp<int64_t>(first + 1, 0, inSize - 1);
    // Both taps clamped onto one element (an axis of size 1) read it once.
    if (i0 == i1) {
      w0 += w1;
      w1 = 0;
    }
    // A zero-weight tap is dropped, as in the reference; keep the live one in slot 0.
    if (w0 == 0) {
      i0 = i1;
      w0 = w1;
      w1 = 0;
    }
    if (w1 == 0) i1 = i0;
    axis.index0.push_back(i0);
    axis.index1.push_back(i1);
    axis.weight0.push_back(static_cast<float>(w0));
    axis.weight1.push_back(static_cast<float>(w1));
  }
  return axis;
}

bool resizeKeepsAxis(const ResizeTwoTaps &taps, int64_t inSize) {
  if (static_cast<int64_t>(taps.index0.size()) != inSize) return false;
  for (size_t i = 0; i < taps.index0.size(); ++i) {
    if (taps.index0[i] != static_cast<int64_t>(i) || taps.weight0[i] != 1.0f || taps.weight1[i] != 0.0f) return false;
  }
  return true;
}

}  // namespace tessel
