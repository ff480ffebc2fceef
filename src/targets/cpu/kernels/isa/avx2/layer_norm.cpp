// The layer norm loops of layer_norm_impl.h compiled with -mavx2 -mfma.
#include "targets/cpu/kernels/layer_norm_impl.h"

namespace tessel::cpu {

extern const LayerNormKernels kLayerNormAvx2;
const LayerNormKernels kLayerNormAvx2 = {"f32_layer_norm__avx2_fma", Isa::Avx2 | Isa::Fma, &layerNormRow};

}  // namespace tessel::cpu
