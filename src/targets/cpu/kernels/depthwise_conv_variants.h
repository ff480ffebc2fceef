// The contract between the depthwise convolution driver (depthwise_conv.cpp) and its per-ISA
// builds (isa/<family>/depthwise_conv.cpp). Included by translation units compiled with AVX
// flags, so it holds only a plain struct and declarations (see gemm_microkernel.h for why).
#pragma once

#include <cstdint>

namespace tessel::cpu {

/// One output plane: y = conv(x plane, taps) + bias (+ residual plane), before the activation.
struct DepthwisePlaneArgs {
  const float *x = nullptr;         // inHeight x inWidth.
  const float *taps = nullptr;      // kernelHeight x kernelWidth.
  float bias = 0.0f;
  const float *residual = nullptr;  // outHeight x outWidth, or null. May equal y.
  float *y = nullptr;               // outHeight x outWidth.
  int64_t inHeight = 0, inWidth = 0, outHeight = 0, outWidth = 0;
  int64_t kernelHeight = 0, kernelWidth = 0;
  int64_t strideHeight = 1, strideWidth = 1, dilationHeight = 1, dilationWidth = 1;
  int64_t padTop = 0, padLeft = 0;
};

using DepthwisePlaneFn = void (*)(const DepthwisePlaneArgs &args);

void depthwisePlane__avx512(const DepthwisePlaneArgs &args);
void depthwisePlane__avx2(const DepthwisePlaneArgs &args);
void depthwisePlane__generic(const DepthwisePlaneArgs &args);

}  // namespace tessel::cpu
