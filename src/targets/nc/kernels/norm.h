// Normalization kernels over the last dim of [R, C]: layernorm (gamma, beta) and rmsnorm (gamma).
#pragma once

#include <vector>

#include "targets/nc/kernels/kernel_def.h"

namespace tessel::nc::kernels {

/// "layernorm" (option eps, default 1e-5) and "rmsnorm" (option eps, default 1e-6).
std::vector<KernelDef> normKernels();

}  // namespace tessel::nc::kernels
