// Helpers for writing kernel references (kernel_def.h runReference): the text-IR spelling of a
// float32 tensor type, and the error tolerances the kernel families share.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "targets/nc/isa/instruction.h"
#include "targets/nc/kernels/kernel_def.h"

namespace tessel::nc::kernels {

/// The text-IR type of a float32 tensor, e.g. "f32[128,512]".
std::string irFloatType(const std::vector<int64_t> &shape);

/// A one-function text-IR model (ai.onnx opset 17) whose parameters are `inputs` as float32
/// %<name> values (their HostTensor names and shapes) and whose body is `body`, which must define
/// the values listed in `outputs` (comma-separated, e.g. "%out").
std::string irModel(const std::vector<HostTensor> &inputs, const std::string &body, const std::string &outputs = "%out");

/// Tolerances of kernels whose results are rounded once or twice to the kernel dtype from fp32 math:
/// bf16/f16 ~1e-2, f32 ~1e-4 (ACT functions and DVE arithmetic are fp32).
double streamingAbsTolerance(DType dtype);
double streamingRelTolerance(DType dtype);

}  // namespace tessel::nc::kernels
