// A dynamically quantized model's products in float32: the accelerator's form of onnxruntime's
// quantize_dynamic output (its PE multiplies floats; it has no integer tensors).
#pragma once

#include "ir/graph.h"
#include "support/diagnostic.h"

namespace tessel {

/// For each DynamicQuantizeLinear whose uint8 values feed only ConvInteger / MatMulInteger nodes
/// (its own zero point as theirs, constant weights and weight zero points) whose int32 results only
/// Casts to float32 read: the quantization becomes tessel DynamicQuantizeCentered (the values less
/// their zero point, as float32 integers in [-255, 255], and the same scale), and each product with
/// its Casts a float Conv / MatMul over the weights less their zero points. Exact: every product and
/// partial sum is an integer, exact in float32 below 2^24 (255 * 255 * K; beyond that the float sum
/// rounds as the Cast of the int32 sum would). Not in the -O pipelines: on the cpu the int8 kernels
/// are faster. Returns whether anything was rewritten.
Expected<bool> floatDynamicQuantization(Model &model);

}  // namespace tessel
