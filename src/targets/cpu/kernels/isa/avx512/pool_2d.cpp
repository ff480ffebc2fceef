// The pooling loops (pool_impl.h) compiled with this folder's ISA flags.
#define TESSEL_POOL_FUNCTIONS kPoolFunctions__avx512
#include "targets/cpu/kernels/pool_impl.h"
