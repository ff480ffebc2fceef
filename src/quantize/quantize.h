// Static post-training quantization, the job of `tessel quantize`: calibrate an fp32 model on sample
// inputs, rewrite it into the QDQ form onnxruntime's quantize_static writes (int8 weights, uint8 or
// int8 activations, int32 biases around every Conv, MatMul and Gemm), and measure, layer by layer,
// how far the quantized model's values are from the fp32 ones.
#pragma once

#include <string>
#include <vector>

#include "quantize/calibrate.h"
#include "quantize/qdq_rewrite.h"
#include "quantize/quantize_error.h"

namespace tessel {

struct QuantizeOptions {
  CalibrationMethod method = CalibrationMethod::MinMax;
  double percentile = 99.99;          // CalibrationMethod::Percentile: the share of values the range keeps, in %.
  bool perChannel = true;             // Weights: one scale per output channel.
  bool symmetricActivations = false;  // Activations: int8 with zero point 0 instead of uint8 asymmetric.
  std::string calibrationTarget = "cpu";  // Where the fp32 model runs (calibration, the error's reference).
};

/// One quantized node with the error of its (dequantized) output.
struct QuantizedNodeReport {
  QuantizedNode node;
  ErrorStats outputError;
};

struct QuantizeReport {
  std::vector<QuantizedNodeReport> nodes;  // In graph order.
  std::vector<std::pair<std::string, ErrorStats>> modelOutputs;  // Every f32 graph output.
  size_t samples = 0;
};

struct QuantizeResult {
  Model model;  // The QDQ model, ai.onnx opset >= 13.
  QuantizeReport report;
};

/// Quantizes `model` with `samples` (readCalibrationSamples). A model below opset 13 is first
/// converted to opset 13 by ONNX's version converter. Fails when the model has no Conv, MatMul or
/// Gemm with f32 operands, when it cannot be converted, and when a run fails (naming the sample).
Expected<QuantizeResult> quantizeModel(const Model &model, const std::vector<CalibrationSample> &samples,
                                       const QuantizeOptions &options);

}  // namespace tessel
