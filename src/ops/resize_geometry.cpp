#include "ops/resize_geometry.h"

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

}  // namespace tessel
