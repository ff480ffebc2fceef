// The int8 channels-last depthwise loop (depthwise_conv_s8_impl.h) compiled with this folder's ISA flags.
// Without FP traps GCC may evaluate both sides of the requantization's clamps, which lets it
// vectorize them (as in quantize.cpp); nothing here reads FP exception flags or errno.
#pragma GCC optimize("no-trapping-math", "no-math-errno")
#define TESSEL_DEPTHWISE_S8_FN depthwiseS8Rows__avx2
#define TESSEL_DEPTHWISE_NHWC_LANES 8
#define TESSEL_DEPTHWISE_NHWC_PIXELS 4
#include "targets/cpu/kernels/depthwise_conv_s8_impl.h"
