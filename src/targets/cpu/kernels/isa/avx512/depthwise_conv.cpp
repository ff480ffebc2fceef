// The depthwise plane loop (depthwise_conv_impl.h) compiled with this folder's ISA flags.
#define TESSEL_DEPTHWISE_PLANE_FN depthwisePlane__avx512
#include "targets/cpu/kernels/depthwise_conv_impl.h"
