// The contract between the pooling driver (pool.cpp) and its per-ISA builds
// (isa/<family>/pool_2d.cpp). Included by translation units compiled with AVX flags, so it holds
// only plain structs and declarations (see gemm_microkernel.h for why).
#pragma once

#include <cstdint>

namespace tessel::cpu {

/// One plane of a windowed pool.
struct PoolPlaneArgs {
  const float *x = nullptr;  // inHeight x inWidth.
  float *y = nullptr;        // outHeight x outWidth.
  int64_t inHeight = 0, inWidth = 0, outHeight = 0, outWidth = 0;
  int64_t kernelHeight = 0, kernelWidth = 0;
  int64_t strideHeight = 1, strideWidth = 1, dilationHeight = 1, dilationWidth = 1;
  int64_t padTop = 0, padLeft = 0, padBottom = 0, padRight = 0;
  bool countIncludePad = false;  // AveragePool only.
};

/// The per-ISA entry points: a windowed max or average plane, and a plane's sum or maximum.
struct PoolFunctions {
  void (*maxPlane)(const PoolPlaneArgs &args);
  void (*averagePlane)(const PoolPlaneArgs &args);
  float (*sum)(const float *x, int64_t n);
  float (*max)(const float *x, int64_t n);
};

extern const PoolFunctions kPoolFunctions__avx512;
extern const PoolFunctions kPoolFunctions__avx2;
extern const PoolFunctions kPoolFunctions__generic;

}  // namespace tessel::cpu
