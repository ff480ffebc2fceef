// The channels-last depthwise loop (depthwise_conv_nhwc_impl.h) compiled with this folder's ISA flags.
#define TESSEL_DEPTHWISE_NHWC_FN depthwiseNhwcRows__avx2
#define TESSEL_DEPTHWISE_NHWC_LANES 8
#define TESSEL_DEPTHWISE_NHWC_PIXELS 4
#include "targets/cpu/kernels/depthwise_conv_nhwc_impl.h"
