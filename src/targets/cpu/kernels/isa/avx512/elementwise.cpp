// The elementwise loops of elementwise_impl.h compiled with -mavx512f and friends.
#include "targets/cpu/kernels/elementwise_impl.h"

namespace tessel::cpu {

extern const ElementwiseKernels kElementwiseAvx512;
const ElementwiseKernels kElementwiseAvx512 = {"f32_elementwise__avx512", Isa::Avx512 | Isa::Fma, &unaryLoop, &binaryLoop, &selectLoop};

}  // namespace tessel::cpu
