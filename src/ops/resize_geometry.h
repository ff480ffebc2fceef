// Resize's geometry, stated once for every target: where an output coordinate falls in the input
// (coordinate_transformation_mode) and which neighbour a nearest_mode picks. The reference kernel
// and the cpu kernel's tables both read these, so both pick the same source elements.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

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

}  // namespace tessel
