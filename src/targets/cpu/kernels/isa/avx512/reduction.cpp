// The reduction loops of reduction_impl.h compiled with -mavx512f and friends.
#include "targets/cpu/kernels/reduction_impl.h"

namespace tessel::cpu {

extern const ReductionKernels kReductionAvx512;
const ReductionKernels kReductionAvx512 = {"f32_reduction__avx512", Isa::Avx512 | Isa::Fma, &reduceRowLoop, &accumulateLoop};

}  // namespace tessel::cpu
