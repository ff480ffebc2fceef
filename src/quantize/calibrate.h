// Calibration: the fp32 model runs on every calibration sample and each tensor to be quantized gets
// a range, from its minimum and maximum or from a percentile of its values.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "quantize/calibration_data.h"
#include "quantize/quant_params.h"

namespace tessel {

enum class CalibrationMethod { MinMax, Percentile };

struct CalibrationOptions {
  CalibrationMethod method = CalibrationMethod::MinMax;
  /// Percentile: the share of values, in percent, the range keeps.
  double percentile = 99.99;
  /// Percentile: the range is +-(that percentile of |x|); otherwise it runs from the (100 - p)th to
  /// the pth percentile of x.
  bool symmetric = false;
  /// The target the fp32 model runs on.
  std::string target = "cpu";
};

/// The range of each of `tensors` (f32 values of the main graph) over all `samples`: their min and
/// max, or with CalibrationMethod::Percentile the percentile bounds read from a 2048-bin histogram
/// over [min, max] (a second run over the samples). NaN and infinities are left out. Fails when the
/// model does not run on a sample, naming the sample's folder.
Expected<std::map<std::string, FloatRange>> calibrateRanges(const Model &model, const std::vector<std::string> &tensors,
                                                            const std::vector<CalibrationSample> &samples,
                                                            const CalibrationOptions &options);

}  // namespace tessel
