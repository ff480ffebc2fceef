// The rotary embedding loop (see rotary_embedding.h): rows in order, the table rows found by an
// odometer over the leading dims.
#include "targets/cpu/kernels/rotary_embedding.h"

#include <cstddef>

namespace tessel::cpu {
namespace {

/// One row: both halves' elements are read before either is written, so y may equal x.
void embedRow(const float *x, const float *cos, const float *sin, float *y, int64_t half) {
  for (int64_t i = 0; i < half; ++i) {
    const float first = x[i], second = x[i + half];
    y[i] = first * cos[i] - second * sin[i];
    y[i + half] = second * cos[i + half] + first * sin[i + half];
  }
}

}  // namespace

void rotaryEmbedding(const RotaryTables &tables, int64_t depth, const float *x, const float *cos, const float *sin,
                     float *y) {
  const size_t rank = tables.leadingSizes.size();
  int64_t rows = 1;
  for (int64_t size : tables.leadingSizes) rows *= size;
  std::vector<int64_t> index(rank, 0);
  int64_t cosRow = 0, sinRow = 0;
  for (int64_t row = 0; row < rows; ++row) {
    embedRow(x + row * depth, cos + cosRow * depth, sin + sinRow * depth, y + row * depth, depth / 2);
    // Advance the odometer, moving the table rows with it.
    for (size_t d = rank; d-- > 0;) {
      cosRow += tables.cosRowStrides[d];
      sinRow += tables.sinRowStrides[d];
      if (++index[d] < tables.leadingSizes[d]) break;
      cosRow -= tables.cosRowStrides[d] * tables.leadingSizes[d];
      sinRow -= tables.sinRowStrides[d] * tables.leadingSizes[d];
      index[d] = 0;
    }
  }
}

}  // namespace tessel::cpu
