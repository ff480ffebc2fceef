// The QDQ form of a model, as onnxruntime's quantize_static (QuantFormat.QDQ) writes it: which tensors
// around the Conv, MatMul and Gemm nodes are quantized (planQdq), and the QuantizeLinear ->
// DequantizeLinear pairs and integer constants put in for them (applyQdq). Everything else stays f32.
// Names follow ORT: <t>_quantized, <t>_scale, <t>_zero_point, <t>_dequantized.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "quantize/quant_params.h"

namespace tessel {

/// What is quantized around one Conv, MatMul or Gemm.
struct QdqNodePlan {
  Node *node = nullptr;
  std::vector<Value *> activations;  // Its non-constant data inputs (0 and 1): uint8 (or int8) per tensor.
  Value *output = nullptr;           // Its output, or that of a Relu or Clip that is its only reader.
  Value *weight = nullptr;           // Constant input 1 (Conv W, MatMul B, Gemm B): int8 symmetric.
  int64_t weightAxis = -1;           // The weight's output-channel axis; -1 when it has none.
  Value *bias = nullptr;             // Constant 1-D Conv B or Gemm C: int32 at the input's x weight's scale.
};

struct QdqPlan {
  std::vector<QdqNodePlan> nodes;
  /// The activation tensors above (inputs and outputs), each once: what calibration measures.
  std::vector<std::string> activationTensors;
};

/// The Conv, MatMul and Gemm nodes of the main graph whose data inputs and output are f32, and what
/// is quantized around each. Pointers are into `model`. Weights are initializers or Constant outputs.
QdqPlan planQdq(const Model &model);

struct QdqOptions {
  bool perChannel = true;             // Weights: one scale per output channel, else one per tensor.
  bool symmetricActivations = false;  // Activations: int8 with zero point 0, else uint8 asymmetric.
};

/// One quantized tensor, for the report.
struct QuantizedTensor {
  std::string name;         // In the f32 model.
  std::string dequantized;  // The value that reads it back in the QDQ model (the same name for a graph output).
  QuantParams params;
};

/// What was quantized around one node, for the report.
struct QuantizedNode {
  std::string name;  // The node's, or its first output's when it has none.
  std::string opType;
  std::vector<QuantizedTensor> inputs;  // Activations.
  QuantizedTensor output;
  std::optional<QuantizedTensor> weight;
  std::optional<QuantizedTensor> bias;
};

/// Rewrites `model` (the model `plan` was made from) into QDQ form, with each activation's
/// parameters from its range in `ranges` (every plan.activationTensors has one). A tensor read by
/// several nodes gets one pair; a graph output keeps its name (the DequantizeLinear gives it) and
/// its float producer's value becomes <t>_QuantizeLinear_Input, as in ORT. Float constants nothing
/// else reads are removed. Requires: ai.onnx opset >= 13 (per-axis DequantizeLinear).
std::vector<QuantizedNode> applyQdq(Model &model, const QdqPlan &plan, const std::map<std::string, FloatRange> &ranges,
                                    const QdqOptions &options);

}  // namespace tessel
