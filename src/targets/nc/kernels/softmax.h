// Softmax over the last dim of [R, C]: rows on partitions, max-subtracted exponentials with the row
// sum accumulated by ACT, scaled by the reciprocal of the sum.
#pragma once

#include <vector>

#include "targets/nc/kernels/kernel_def.h"

namespace tessel::nc::kernels {

/// "softmax" (option chunk=N: column chunk of the two-pass form used when a row does not fit SBUF).
std::vector<KernelDef> softmaxKernels();

}  // namespace tessel::nc::kernels
