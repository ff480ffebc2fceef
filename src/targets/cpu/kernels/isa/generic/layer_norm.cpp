// The layer norm loops of layer_norm_impl.h compiled with baseline flags.
#include "targets/cpu/kernels/layer_norm_impl.h"

namespace tessel::cpu {

extern const LayerNormKernels kLayerNormGeneric;
const LayerNormKernels kLayerNormGeneric = {"f32_layer_norm__generic", Isa::None, &layerNormRow};

}  // namespace tessel::cpu
