// Calibration samples from .npy files, in either layout: a flat folder (one sample) or a folder of
// sample folders. Each sample goes through checkFeedShapes, the check a run would make, so a bad
// sample fails here with its folder's name instead of halfway through calibration.
#include "quantize/calibration_data.h"

#include <algorithm>
#include <filesystem>

#include "ir/npy.h"
#include "ir/specialize.h"

namespace tessel {

namespace fs = std::filesystem;

namespace {

bool holdsNpyFiles(const fs::path &dir) {
  std::error_code ec;
  for (const auto &entry : fs::directory_iterator(dir, ec))
    if (entry.is_regular_file() && entry.path().extension() == ".npy") return true;
  return false;
}

Expected<CalibrationSample> readSample(const Model &model, const fs::path &dir) {
  CalibrationSample sample{dir.string(), {}};
  for (const Value *input : model.graph->inputs()) {
    if (input->hasInitializer()) continue;
    const fs::path file = dir / npyFileName(input->name());
    if (!fs::exists(file)) {
      return makeFileError(ErrorCode::FileNotFound, dir.string(), "no calibration data for model input '{}': {} is missing",
                           input->name(), file.string());
    }
    TESSEL_ASSIGN_OR_RETURN(Tensor tensor, readNpy(file.string()));
    sample.feeds.emplace_back(input->name(), std::move(tensor));
  }
  auto checked = checkFeedShapes(model, sample.feeds, {});
  if (!checked.ok()) {
    Diagnostic diag = checked.diag();
    diag.loc.file = dir.string();
    return diag;
  }
  return sample;
}

}  // namespace

Expected<std::vector<CalibrationSample>> readCalibrationSamples(const Model &model, const std::string &dir) {
  if (!fs::is_directory(dir)) return makeError(ErrorCode::FileNotFound, "calibration folder '{}' does not exist", dir);
  std::vector<fs::path> sampleDirs;
  if (holdsNpyFiles(dir)) {
    sampleDirs.push_back(dir);
  } else {
    std::error_code ec;
    for (const auto &entry : fs::directory_iterator(dir, ec))
      if (entry.is_directory()) sampleDirs.push_back(entry.path());
    std::sort(sampleDirs.begin(), sampleDirs.end());
  }
  if (sampleDirs.empty()) {
    return makeError(ErrorCode::InvalidArgument, "calibration folder '{}' holds neither .npy files nor sample folders", dir);
  }
  std::vector<CalibrationSample> samples;
  for (const fs::path &sampleDir : sampleDirs) {
    TESSEL_ASSIGN_OR_RETURN(CalibrationSample sample, readSample(model, sampleDir));
    samples.push_back(std::move(sample));
  }
  return samples;
}

}  // namespace tessel
