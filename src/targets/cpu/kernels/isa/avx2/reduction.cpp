// The reduction loops of reduction_impl.h compiled with -mavx2 -mfma.
#include "targets/cpu/kernels/reduction_impl.h"

namespace tessel::cpu {

extern const ReductionKernels kReductionAvx2;
const ReductionKernels kReductionAvx2 = {"f32_reduction__avx2_fma", Isa::Avx2 | Isa::Fma, &reduceRowLoop, &accumulateLoop};

}  // namespace tessel::cpu
