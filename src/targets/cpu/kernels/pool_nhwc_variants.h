// The contract between the channels-last pooling driver (pool.cpp) and its per-ISA builds
// (isa/<family>/pool_nhwc.cpp). Included by translation units compiled with AVX flags, so it holds
// only plain structs and declarations (see gemm_microkernel.h for why).
#pragma once

#include <cstdint>

namespace tessel::cpu {

/// Output rows [rowBegin, rowEnd) of one image of a windowed pool, channels [channelBegin, channelEnd).
struct PoolNhwcArgs {
  const void *x = nullptr;  // One image, [inHeight, inWidth, channels], of f32 (u8 or s8 for the
  void *y = nullptr;        // byte maxima); y one image, [outHeight, outWidth, channels].
  int64_t channels = 0, channelBegin = 0, channelEnd = 0;
  int64_t rowBegin = 0, rowEnd = 0;
  int64_t inHeight = 0, inWidth = 0, outHeight = 0, outWidth = 0;
  int64_t kernelHeight = 0, kernelWidth = 0;
  int64_t strideHeight = 1, strideWidth = 1, dilationHeight = 1, dilationWidth = 1;
  int64_t padTop = 0, padLeft = 0, padBottom = 0, padRight = 0;
  bool countIncludePad = false;  // AveragePool only.
};

/// The per-ISA entry points: windowed max or average rows, and y[c] = scale * sum over `pixels`
/// pixels of x[p * channels + c] for c in [channelBegin, channelEnd).
struct PoolNhwcFunctions {
  void (*maxRows)(const PoolNhwcArgs &args);
  void (*maxRowsU8)(const PoolNhwcArgs &args);  // Quantized activations: their maximum is that of
  void (*maxRowsS8)(const PoolNhwcArgs &args);  // the dequantized values.
  void (*averageRows)(const PoolNhwcArgs &args);
  void (*scaledChannelSums)(const float *x, int64_t pixels, int64_t channels, int64_t channelBegin, int64_t channelEnd,
                            float scale, float *y);
};

extern const PoolNhwcFunctions kPoolNhwcFunctions__avx512;
extern const PoolNhwcFunctions kPoolNhwcFunctions__avx2;
extern const PoolNhwcFunctions kPoolNhwcFunctions__generic;

}  // namespace tessel::cpu
