// The elementwise loops of the cpu target's quantized ops (ops/quantization.cpp): the two passes of
// DynamicQuantizeLinear (the range, then float -> u8), and the conversions that let ConvInteger and
// MatMulInteger run on the f32 convolution and GEMM kernels (u8/s8 minus a zero point -> f32, and
// the f32 sums, which hold integers, -> i32). Each a flat loop in three ISA variants (AVX-512,
// AVX2+FMA, portable) chosen at run time, plus the threaded drivers the steps call.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "support/thread_pool.h"
#include "targets/cpu/kernels/cpu_features.h"

namespace tessel::cpu {

/// QLinearAdd's parameters: a's, b's and y's scale and zero point.
struct QuantizedAddParams {
  float aScale = 1.0f, aZero = 0.0f, bScale = 1.0f, bZero = 0.0f, yScale = 1.0f, yZero = 0.0f;
};

/// One ISA variant of the quantization loops.
struct QuantizeKernels {
  const char *name;
  Isa isa;
  /// *lo = min(*lo, x[i]) and *hi = max(*hi, x[i]) over i < n, comparing as std::min/std::max do
  /// (a NaN never replaces a bound).
  void (*range)(const float *x, int64_t n, float *lo, float *hi);
  /// y[i] = clamp(round_half_to_even(x[i] / scale) + zeroPoint, 0, 255), the division in float32.
  /// Precondition: scale > 0, zeroPoint an integer in [0, 255].
  void (*quantizeU8)(const float *x, float scale, float zeroPoint, uint8_t *y, int64_t n);
  /// The same into s8: clamp(..., -128, 127). Precondition: zeroPoint an integer in [-128, 127].
  void (*quantizeS8)(const float *x, float scale, float zeroPoint, int8_t *y, int64_t n);
  /// y[i] = (float(x[i]) - zeroPoint) * scale: DequantizeLinear, one rounding as the reference has.
  void (*dequantizeU8)(const uint8_t *x, float scale, float zeroPoint, float *y, int64_t n);
  void (*dequantizeS8)(const int8_t *x, float scale, float zeroPoint, float *y, int64_t n);
  /// y[i] = clamp(round_half_to_even(float(acc[i] + bias) * multiplier) + zeroPoint, 0, 255): an int32
  /// product requantized to u8 (QLinearConv, QLinearMatMul), the multiplier x_scale * w_scale / y_scale.
  void (*requantizeU8)(const int32_t *acc, int32_t bias, float multiplier, float zeroPoint, uint8_t *y, int64_t n);
  void (*requantizeS8)(const int32_t *acc, int32_t bias, float multiplier, float zeroPoint, int8_t *y, int64_t n);
  /// The same with one bias and multiplier per element: a row of a matmul with per-column scales.
  void (*requantizeColumnsU8)(const int32_t *acc, const int32_t *bias, const float *multiplier, float zeroPoint,
                              uint8_t *y, int64_t n);
  void (*requantizeColumnsS8)(const int32_t *acc, const int32_t *bias, const float *multiplier, float zeroPoint,
                              int8_t *y, int64_t n);
  /// y[i] = QuantizeLinear(DequantizeLinear(a[i]) + DequantizeLinear(b[i])) in float32 (QLinearAdd),
  /// all of one 8-bit type.
  void (*addQuantizedU8)(const uint8_t *a, const uint8_t *b, const QuantizedAddParams &p, uint8_t *y, int64_t n);
  void (*addQuantizedS8)(const int8_t *a, const int8_t *b, const QuantizedAddParams &p, int8_t *y, int64_t n);
  /// y[i] = float(x[i]) - zeroPoint (exact: both are small integers).
  void (*centerU8)(const uint8_t *x, float zeroPoint, float *y, int64_t n);
  void (*centerS8)(const int8_t *x, float zeroPoint, float *y, int64_t n);
  /// Replaces n floats that hold integers of magnitude below 2^31 by the same values as int32, in
  /// place (`data` holds the floats on entry, the int32s on return).
  void (*int32FromFloat)(std::byte *data, int64_t n);
  /// The same for sums split in two: data[i] = int32(data[i]) * 2^shift + int32(low[i]), in
  /// 32-bit two's complement (exact when the true value fits in int32).
  void (*int32FromSplitSums)(std::byte *data, const float *low, int shift, int64_t n);
};

/// Every variant, best first, including those the host cannot run.
std::span<const QuantizeKernels *const> quantizeKernelVariants();
/// The first variant the host (as capped by TESSEL_CPU_ISA) can run.
const QuantizeKernels &quantizeKernels();

/// Scratch dynamicQuantizeU8 needs (one range per task).
size_t dynamicQuantizeScratchBytes();

/// DynamicQuantizeLinear: the range of x widened to include 0 gives scale = (hi - lo) / 255 and the
/// zero point round(-lo / scale) clamped to [0, 255]; y = quantizeU8(x, scale, zeroPoint). The
/// same float32 arithmetic as the ONNX definition, so results are bit-exact. `scratch` holds
/// dynamicQuantizeScratchBytes bytes, 64-byte aligned. Threaded.
void dynamicQuantizeU8(const QuantizeKernels &kernels, const float *x, int64_t n, uint8_t *y, float *scale,
                       uint8_t *zeroPoint, std::byte *scratch, ThreadPool *pool);

/// y[i] = float(x[i]) - zeroPoint for u8 (`isSigned` false) or s8 x, threaded.
void centerQuantized(const QuantizeKernels &kernels, const void *x, bool isSigned, float zeroPoint, float *y,
                     int64_t n, ThreadPool *pool);

/// QuantizeLinear of n floats into u8 (`isSigned` false) or s8 with one scale and zero point,
/// threaded.
void quantizeLinear(const QuantizeKernels &kernels, const float *x, float scale, float zeroPoint, bool isSigned,
                    void *y, int64_t n, ThreadPool *pool);

/// DequantizeLinear of n u8 or s8 values with one scale and zero point, threaded.
void dequantizeLinear(const QuantizeKernels &kernels, const void *x, bool isSigned, float scale, float zeroPoint,
                      float *y, int64_t n, ThreadPool *pool);

/// QLinearAdd of n u8 (`isSigned` false) or s8 values, threaded.
void addQuantized(const QuantizeKernels &kernels, const void *a, const void *b, bool isSigned,
                  const QuantizedAddParams &params, void *y, int64_t n, ThreadPool *pool);

/// int32FromFloat over n elements, threaded.
void int32FromFloat(const QuantizeKernels &kernels, std::byte *data, int64_t n, ThreadPool *pool);

/// int32FromSplitSums over n elements, threaded.
void int32FromSplitSums(const QuantizeKernels &kernels, std::byte *data, const float *low, int shift, int64_t n,
                        ThreadPool *pool);

}  // namespace tessel::cpu
