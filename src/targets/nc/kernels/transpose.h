// Transpose [R, C] -> [C, R] on the tensor engine.
#pragma once

#include <vector>

#include "targets/nc/kernels/kernel_def.h"

namespace tessel::nc::kernels {

/// "transpose" (bf16 or f32).
std::vector<KernelDef> transposeKernels();

}  // namespace tessel::nc::kernels
