// The channels-last pooling loops (pool_nhwc_impl.h) compiled with this folder's ISA flags.
#define TESSEL_POOL_NHWC_FUNCTIONS kPoolNhwcFunctions__generic
#include "targets/cpu/kernels/pool_nhwc_impl.h"
