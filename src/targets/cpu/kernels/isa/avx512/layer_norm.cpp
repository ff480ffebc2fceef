// The layer norm loops of layer_norm_impl.h compiled with -mavx512f and friends.
#include "targets/cpu/kernels/layer_norm_impl.h"

namespace tessel::cpu {

extern const LayerNormKernels kLayerNormAvx512;
const LayerNormKernels kLayerNormAvx512 = {"f32_layer_norm__avx512", Isa::Avx512 | Isa::Fma, &layerNormRow};

}  // namespace tessel::cpu
