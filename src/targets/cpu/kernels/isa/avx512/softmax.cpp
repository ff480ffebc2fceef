// The softmax loops of softmax_impl.h compiled with -mavx512f and friends.
#include "targets/cpu/kernels/softmax_impl.h"

namespace tessel::cpu {

extern const SoftmaxKernels kSoftmaxAvx512;
const SoftmaxKernels kSoftmaxAvx512 = {"f32_softmax__avx512", Isa::Avx512 | Isa::Fma, &softmaxRow, &softmaxColumns};

}  // namespace tessel::cpu
