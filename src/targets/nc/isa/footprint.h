// The bytes an access pattern touches, as merged byte ranges per partition. The race detector
// compares footprints of instructions on different engines, and the port model reads which PSUM banks
// an instruction touches. An SBUF/PSUM footprint is a partition range plus one list of byte ranges
// that holds in every partition of it (the offsets are relative to the partition start, section 4.2);
// an HBM footprint has one "partition" and absolute byte addresses. Element addresses follow the
// access-pattern rule of the shared spec: offsetBytes + (sum_d idx_d * stride_d) * dtypeSize.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "targets/nc/isa/instruction.h"

namespace tessel::nc {

/// Bytes [beginBytes, endBytes).
struct ByteRange {
  uint64_t beginBytes = 0;
  uint64_t endBytes = 0;
  bool operator==(const ByteRange &) const = default;
};

/// The bytes one operand touches.
struct Footprint {
  MemSpace space = MemSpace::SBUF;
  int64_t startPartition = 0;  // HBM: 0.
  int64_t partitionCount = 1;  // HBM: 1.
  std::vector<ByteRange> ranges;  // Sorted, disjoint and not adjacent (merged); never empty.

  /// The lowest byte and one past the highest byte touched in each partition.
  uint64_t lowBytes() const { return ranges.front().beginBytes; }
  uint64_t highBytes() const { return ranges.back().endBytes; }
  /// Bytes touched in one partition.
  uint64_t bytesPerPartition() const;
};

/// The footprint of `ap`. Dims of count 1 and stride-0 (broadcast) dims add no bytes. An element
/// whose address computes below 0 (a negative stride running past the start) is clamped to 0; the
/// verifier and the functional simulator report such operands.
Footprint computeFootprint(const AccessPattern &ap);

/// The footprint of operand `slot` of `insn`: computeFootprint, and for an operand placed at launch
/// (Instruction::dynamicOffset) every byte it may touch at any register value up to the bound, as one
/// range (an over-approximation that orders it after every access to the buffer it writes into).
Footprint operandFootprint(const Instruction &insn, size_t slot);

/// The lowest byte in both sorted, merged range lists, or nullopt when they are disjoint.
std::optional<uint64_t> firstCommonByte(const std::vector<ByteRange> &a, const std::vector<ByteRange> &b);

/// True when every byte of `inner` lies in `outer` (both sorted and merged).
bool rangesCover(const std::vector<ByteRange> &outer, const std::vector<ByteRange> &inner);

/// One dim of a normalized access pattern (64-bit count: merged HBM dims can exceed 32 bits).
struct StridedDim {
  int64_t strideElements = 1;
  int64_t count = 1;
};

/// Access-pattern dims with the count-1 dims removed and adjacent dims merged where the outer one
/// steps exactly over the inner one (stride_outer == stride_inner * count_inner), outermost first.
/// With `dropBroadcast`, stride-0 dims are removed too (they revisit the same elements).
std::vector<StridedDim> normalizedDims(const std::vector<FreeDim> &dims, bool dropBroadcast);

}  // namespace tessel::nc
