// Pad: the index tables and the row walk (see pad.h).
#include "targets/cpu/kernels/pad.h"

#include <algorithm>
#include <cstring>

#include "targets/cpu/kernels/elementwise.h"

namespace tessel::cpu {

int64_t padSourceIndex(int64_t i, int64_t n, PadMode mode) {
  if (i >= 0 && i < n) return i;
  if (mode == PadMode::Constant || n == 0) return -1;
  if (mode == PadMode::Edge) return std::clamp<int64_t>(i, 0, n - 1);
  if (n == 1) return 0;
  const int64_t period = 2 * (n - 1);
  i %= period;
  if (i < 0) i += period;
  return i < n ? i : period - i;
}

PadPlan makePadPlan(std::vector<int64_t> inSizes, const std::vector<int64_t> &pads, PadMode mode, size_t elementBytes,
                    std::vector<std::byte> fill) {
  PadPlan plan;
  const size_t rank = inSizes.size();
  for (size_t a = 0; a < rank; ++a) {
    const int64_t out = inSizes[a] + pads[a] + pads[a + rank];
    plan.outSizes.push_back(out);
    std::vector<int64_t> sources(static_cast<size_t>(out));
    for (int64_t i = 0; i < out; ++i) sources[i] = padSourceIndex(i - pads[a], inSizes[a], mode);
    plan.sourceOf.push_back(std::move(sources));
  }
  plan.inSizes = std::move(inSizes);
  plan.elementBytes = elementBytes;
  plan.fill = std::move(fill);
  return plan;
}

void runPad(const PadPlan &plan, const void *x, void *y, ThreadPool *pool) {
  const size_t rank = plan.outSizes.size();
  const size_t bytes = plan.elementBytes;
  const auto *in = static_cast<const std::byte *>(x);
  auto *out = static_cast<std::byte *>(y);
  if (rank == 0) {
    std::memcpy(out, in, bytes);
    return;
  }
  const int64_t rowLength = plan.outSizes[rank - 1], inRowLength = plan.inSizes[rank - 1];
  int64_t rows = 1;
  for (size_t a = 0; a + 1 < rank; ++a) rows *= plan.outSizes[a];
  if (rows == 0 || rowLength == 0) return;
  // The longest output run [runBegin, runEnd) of the last axis that reads consecutive inputs: one
  // memcpy per row; the elements around it are filled or gathered one by one.
  const std::vector<int64_t> &last = plan.sourceOf[rank - 1];
  int64_t runBegin = 0, runEnd = 0;
  for (int64_t i = 0; i < rowLength; ++i) {
    if (last[i] < 0) continue;
    int64_t j = i;
    while (j + 1 < rowLength && last[j + 1] == last[j] + 1) ++j;
    if (j + 1 - i > runEnd - runBegin) {
      runBegin = i;
      runEnd = j + 1;
    }
    i = j;
  }
  const int64_t grain = std::max<int64_t>(1, 16384 / std::max<int64_t>(rowLength, 1));
  parallelRanges(pool, rows, grain, [&](int64_t begin, int64_t end) {
    for (int64_t row = begin; row < end; ++row) {
      // The input row this output row reads, or none (a constant-filled row).
      int64_t rest = row, source = 0, stride = inRowLength;
      bool filled = false;
      for (size_t a = rank - 1; a-- > 0;) {
        const int64_t i = rest % plan.outSizes[a];
        rest /= plan.outSizes[a];
        const int64_t s = plan.sourceOf[a][i];
        if (s < 0) filled = true;
        source += s * stride;
        stride *= plan.inSizes[a];
      }
      std::byte *dst = out + row * rowLength * bytes;
      if (filled) {
        for (int64_t i = 0; i < rowLength; ++i) std::memcpy(dst + i * bytes, plan.fill.data(), bytes);
        continue;
      }
      const std::byte *src = in + source * bytes;
      if (runEnd > runBegin) std::memcpy(dst + runBegin * bytes, src + last[runBegin] * bytes, (runEnd - runBegin) * bytes);
      for (int64_t i = 0; i < rowLength; ++i) {
        if (i == runBegin && runEnd > runBegin) i = runEnd;
        if (i >= rowLength) break;
        std::memcpy(dst + i * bytes, last[i] < 0 ? plan.fill.data() : src + last[i] * bytes, bytes);
      }
    }
  });
}

}  // namespace tessel::cpu
