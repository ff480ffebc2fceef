// The calibration set of `tessel quantize`: samples read from a folder of .npy files (ir/npy.h), one
// tensor per model input, checked against the model's inputs before anything runs.
#pragma once

#include <string>
#include <vector>

#include "ir/graph.h"
#include "ir/runtime_value.h"
#include "support/diagnostic.h"

namespace tessel {

/// One calibration sample: a feed for every graph input that has no initializer.
struct CalibrationSample {
  std::string source;  // The folder it was read from.
  NamedValues feeds;
};

/// Reads the samples in `dir`: NAME.npy per model input directly in it (one sample), or, when it
/// holds no .npy files, one such folder per sample (in name order). Fails, naming the input and
/// the file, when a file is missing or its dtype or shape does not fit the input, and, naming the
/// input, when a model input is not f32 (only float inputs can be calibrated).
Expected<std::vector<CalibrationSample>> readCalibrationSamples(const Model &model, const std::string &dir);

}  // namespace tessel
