// The quantization driver: opset upgrade, plan, calibration on the fp32 model, QDQ rewrite of a
// copy, then the error of every quantized output and model output against the fp32 model.
#include "quantize/quantize.h"

#include <onnx/version_converter/convert.h>

#include "frontend/onnx/exporter.h"
#include "frontend/onnx/importer.h"
#include "ir/clone.h"

namespace tessel {

namespace {

constexpr int64_t kQdqOpset = 13;  // The first with per-axis QuantizeLinear / DequantizeLinear.

/// `model` at opset 13 or newer: below, ONNX's version converter rewrites the ops whose form
/// changed (Softmax's axis, Squeeze's axes, ...); a bare bump of the import would change their meaning.
Expected<Model> atQdqOpset(const Model &model) {
  if (model.opsetFor("") >= kQdqOpset) return cloneModel(model);
  TESSEL_ASSIGN_OR_RETURN(onnx::ModelProto proto, exportOnnxProto(model));
  onnx::ModelProto converted;
  try {
    converted = onnx::version_conversion::ConvertVersion(proto, static_cast<int>(kQdqOpset));
  } catch (const std::exception &error) {
    return makeFileError(ErrorCode::UnsupportedOpset, model.sourcePath,
                         "QDQ needs ai.onnx opset {} (per-axis DequantizeLinear), and ONNX's version converter could "
                         "not convert this model from opset {}: {}; export the model at opset {} or newer",
                         kQdqOpset, model.opsetFor(""), error.what(), kQdqOpset);
  }
  // Opset 13 needs IR version 7.
  if (converted.ir_version() < 7) converted.set_ir_version(7);
  return importOnnxProto(std::move(converted), model.sourcePath);
}

}  // namespace

Expected<QuantizeResult> quantizeModel(const Model &model, const std::vector<CalibrationSample> &samples,
                                       const QuantizeOptions &options) {
  TESSEL_ASSIGN_OR_RETURN(Model fp32, atQdqOpset(model));
  Model qdq = cloneModel(fp32);
  const QdqPlan plan = planQdq(qdq);
  if (plan.nodes.empty()) {
    return makeFileError(ErrorCode::InvalidArgument, model.sourcePath,
                         "nothing to quantize: no Conv, MatMul or Gemm with f32 inputs and output");
  }
  const CalibrationOptions calibration{options.method, options.percentile, options.symmetricActivations,
                                       options.calibrationTarget};
  TESSEL_ASSIGN_OR_RETURN(auto ranges, calibrateRanges(fp32, plan.activationTensors, samples, calibration));
  std::vector<QuantizedNode> nodes = applyQdq(qdq, plan, ranges, {options.perChannel, options.symmetricActivations});

  // Each quantized output is compared where the int8 model would give it: after its DequantizeLinear.
  std::vector<ComparedValue> compared;
  for (const QuantizedNode &node : nodes) compared.push_back({node.output.name, node.output.dequantized});
  std::vector<std::string> outputs;
  for (const Value *output : fp32.graph->outputs()) {
    if (output->type().isTensor() && output->type().dtype() == DType::Float32) {
      outputs.push_back(output->name());
      compared.push_back({output->name(), output->name()});
    }
  }
  TESSEL_ASSIGN_OR_RETURN(std::vector<ErrorStats> errors,
                          measureError(fp32, qdq, compared, samples, options.calibrationTarget));

  QuantizeResult result{std::move(qdq), {}};
  result.report.samples = samples.size();
  for (size_t i = 0; i < nodes.size(); ++i) result.report.nodes.push_back({std::move(nodes[i]), errors[i]});
  for (size_t i = 0; i < outputs.size(); ++i) result.report.modelOutputs.emplace_back(outputs[i], errors[nodes.size() + i]);
  return result;
}

}  // namespace tessel
