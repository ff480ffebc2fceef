// The elementwise loops of elementwise_impl.h compiled with baseline flags.
#include "targets/cpu/kernels/elementwise_impl.h"

namespace tessel::cpu {

extern const ElementwiseKernels kElementwiseGeneric;
const ElementwiseKernels kElementwiseGeneric = {"f32_elementwise__generic", Isa::None, &unaryLoop, &binaryLoop, &selectLoop};

}  // namespace tessel::cpu
