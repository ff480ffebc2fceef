// The pooling loops (pool_impl.h) compiled with this folder's ISA flags.
#define TESSEL_POOL_FUNCTIONS kPoolFunctions__generic
#include "targets/cpu/kernels/pool_impl.h"
