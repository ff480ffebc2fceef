// Elementwise kernels: binary add/mul/sub/max over [R, C] with optional broadcasting of the second
// input (a [1, C] row or an [R, 1] column), and unary activations (gelu, silu, relu) on ACT.
#pragma once

#include <vector>

#include "targets/nc/kernels/kernel_def.h"

namespace tessel::nc::kernels {

/// "add", "mul", "sub", "max" (option broadcast=none|row|col), "gelu", "silu", "relu".
std::vector<KernelDef> elementwiseKernels();

}  // namespace tessel::nc::kernels
