// Calibration in one run over the samples for min/max, and a second for percentiles: the histogram
// needs the whole range before its first value, and keeping every value instead would hold all
// activations of all samples in memory.
#include "quantize/calibrate.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <span>

#include "quantize/value_probe.h"

namespace tessel {

namespace {

constexpr int64_t kHistogramBins = 2048;

/// Counts of values in equal bins over [lo, hi].
struct Histogram {
  double lo = 0, hi = 0;
  std::vector<uint64_t> counts = std::vector<uint64_t>(kHistogramBins, 0);
  uint64_t total = 0;

  double binWidth() const { return (hi - lo) / kHistogramBins; }
  void add(double x) {
    const double at = hi > lo ? (x - lo) / binWidth() : 0;
    counts[static_cast<size_t>(std::clamp<double>(std::floor(at), 0, kHistogramBins - 1))]++;
    ++total;
  }
  /// The upper edge of the bin where the share `fraction` of the values is reached.
  double upperBound(double fraction) const {
    uint64_t seen = 0;
    for (size_t i = 0; i < counts.size(); ++i) {
      seen += counts[i];
      if (static_cast<double>(seen) >= fraction * static_cast<double>(total)) return lo + binWidth() * static_cast<double>(i + 1);
    }
    return hi;
  }
  /// The lower edge of the bin where more than the share `fraction` of the values is reached.
  double lowerBound(double fraction) const {
    uint64_t seen = 0;
    for (size_t i = 0; i < counts.size(); ++i) {
      seen += counts[i];
      if (static_cast<double>(seen) > fraction * static_cast<double>(total)) return lo + binWidth() * static_cast<double>(i);
    }
    return lo;
  }
};

using TensorVisitor = std::function<void(const std::string &name, std::span<const float> values)>;

/// Runs the probe on every sample and hands each tensor's values to `visit`.
Status visitSamples(ValueProbe &probe, const std::vector<std::string> &tensors,
                    const std::vector<CalibrationSample> &samples, const TensorVisitor &visit) {
  for (const CalibrationSample &sample : samples) {
    auto values = probe.run(sample.feeds);
    if (!values.ok()) return withLocation(values.status(), SourceLoc::inFile(sample.source));
    for (const std::string &name : tensors) {
      auto it = values->find(name);
      if (it == values->end() || it->second.dtype() != DType::Float32) {
        return makeFileError(ErrorCode::TypeMismatch, sample.source, "value '{}' is not an f32 tensor in this run", name);
      }
      visit(name, it->second.span<float>());
    }
  }
  return Status::success();
}

}  // namespace

Expected<std::map<std::string, FloatRange>> calibrateRanges(const Model &model, const std::vector<std::string> &tensors,
                                                            const std::vector<CalibrationSample> &samples,
                                                            const CalibrationOptions &options) {
  TESSEL_ASSIGN_OR_RETURN(ValueProbe probe, ValueProbe::create(model, tensors, options.target));
  constexpr float kInf = std::numeric_limits<float>::infinity();
  std::map<std::string, FloatRange> ranges;
  for (const std::string &name : tensors) ranges[name] = {kInf, -kInf};
  TESSEL_RETURN_IF_ERROR(visitSamples(probe, tensors, samples, [&](const std::string &name, std::span<const float> xs) {
    FloatRange &r = ranges[name];
    for (float x : xs) {
      if (!std::isfinite(x)) continue;
      r.min = std::min(r.min, x);
      r.max = std::max(r.max, x);
    }
  }));
  // A tensor with no finite value (or no elements) has the empty range.
  for (auto &[name, r] : ranges)
    if (r.min > r.max) r = {0, 0};
  if (options.method == CalibrationMethod::MinMax) return ranges;

  std::map<std::string, Histogram> histograms;
  for (auto &[name, r] : ranges) {
    Histogram &h = histograms[name];
    h.lo = options.symmetric ? 0.0 : r.min;
    h.hi = options.symmetric ? std::max(std::fabs(r.min), std::fabs(r.max)) : r.max;
  }
  TESSEL_RETURN_IF_ERROR(visitSamples(probe, tensors, samples, [&](const std::string &name, std::span<const float> xs) {
    Histogram &h = histograms[name];
    for (float x : xs)
      if (std::isfinite(x)) h.add(options.symmetric ? std::fabs(x) : x);
  }));
  const double keep = options.percentile / 100.0;
  for (auto &[name, r] : ranges) {
    const Histogram &h = histograms[name];
    const float hi = static_cast<float>(h.upperBound(keep));
    r = options.symmetric ? FloatRange{-hi, hi} : FloatRange{static_cast<float>(h.lowerBound(1.0 - keep)), hi};
  }
  return ranges;
}

}  // namespace tessel
