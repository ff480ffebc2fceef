// Element conversions of the functional simulator (accelerator-model.md section 3): every dtype to
// fp32 on read, fp32 to every dtype on write (round-to-nearest-even for bf16/fp16/tf32/fp8, the fp8
// formats saturating as float_types.h does; float to integer truncates toward zero and saturates,
// NaN gives 0), and integers by value for the bitwise ALU ops. The run functions convert a strided
// run of elements at once; the dtype switch sits outside the loop so the common contiguous
// bf16/fp32 runs compile to vectorised loops.
#pragma once

#include <cstdint>

#include "targets/nc/isa/instruction.h"

namespace tessel::nc::functional {

/// True for the integer dtypes (u8..i32) and bool, which the bitwise ALU ops accept.
bool isIntegerDType(DType dtype);

/// Reads one element as fp32 (integers by value; bool as 0/1).
float loadElement(const uint8_t *address, DType dtype);
/// Writes fp32 `value` rounded/saturated to `dtype`.
void storeElement(uint8_t *address, DType dtype, float value);

/// Reads one element as an integer: integer dtypes by value, float dtypes truncated toward zero.
int64_t loadInteger(const uint8_t *address, DType dtype);
/// Writes the low bits of `value` to an integer dtype (two's complement wrap-around), or its value
/// converted to a float dtype.
void storeIntegerBits(uint8_t *address, DType dtype, int64_t value);
/// Writes `value` clamped to the range of an integer dtype, or converted to a float dtype.
void storeIntegerSaturating(uint8_t *address, DType dtype, int64_t value);
/// Wraps `value` to the range of integer dtype `dtype` (e.g. -1 -> 255 for u8).
int64_t wrapToDType(int64_t value, DType dtype);

/// Converts fp32 to an integer value by truncation toward zero, saturating at the int64 range; NaN -> 0.
int64_t floatToInt64(float value);

/// Reads `count` elements starting at `address`, `strideBytes` apart, into `out` as fp32.
void loadRun(const uint8_t *address, int64_t strideBytes, uint64_t count, DType dtype, float *out);
/// Writes `count` fp32 values to elements `strideBytes` apart, converting to `dtype`.
void storeRun(uint8_t *address, int64_t strideBytes, uint64_t count, DType dtype, const float *in);

}  // namespace tessel::nc::functional
