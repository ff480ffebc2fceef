// Resize's geometry, stated once for every target: where an output coordinate falls in the input
// (coordinate_transformation_mode) and which neighbour a nearest_mode picks. The reference kernel
// and the cpu kernel's tables both read these, so both pick the same source elements.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "support/diagnostic.h"

namespace tessel {

/// The input coordinate output coordinate `x` maps to along an axis of `inSize` resized by `scale`;
/// nullopt for tf_crop_and_resize outside its crop region [roiStart, roiEnd] (fractions of the axis).
/// `resized` is scale * inSize as the specification computes it (not rounded to the output size).
Expected<std::optional<double>> resizeInputCoordinate(double x, int64_t inSize, double scale, double roiStart,
                                                      double roiEnd, std::string_view mode);

/// Whether nearest_mode `mode` picks the right neighbour for a coordinate `ratio` in (0, 1] past
/// the left one (the left neighbour sits strictly below the coordinate, so ratio 1 is exact).
bool nearestPicksRight(double ratio, std::string_view mode);

/// Nearest or linear resampling along one axis as two taps per output coordinate: input indices
/// index0/index1 (edge-clamped) with weights weight0/weight1, the left neighbour strictly below the
/// coordinate as the reference kernel takes it. A tap of weight 0 is dropped: index1 = index0 and
/// weight1 = 0, the live tap in slot 0. What the cpu kernel's tables and the accelerator's resize
/// read, so both pick the reference's source elements.
struct ResizeTwoTaps {
  std::vector<int64_t> index0, index1;
  std::vector<float> weight0, weight1;
};

/// The taps of every output coordinate for `mode` nearest or linear; nullopt for a coordinate mode
/// that maps a coordinate outside the input (tf_crop_and_resize) or an unknown one.
std::optional<ResizeTwoTaps> resizeTwoTaps(int64_t inSize, int64_t outSize, double scale, std::string_view mode,
                                           std::string_view coordinateMode, std::string_view nearestMode);

/// Whether the taps keep an axis of `inSize` as it is: each coordinate reads itself with weight 1.
bool resizeKeepsAxis(const ResizeTwoTaps &taps, int64_t inSize);

}  // namespace tessel
