// Output chunks and tap windows; see spatial_windows.h.
#include "targets/nc/compiler/spatial_windows.h"

#include <algorithm>

namespace tessel::nc::compiler {

using kernels::Span;
using kernels::splitRange;

void splitRows(int64_t n, int64_t rowBegin, int64_t rowEnd, int64_t OW, int64_t limit, std::vector<OutputChunk> &out) {
  if (OW > limit) {
    for (int64_t r = rowBegin; r < rowEnd; ++r)
      for (const Span &c : splitRange(OW, limit)) out.push_back(OutputChunk{n, 1, r, 1, c.start, c.count});
    return;
  }
  for (const Span &r : splitRange(rowEnd - rowBegin, limit / OW))
    out.push_back(OutputChunk{n, 1, rowBegin + r.start, r.count, 0, OW});
}

std::vector<OutputChunk> splitOutput(int64_t N, int64_t OH, int64_t OW, int64_t limit) {
  std::vector<OutputChunk> chunks;
  if (OH * OW <= limit) {
    for (const Span &n : splitRange(N, limit / (OH * OW))) chunks.push_back(OutputChunk{n.start, n.count, 0, OH, 0, OW});
    return chunks;
  }
  for (int64_t n = 0; n < N; ++n) splitRows(n, 0, OH, OW, limit, chunks);
  return chunks;
}

std::vector<FreeDim> windowDims(int64_t images, int64_t imageStep, int64_t rows, int64_t rowStep, int64_t cols,
                                int64_t colStep) {
  std::vector<FreeDim> dims;
  if (images > 1) dims.push_back(FreeDim{imageStep, static_cast<uint32_t>(images)});
  if (rows > 1) dims.push_back(FreeDim{rowStep, static_cast<uint32_t>(rows)});
  dims.push_back(FreeDim{colStep, static_cast<uint32_t>(cols)});
  return dims;
}

Span insideRange(int64_t begin, int64_t count, int64_t stride, int64_t offset, int64_t extent) {
  const int64_t lo = std::max(begin, offset >= 0 ? 0 : kernels::ceilDiv(-offset, stride));
  const int64_t hi = std::min(begin + count, offset > extent - 1 ? 0 : (extent - 1 - offset) / stride + 1);
  return {lo, std::max<int64_t>(0, hi - lo)};
}

}  // namespace tessel::nc::compiler
