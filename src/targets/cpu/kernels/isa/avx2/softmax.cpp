// The softmax loops of softmax_impl.h compiled with -mavx2 -mfma.
#include "targets/cpu/kernels/softmax_impl.h"

namespace tessel::cpu {

extern const SoftmaxKernels kSoftmaxAvx2;
const SoftmaxKernels kSoftmaxAvx2 = {"f32_softmax__avx2_fma", Isa::Avx2 | Isa::Fma, &softmaxRow, &softmaxColumns};

}  // namespace tessel::cpu
