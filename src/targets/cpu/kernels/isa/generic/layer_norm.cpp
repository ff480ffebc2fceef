// The layer norm loops of layer_norm_impl.h compiled with baseline flags.
// Before every include, so all functions of this file share the options (GCC does not inline
// across different ones): without FP traps GCC may evaluate both sides of a select, which is what
// lets it if-convert and vectorize the branch-free math of vector_math.h for AVX2 and SSE; without
// errno, sqrt is one instruction. Nothing here reads FP exception flags or errno.
#pragma GCC optimize("no-trapping-math", "no-math-errno")
#include "targets/cpu/kernels/layer_norm_impl.h"

namespace tessel::cpu {

extern const LayerNormKernels kLayerNormGeneric;
const LayerNormKernels kLayerNormGeneric = {"f32_layer_norm__generic", Isa::None, &layerNormRow, &rmsNormRow};

}  // namespace tessel::cpu
