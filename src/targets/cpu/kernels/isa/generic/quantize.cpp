// The quantization loops of quantize_impl.h compiled with baseline flags.
// Before every include, so all functions of this file share the options (GCC does not inline
// across different ones): without FP traps GCC may evaluate both sides of a select, which is what
// lets it if-convert and vectorize the clamps. Nothing here reads FP exception flags or errno.
// The pragma also resets GCC's contraction to fused multiply-adds, which would round the QLinearAdd
// sum differently from the reference's: fp-contract=off restates what -std=c++20 gives.
#pragma GCC optimize("no-trapping-math", "no-math-errno", "fp-contract=off")
#include "targets/cpu/kernels/quantize_impl.h"

namespace tessel::cpu {

extern const QuantizeKernels kQuantizeGeneric;
const QuantizeKernels kQuantizeGeneric = {"quantize__generic", Isa::None, &rangeLoop, &quantizeU8Loop,
    &quantizeS8Loop, &dequantizeU8Loop, &dequantizeS8Loop, &requantizeU8Loop, &requantizeS8Loop,
    &requantizeColumnsU8Loop, &requantizeColumnsS8Loop,
    &addQuantizedU8Loop, &addQuantizedS8Loop,
    &centerU8Loop, &centerS8Loop, &int32FromFloatLoop, &int32FromSplitSumsLoop};

}  // namespace tessel::cpu
