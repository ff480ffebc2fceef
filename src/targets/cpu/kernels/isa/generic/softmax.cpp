// The softmax loops of softmax_impl.h compiled with baseline flags.
#include "targets/cpu/kernels/softmax_impl.h"

namespace tessel::cpu {

extern const SoftmaxKernels kSoftmaxGeneric;
const SoftmaxKernels kSoftmaxGeneric = {"f32_softmax__generic", Isa::None, &softmaxRow, &softmaxColumns};

}  // namespace tessel::cpu
