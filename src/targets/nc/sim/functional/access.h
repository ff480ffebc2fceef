// Operand access for the functional simulator: resolves an instruction's access patterns against a
// MachineState (bounds-checked: every element must lie inside its partition, or inside HBM),
// enumerates their elements in the order of the shared spec (partition-major, then the free dims
// row-major, outermost first) as strided runs along the innermost dim, and loads/stores whole
// partitions as fp32, as integers or as raw bytes. ExecContext carries the instruction being run and
// formats errors as "instruction <i> (<mnemonic>.<ENGINE>): ...".
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include "support/diagnostic.h"
#include "targets/nc/isa/instruction.h"
#include "targets/nc/machine/profile.h"
#include "targets/nc/sim/machine_state.h"

namespace tessel::nc::functional {

/// How an instruction uses an operand; only labels messages ("reads" / "writes").
enum class Access : uint8_t { Read, Write };

/// One operand of the running instruction, resolved against the machine state. Every element
/// address has been checked to lie inside its memory.
struct Operand {
  std::string_view name;          // The signature slot ("dst", "in0", ...).
  MemSpace space = MemSpace::SBUF;
  DType dtype = DType::F32;
  int64_t elementBytes = 4;
  uint8_t *base = nullptr;        // Byte offsetBytes of the first partition.
  uint64_t baseAddress = 0;       // The same byte as an address in its memory (partition-major).
  uint64_t partitionStrideBytes = 0;  // Bytes from one partition to the next (0 for HBM).
  int64_t partitions = 1;         // partitionCount (1 for HBM).
  std::vector<FreeDim> dims;      // The free dims; never empty (no dims reads as one [1,1] dim).
  uint64_t freeSize = 1;          // Elements per partition.

  /// Elements in all partitions.
  uint64_t totalSize() const { return static_cast<uint64_t>(partitions) * freeSize; }
  /// The first byte of partition `p` (relative to the operand's first partition) at the offset.
  uint8_t *partitionBase(int64_t p) const { return base + static_cast<uint64_t>(p) * partitionStrideBytes; }
  /// "[P, c0, c1, ...]": the partition count and the free dim counts.
  std::string shapeString() const;
};

/// The instruction being executed, with the state it runs on.
class ExecContext {
 public:
  ExecContext(const Instruction &insn, size_t index, MachineState &state, const MachineProfile &profile)
      : insn_(insn), index_(index), state_(state), profile_(profile) {}

  const Instruction &insn() const { return insn_; }
  MachineState &state() const { return state_; }
  const MachineProfile &profile() const { return profile_; }

  /// "instruction 12 (tensor_tensor.DVE)".
  std::string label() const;

  /// A Diagnostic whose message starts with label().
  template <class... Args>
  Diagnostic error(ErrorCode code, fmt::format_string<Args...> format, Args &&...args) const {
    return makeError(code, "{}: {}", label(), fmt::format(format, std::forward<Args>(args)...));
  }

  /// The access pattern in signature slot `name`, or null when the slot is empty or absent.
  const AccessPattern *find(std::string_view name) const;

  /// Resolves the operand in slot `name`: an InvalidArgument error when it is missing, a
  /// RuntimeError when an element lies outside its memory.
  Expected<Operand> operand(std::string_view name, Access access) const;
  /// As operand(), but an absent optional slot gives nullopt.
  Expected<std::optional<Operand>> optionalOperand(std::string_view name, Access access) const;

  /// Immediate `i` of the instruction, or `fallback` when there are fewer.
  float immediate(size_t i, float fallback) const {
    return i < insn_.scalars.size() ? insn_.scalars[i] : fallback;
  }

  /// Errors unless `op` lives in SBUF or PSUM (compute instructions do not reach HBM).
  Status requireOnChip(const Operand &op) const;
  /// ShapeMismatch unless `a` and `b` have the same partition count and the same free dims once
  /// dims of count 1 are dropped.
  Status requireSameShape(const Operand &a, const Operand &b) const;
  /// ShapeMismatch unless `op` has `partitions` partitions and one element in each ([P,1]).
  Status requirePerPartitionScalar(const Operand &op, int64_t partitions) const;

