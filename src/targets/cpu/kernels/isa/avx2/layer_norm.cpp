// The layer norm loops of layer_norm_impl.h compiled with -mavx2 -mfma.
// Before every include, so all functions of this file share the options (GCC does not inline
// across different ones): without FP traps GCC may evaluate both sides of a select, which is what
// lets it if-convert and vectorize the branch-free math of vector_math.h for AVX2 and SSE; without
// errno, sqrt is one instruction. Nothing here reads FP exception flags or errno.
#pragma GCC optimize("no-trapping-math", "no-math-errno")
#include "targets/cpu/kernels/layer_norm_impl.h"

namespace tessel::cpu {

extern const LayerNormKernels kLayerNormAvx2;
const LayerNormKernels kLayerNormAvx2 = {"f32_layer_norm__avx2_fma", Isa::Avx2 | Isa::Fma, &layerNormRow, &rmsNormRow};

}  // namespace tessel::cpu
