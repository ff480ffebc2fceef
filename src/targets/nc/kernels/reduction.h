// Row reductions: [R, C] -> [R] over the last dim.
#pragma once

#include <vector>

#include "targets/nc/kernels/kernel_def.h"

namespace tessel::nc::kernels {

/// "reduce_sum" and "reduce_max".
std::vector<KernelDef> reductionKernels();

}  // namespace tessel::nc::kernels
