// The reduction loops of reduction_impl.h compiled with baseline flags.
#include "targets/cpu/kernels/reduction_impl.h"

namespace tessel::cpu {

extern const ReductionKernels kReductionGeneric;
const ReductionKernels kReductionGeneric = {"f32_reduction__generic", Isa::None, &reduceRowLoop, &accumulateLoop};

}  // namespace tessel::cpu
