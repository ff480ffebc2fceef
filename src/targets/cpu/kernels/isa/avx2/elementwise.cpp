// The elementwise loops of elementwise_impl.h compiled with -mavx2 -mfma.
#include "targets/cpu/kernels/elementwise_impl.h"

namespace tessel::cpu {

extern const ElementwiseKernels kElementwiseAvx2;
const ElementwiseKernels kElementwiseAvx2 = {"f32_elementwise__avx2_fma", Isa::Avx2 | Isa::Fma, &unaryLoop, &binaryLoop, &selectLoop};

}  // namespace tessel::cpu
