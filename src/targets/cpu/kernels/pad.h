// Pad (constant, reflect, edge) of a dense tensor of any fixed-size dtype, negative pads (crops)
// included. Each axis gets its output-to-source index table once, at planning; a run walks the
// output rows (the last axis), copies each row's in-range run with one memcpy and fills or
// gathers its edges element by element.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "support/thread_pool.h"

namespace tessel::cpu {

enum class PadMode : uint8_t { Constant, Reflect, Edge };

struct PadPlan {
  std::vector<int64_t> inSizes, outSizes;
  std::vector<std::vector<int64_t>> sourceOf;  // Per axis, per output index: the input index, or -1 (fill).
  size_t elementBytes = 0;
  std::vector<std::byte> fill;  // One element: the constant mode's value.
};

/// The source index of padded coordinate `i` (already shifted by the begin pad) on an axis of n
/// elements, or -1 where the constant mode fills. As the reference: reflect does not repeat the
/// edge element, and reflects again past the far end.
int64_t padSourceIndex(int64_t i, int64_t n, PadMode mode);

/// Builds the index tables. Precondition: out = in + begin + end >= 0 per axis, and an empty input
/// axis is only padded in constant mode.
PadPlan makePadPlan(std::vector<int64_t> inSizes, const std::vector<int64_t> &pads, PadMode mode, size_t elementBytes,
                    std::vector<std::byte> fill);

void runPad(const PadPlan &plan, const void *x, void *y, ThreadPool *pool);

}  // namespace tessel::cpu
