// The im2col gather of the GEMM convolution: for a chunk of output positions of one image and
// group, row r = (c, kh, kw) of the column matrix holds the input element each position's window
// reads at tap (kh, kw) of channel c, or 0 where the tap falls in the padding. Row order matches
// the weights' [Cout, Cin/g, KH, KW] layout, so W needs no reordering to be the GEMM's A.
#pragma once

#include <cstdint>

#include "targets/cpu/kernels/conv.h"

namespace tessel::cpu {

/// Fills rows [rowBegin, rowEnd) of the column matrix for output positions
/// [columnBegin, columnBegin + columns) (row-major over OH x OW) into cols[r * columns + j], so
/// callers can fill disjoint row ranges of one matrix in parallel.
/// `xGroup` points at the group's first input channel of one image.
void im2colChunk(const Conv2dShape &shape, const float *xGroup, int64_t columnBegin, int64_t columns,
                 int64_t rowBegin, int64_t rowEnd, float *cols);

}  // namespace tessel::cpu
