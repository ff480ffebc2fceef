// The error report's arithmetic, in double, summed over samples so the figures cover the whole
// calibration set without keeping its values.
#include "quantize/quantize_error.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "quantize/value_probe.h"

namespace tessel {

void ErrorAccumulator::add(const Tensor &reference, const Tensor &got) {
  const float *r = reference.data<float>();
  const float *g = got.data<float>();
  for (int64_t i = 0; i < reference.numel(); ++i) {
    const double ri = r[i], gi = g[i];
    maxAbs_ = std::max(maxAbs_, std::fabs(gi - ri));
    diffSquared_ += (gi - ri) * (gi - ri);
    refSquared_ += ri * ri;
    gotSquared_ += gi * gi;
    dot_ += ri * gi;
  }
}

ErrorStats ErrorAccumulator::stats() const {
  ErrorStats s;
  s.maxAbs = maxAbs_;
  if (refSquared_ > 0) s.relativeL2 = std::sqrt(diffSquared_ / refSquared_);
  else s.relativeL2 = diffSquared_ > 0 ? std::numeric_limits<double>::infinity() : 0;
  if (refSquared_ > 0 && gotSquared_ > 0) s.cosine = dot_ / std::sqrt(refSquared_ * gotSquared_);
  else s.cosine = refSquared_ == gotSquared_ ? 1 : 0;
  return s;
}

Expected<std::vector<ErrorStats>> measureError(const Model &reference, const Model &quantized,
                                               const std::vector<ComparedValue> &values,
                                               const std::vector<CalibrationSample> &samples,
                                               const std::string &referenceTarget) {
  std::vector<std::string> referenceNames, quantizedNames;
  for (const ComparedValue &v : values) {
    referenceNames.push_back(v.reference);
    quantizedNames.push_back(v.quantized);
  }
  TESSEL_ASSIGN_OR_RETURN(ValueProbe referenceProbe, ValueProbe::create(reference, referenceNames, referenceTarget));
  TESSEL_ASSIGN_OR_RETURN(ValueProbe quantizedProbe, ValueProbe::create(quantized, quantizedNames, "ref"));
  std::vector<ErrorAccumulator> sums(values.size());
  for (const CalibrationSample &sample : samples) {
    auto want = referenceProbe.run(sample.feeds);
    if (!want.ok()) return withLocation(want.status(), SourceLoc::inFile(sample.source)).diag();
    auto got = quantizedProbe.run(sample.feeds);
    if (!got.ok()) return withLocation(got.status(), SourceLoc::inFile(sample.source)).diag();
    for (size_t i = 0; i < values.size(); ++i) {
      const Tensor &r = (*want)[values[i].reference];
      const Tensor &g = (*got)[values[i].quantized];
      if (r.dtype() != DType::Float32 || g.dtype() != DType::Float32 || r.sizes() != g.sizes()) {
        return makeFileError(ErrorCode::Internal, sample.source, "'{}' is {}{} in the fp32 model but '{}' is {}{} in the quantized one",
                             values[i].reference, dtypeName(r.dtype()), formatSizes(r.sizes()), values[i].quantized,
                             dtypeName(g.dtype()), formatSizes(g.sizes()));
      }
      sums[i].add(r, g);
    }
  }
  std::vector<ErrorStats> stats;
  for (const ErrorAccumulator &sum : sums) stats.push_back(sum.stats());
  return stats;
}

}  // namespace tessel
