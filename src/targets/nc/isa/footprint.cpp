// Footprints of access patterns; see footprint.h. The innermost dim, when it has unit stride, is one
// contiguous run; the outer dims are enumerated (odometer order) to place the runs, which are then
// sorted and merged.
#include "targets/nc/isa/footprint.h"

#include <algorithm>

namespace tessel::nc {

uint64_t Footprint::bytesPerPartition() const {
  uint64_t total = 0;
  for (const ByteRange &range : ranges) total += range.endBytes - range.beginBytes;
  return total;
}

std::vector<StridedDim> normalizedDims(const std::vector<FreeDim> &dims, bool dropBroadcast) {
  std::vector<StridedDim> kept;
  for (const FreeDim &dim : dims) {
    if (dim.count <= 1) continue;
    if (dropBroadcast && dim.strideElements == 0) continue;
    kept.push_back({dim.strideElements, static_cast<int64_t>(dim.count)});
  }
  // Merge from the innermost dim outwards.
  std::vector<StridedDim> reversed;
  for (auto it = kept.rbegin(); it != kept.rend(); ++it) {
    if (!reversed.empty() && it->strideElements == reversed.back().strideElements * reversed.back().count) {
      reversed.back().count *= it->count;
    } else {
      reversed.push_back(*it);
    }
  }
  return {reversed.rbegin(), reversed.rend()};
}

Footprint computeFootprint(const AccessPattern &ap) {
  Footprint footprint;
  footprint.space = ap.space;
  footprint.startPartition = ap.space == MemSpace::HBM ? 0 : ap.startPartition;
  footprint.partitionCount = ap.space == MemSpace::HBM ? 1 : ap.partitionCount;

  const int64_t elementBytes = dtypeSizeBytes(ap.dtype);
  std::vector<StridedDim> dims = normalizedDims(ap.dims, /*dropBroadcast=*/true);
  int64_t runBytes = elementBytes;
  int64_t runLowElements = 0;  // Lowest element of a run relative to its first element.
  if (!dims.empty() && (dims.back().strideElements == 1 || dims.back().strideElements == -1)) {
    runBytes = dims.back().count * elementBytes;
    runLowElements = dims.back().strideElements < 0 ? -(dims.back().count - 1) : 0;
    dims.pop_back();
  }

  const auto base = static_cast<int64_t>(ap.offsetBytes);
  std::vector<int64_t> index(dims.size(), 0);
  int64_t elementOffset = 0;  // sum_d index[d] * stride[d], kept incrementally.
  std::vector<ByteRange> &ranges = footprint.ranges;
  while (true) {
    int64_t begin = base + (elementOffset + runLowElements) * elementBytes;
    int64_t end = begin + runBytes;
    if (end <= 0) ranges.push_back({0, static_cast<uint64_t>(elementBytes)});
    else ranges.push_back({static_cast<uint64_t>(std::max<int64_t>(begin, 0)), static_cast<uint64_t>(end)});
    // Odometer step over the outer dims, innermost first.
    int d = static_cast<int>(dims.size()) - 1;
    for (; d >= 0; --d) {
      elementOffset += dims[d].strideElements;
      if (++index[d] < dims[d].count) break;
      elementOffset -= dims[d].strideElements * dims[d].count;
      index[d] = 0;
    }
    if (d < 0) break;
  }

  auto byBegin = [](const ByteRange &a, const ByteRange &b) { return a.beginBytes < b.beginBytes; };
  if (!std::is_sorted(ranges.begin(), ranges.end(), byBegin)) std::sort(ranges.begin(), ranges.end(), byBegin);
  size_t out = 0;
  for (size_t i = 1; i < ranges.size(); ++i) {
    if (ranges[i].beginBytes <= ranges[out].endBytes) {
      ranges[out].endBytes = std::max(ranges[out].endBytes, ranges[i].endBytes);
    } else {
      ranges[++out] = ranges[i];
    }
  }
  ranges.resize(out + 1);
  return footprint;
}

Footprint operandFootprint(const Instruction &insn, size_t slot) {
  Footprint footprint = computeFootprint(*insn.operands[slot]);
  if (const auto &dynamic = insn.dynamicOffset; dynamic && dynamic->operand == slot)
    footprint.ranges = {ByteRange{footprint.lowBytes(), footprint.highBytes() + dynamic->strideBytes * dynamic->maxValue}};
  return footprint;
}

std::optional<uint64_t> firstCommonByte(const std::vector<ByteRange> &a, const std::vector<ByteRange> &b) {
  size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    uint64_t begin = std::max(a[i].beginBytes, b[j].beginBytes);
    uint64_t end = std::min(a[i].endBytes, b[j].endBytes);
    if (begin < end) return begin;
    if (a[i].endBytes <= b[j].endBytes) ++i;
    else ++j;
  }
  return std::nullopt;
}

bool rangesCover(const std::vector<ByteRange> &outer, const std::vector<ByteRange> &inner) {
  size_t i = 0;
  for (const ByteRange &range : inner) {
    while (i < outer.size() && outer[i].endBytes <= range.beginBytes) ++i;
    if (i == outer.size() || outer[i].beginBytes > range.beginBytes || outer[i].endBytes < range.endBytes) return false;
  }
  return true;
}

}  // namespace tessel::nc
