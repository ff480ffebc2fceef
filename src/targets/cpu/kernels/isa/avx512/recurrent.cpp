// The recurrent per-step loops of recurrent_impl.h compiled with -mavx512f.
// Before every include, so all functions of this file share the options (GCC does not inline
// across different ones): without FP traps GCC may evaluate both sides of a select, which is what
// lets it if-convert and vectorize the branch-free math of vector_math.h.
#pragma GCC optimize("no-trapping-math", "no-math-errno")
#include "targets/cpu/kernels/recurrent_impl.h"

namespace tessel::cpu {

extern const RecurrentKernels kRecurrentAvx512;
const RecurrentKernels kRecurrentAvx512 = {"f32_recurrent__avx512", Isa::Avx512 | Isa::Fma, &recurrentMatVec, &lstmCellLoop,
                                        &gruCellLinearLoop, &gruGatesLoop, &gruUpdateLoop, &rnnCellLoop};

}  // namespace tessel::cpu
