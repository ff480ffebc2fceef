// How far a quantized model's values are from the fp32 model's: both run on the same samples, and
// each pair of values is compared as a whole (max abs error, relative L2 error, cosine similarity).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "quantize/calibration_data.h"

namespace tessel {

/// The difference between a reference tensor and an approximation of it, over every sample.
struct ErrorStats {
  double maxAbs = 0;
  double relativeL2 = 0;  // ||got - ref|| / ||ref||; 0 when both are zero.
  double cosine = 1;      // <got, ref> / (||got|| ||ref||); 1 when both are zero, 0 when one is.
};

/// Sums over the samples from which ErrorStats come.
class ErrorAccumulator {
 public:
  /// Adds one sample. Precondition: f32 tensors with the same element count.
  void add(const Tensor &reference, const Tensor &got);
  ErrorStats stats() const;

 private:
  double maxAbs_ = 0, diffSquared_ = 0, refSquared_ = 0, gotSquared_ = 0, dot_ = 0;
};

/// A value of the fp32 model and the one in the quantized model that stands for it.
struct ComparedValue {
  std::string reference;
  std::string quantized;
};

/// Runs `reference` on `referenceTarget` and `quantized` on the ref target (which runs
/// QuantizeLinear and DequantizeLinear as ONNX defines them) on every sample, and compares each
/// pair. Fails, naming the sample's folder, when a run fails or a pair differs in shape or dtype.
Expected<std::vector<ErrorStats>> measureError(const Model &reference, const Model &quantized,
                                               const std::vector<ComparedValue> &values,
                                               const std::vector<CalibrationSample> &samples,
                                               const std::string &referenceTarget);

}  // namespace tessel
