// The four kernels of the public NKI matrix-multiplication tutorial as variants of the matmul family
// (kernel.h: same inputs a_t [K, M], b [K, N], output c [M, N], same reference): "tiled",
// "hoisted" (loads hoisted out of the inner loop), "mn-blocked" (M and N blocked) and
// "mnk-blocked" (M, N and K blocked). They are written the way the tutorial writes them, one
// dma_copy per tutorial load, so that their simulated times can be compared with the tutorial's
// published ones (accelerator-model.md section 11, anchor 2). No bias or activation.
#pragma once

#include <string>
#include <vector>

#include "support/diagnostic.h"
#include "targets/nc/kernels/kernel_def.h"

namespace tessel::nc::kernels {

/// The tutorial variants, in the tutorial's order.
const std::vector<std::string> &matmulTutorialVariants();

/// Records tutorial variant `params.variant` of the matmul family. Errors: a bias or activation
/// option, or a dim that is not a multiple of the PE tile it is split into.
Status buildMatmulTutorial(tile::KernelBuilder &builder, const KernelParams &params);

}  // namespace tessel::nc::kernels
