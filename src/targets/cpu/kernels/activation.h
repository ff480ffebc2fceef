// The activations the fused ops carry (ops/activation.h), applied in place over a run of floats. GEMM
// and convolution epilogues call this on each output block while it is still in cache.
#pragma once

#include <cstdint>

#include "ops/activation.h"
#include "targets/cpu/kernels/elementwise.h"

namespace tessel::cpu {

/// The unary op computing `spec`, with its parameters in *params.
UnaryOp unaryOpOf(const Activation &spec, UnaryParams *params);

/// x[i] = act(x[i]) for i in [0, n), with the host's best vector code (single-threaded: epilogues
/// call it per output block from their own task).
void applyActivation(const Activation &spec, float *x, int64_t n);

}  // namespace tessel::cpu
