// The arithmetic of linear quantization, as onnxruntime's quantize_static computes it: the scale and
// zero point of an activation from its calibrated range, and the int8 weights and int32 biases that
// replace float constants. Pure functions over tensors; qdq_rewrite.h puts the results in a graph.
#pragma once

#include <cstdint>
#include <vector>

#include "ir/tensor.h"

namespace tessel {

/// The calibrated range of a float tensor.
struct FloatRange {
  float min = 0;
  float max = 0;
};

/// How one tensor is quantized: a scale and zero point for the whole tensor (axis < 0), or one
/// per index along `axis`.
struct QuantParams {
  DType dtype = DType::UInt8;  // UInt8, Int8 or Int32: the quantized tensor's and the zero point's.
  std::vector<float> scales;
  std::vector<int32_t> zeroPoints;
  int64_t axis = -1;
  bool perAxis() const { return axis >= 0; }
};

/// An activation's parameters from its range: uint8 asymmetric (the range widened to include 0,
/// scale (max - min) / 255, zero point round(-min / scale) clamped to [0, 255]), or with
/// `symmetric` int8 (scale max|x| / 127, zero point 0). An empty range gets scale 1, as in ORT.
QuantParams activationParams(FloatRange range, bool symmetric);

/// A float constant turned into integers, with the parameters that give it back.
struct QuantizedConstant {
  Tensor values;
  QuantParams params;
};

/// An f32 weight as int8, symmetric (zero point 0, scale max|w| / 127): one scale per index along
/// `axis`, or for the whole tensor when axis < 0. Precondition: f32, and axis < rank.
QuantizedConstant quantizeWeight(const Tensor &weight, int64_t axis);

/// An f32 1-D bias as int32 at scale inputScale * weightScales[c] (zero point 0): per channel (axis
/// 0) when there are several weight scales, else one scale. Values beyond int32 saturate.
/// Precondition: f32, 1-D, and one weight scale or one per element.
QuantizedConstant quantizeBias(const Tensor &bias, float inputScale, const std::vector<float> &weightScales);

}  // namespace tessel