  /// After writing `op`: marks its PSUM words as written (by a matmul or not); no-op off PSUM.
  void markWritten(const Operand &op, bool byMatmul) const;

 private:
  const Instruction &insn_;
  size_t index_;
  MachineState &state_;
  const MachineProfile &profile_;
};

/// Calls fn(address, strideBytes, count, firstIndex) for each innermost-dim run of partition `p`
/// of `op`, in enumeration order; firstIndex is the flat free index of the run's first element.
template <class Fn>
void forEachRun(const Operand &op, int64_t p, Fn &&fn) {
  const size_t outer = op.dims.size() - 1;
  const FreeDim &inner = op.dims[outer];
  const int64_t innerStrideBytes = inner.strideElements * op.elementBytes;
  const uint64_t runs = op.freeSize / inner.count;
  uint8_t *partition = op.partitionBase(p);
  uint32_t index[kMaxFreeDims] = {};
  int64_t offsetElements = 0;
  for (uint64_t run = 0; run < runs; ++run) {
    fn(partition + offsetElements * op.elementBytes, innerStrideBytes, static_cast<uint64_t>(inner.count),
       run * inner.count);
    // Odometer over the outer dims, innermost of them fastest.
    for (size_t d = outer; d-- > 0;) {
      offsetElements += op.dims[d].strideElements;
      if (++index[d] < op.dims[d].count) break;
      offsetElements -= op.dims[d].strideElements * static_cast<int64_t>(op.dims[d].count);
      index[d] = 0;
    }
  }
}

/// Calls fn(address, flatIndex) for each element of partition `p` of `op`.
template <class Fn>
void forEachElement(const Operand &op, int64_t p, Fn &&fn) {
  forEachRun(op, p, [&](uint8_t *address, int64_t strideBytes, uint64_t count, uint64_t first) {
    for (uint64_t i = 0; i < count; ++i) fn(address + static_cast<int64_t>(i) * strideBytes, first + i);
  });
}

/// Loads partition `p` of `op` as fp32 into out[0..freeSize).
void loadPartition(const Operand &op, int64_t p, float *out);
/// Stores in[0..freeSize) into partition `p` of `op`, converting to its dtype.
void storePartition(const Operand &op, int64_t p, const float *in);
/// Loads partition `p` as integers (loadInteger) into out[0..freeSize).
void loadPartitionInt(const Operand &op, int64_t p, int64_t *out);
/// Stores integers into partition `p` (storeIntegerBits).
void storePartitionIntBits(const Operand &op, int64_t p, const int64_t *in);
/// Copies partition `p` element by element into out[0..freeSize*elementBytes), bit-exact.
void loadPartitionRaw(const Operand &op, int64_t p, uint8_t *out);
/// Copies in[0..freeSize*elementBytes) into partition `p`, bit-exact.
void storePartitionRaw(const Operand &op, int64_t p, const uint8_t *in);

/// Walks all elements of an operand (partition-major, then free dims) as runs, for DMA: at each
/// step address() is the next element and runRemaining() how many follow it in the current run,
/// strideBytes() apart.
class RunCursor {
 public:
  explicit RunCursor(const Operand &op);
  bool done() const { return partition_ >= op_.partitions; }
  uint8_t *address() const { return runStart_ + static_cast<int64_t>(inner_) * strideBytes_; }
  int64_t strideBytes() const { return strideBytes_; }
  uint64_t runRemaining() const { return op_.dims.back().count - inner_; }
  /// Moves `count` (<= runRemaining()) elements on.
  void advance(uint64_t count);

 private:
  void startRun();

  const Operand &op_;
  int64_t strideBytes_;
  int64_t partition_ = 0;
  uint32_t inner_ = 0;
  uint32_t index_[kMaxFreeDims] = {};
  int64_t offsetElements_ = 0;
  uint8_t *runStart_ = nullptr;
};

}  // namespace tessel::nc::functional
