// Operand resolution, bounds checks and element enumeration (access.h).
#include "targets/nc/sim/functional/access.h"

#include <algorithm>
#include <cstring>

#include "targets/nc/sim/functional/dtype_convert.h"

namespace tessel::nc::functional {
namespace {

using Int128 = __int128;

std::string_view accessVerb(Access access) { return access == Access::Read ? "reads" : "writes"; }

/// The free counts of `op` without the dims of count 1.
std::vector<uint32_t> squeezedCounts(const Operand &op) {
  std::vector<uint32_t> counts;
  for (const FreeDim &dim : op.dims)
    if (dim.count != 1) counts.push_back(dim.count);
  return counts;
}

}  // namespace

std::string Operand::shapeString() const {
  std::string text = fmt::format("[{}", partitions);
  for (const FreeDim &dim : dims) text += fmt::format(", {}", dim.count);
  return text + "]";
}

std::string ExecContext::label() const {
  return fmt::format("instruction {} ({}.{})", index_, mnemonic(insn_.opcode), engineName(insn_.engine));
}

const AccessPattern *ExecContext::find(std::string_view name) const {
  const std::vector<OperandSlot> &slots = operandSlots(insn_.opcode);
  for (size_t i = 0; i < slots.size() && i < insn_.operands.size(); ++i)
    if (slots[i].name == name) return insn_.operands[i] ? &*insn_.operands[i] : nullptr;
  return nullptr;
}

Expected<std::optional<Operand>> ExecContext::optionalOperand(std::string_view name, Access access) const {
  const AccessPattern *found = find(name);
  if (!found) return std::optional<Operand>();
  Operand op;
  // Keep the slot name from the signature table (static storage), not the caller's view.
  const std::vector<OperandSlot> &slots = operandSlots(insn_.opcode);
  size_t slotIndex = 0;
  for (size_t i = 0; i < slots.size(); ++i)
    if (slots[i].name == name) op.name = slots[i].name, slotIndex = i;
  // An operand placed at launch starts where the launch register puts it.
  AccessPattern placed;
  const AccessPattern *ap = found;
  if (const auto &dynamic = insn_.dynamicOffset; dynamic && dynamic->operand == slotIndex) {
    const std::vector<int64_t> &registers = state_.launchRegisters();
    if (dynamic->reg >= registers.size())
      return error(ErrorCode::InvalidArgument, "operand {} is placed by launch register r{}; the launch set {}",
                   op.name, dynamic->reg, registers.size());
    const int64_t value = registers[dynamic->reg];
    if (value < 0 || value > static_cast<int64_t>(dynamic->maxValue))
      return error(ErrorCode::RuntimeError, "operand {}: launch register r{} = {} is outside 0..{}", op.name,
                   dynamic->reg, value, dynamic->maxValue);
    placed = *found;
    placed.offsetBytes += static_cast<uint64_t>(value) * dynamic->strideBytes;
    ap = &placed;
  }
  op.space = ap->space;
  op.dtype = ap->dtype;
  op.elementBytes = dtypeSizeBytes(ap->dtype);
  op.dims = ap->dims;
  if (op.dims.empty()) op.dims.push_back(FreeDim{/*strideElements=*/1, /*count=*/1});
  if (op.dims.size() > static_cast<size_t>(kMaxFreeDims))
    return error(ErrorCode::InvalidArgument, "operand {} has {} free dims; at most {}", op.name, op.dims.size(),
                 kMaxFreeDims);
  for (const FreeDim &dim : op.dims) {
    if (dim.count == 0) return error(ErrorCode::InvalidArgument, "operand {} has a free dim of count 0", op.name);
    op.freeSize *= dim.count;
  }

  // Element offsets (in elements) span [minElement, maxElement] inside each partition.
  Int128 minElement = 0, maxElement = 0;
  for (const FreeDim &dim : op.dims) {
    Int128 span = static_cast<Int128>(dim.strideElements) * (static_cast<Int128>(dim.count) - 1);
    (span < 0 ? minElement : maxElement) += span;
  }
  Int128 firstByte = static_cast<Int128>(ap->offsetBytes) + minElement * op.elementBytes;
  Int128 endByte = static_cast<Int128>(ap->offsetBytes) + (maxElement + 1) * op.elementBytes;
  auto asI64 = [](Int128 v) { return static_cast<long long>(v); };

  if (ap->space == MemSpace::HBM) {
    if (ap->startPartition != 0 || ap->partitionCount != 1)
      return error(ErrorCode::InvalidArgument, "operand {} is in HBM but names partitions p{}:{}; HBM is linear (p0:1)",
                   op.name, ap->startPartition, ap->partitionCount);
    uint64_t capacity = state_.hbmBytes();
    if (firstByte < 0)
      return error(ErrorCode::RuntimeError, "operand {} {} HBM bytes {}..{}, before the start of HBM", op.name,
                   accessVerb(access), asI64(firstByte), asI64(endByte));
    if (endByte > static_cast<Int128>(capacity))
      return error(ErrorCode::RuntimeError, "operand {} {} HBM bytes {}..{}, past the {}-byte HBM", op.name,
                   accessVerb(access), asI64(firstByte), asI64(endByte), capacity);
    op.partitions = 1;
    op.partitionStrideBytes = 0;
    op.baseAddress = ap->offsetBytes;
    op.base = state_.hbm().data() + ap->offsetBytes;
    return std::optional<Operand>(std::move(op));
  }

  bool psum = ap->space == MemSpace::PSUM;
  uint64_t partitionBytes = psum ? state_.psumBytesPerPartition() : state_.sbufBytesPerPartition();
  std::string_view memory = psum ? "PSUM" : "SBUF";
  if (ap->partitionCount == 0)
    return error(ErrorCode::InvalidArgument, "operand {} has no partitions (p{}:0)", op.name, ap->startPartition);
  if (static_cast<int64_t>(ap->startPartition) + ap->partitionCount > state_.partitions())
    return error(ErrorCode::RuntimeError, "operand {} {} {} partitions {}..{}, past the {} partitions", op.name,
                 accessVerb(access), memory, ap->startPartition, ap->startPartition + ap->partitionCount - 1,
                 state_.partitions());
  if (firstByte < 0)
    return error(ErrorCode::RuntimeError,
                 "operand {} {} {} partition {} bytes {}..{}, before the start of the partition", op.name,
                 accessVerb(access), memory, ap->startPartition, asI64(firstByte), asI64(endByte));
  if (endByte > static_cast<Int128>(partitionBytes))
    return error(ErrorCode::RuntimeError, "operand {} {} {} partition {} bytes {}..{}, past the {}-byte partition",
                 op.name, accessVerb(access), memory, ap->startPartition, asI64(firstByte), asI64(endByte),
                 partitionBytes);
  op.partitions = ap->partitionCount;
  op.partitionStrideBytes = partitionBytes;
  op.baseAddress = ap->startPartition * partitionBytes + ap->offsetBytes;
  op.base = (psum ? state_.psum() : state_.sbuf()).data() + op.baseAddress;
  return std::optional<Operand>(std::move(op));
}

Expected<Operand> ExecContext::operand(std::string_view name, Access access) const {
  TESSEL_ASSIGN_OR_RETURN(std::optional<Operand> op, optionalOperand(name, access));
  if (!op) return error(ErrorCode::InvalidArgument, "operand {} is missing", name);
  return std::move(*op);
}

Status ExecContext::requireOnChip(const Operand &op) const {
  if (op.space == MemSpace::HBM)
    return error(ErrorCode::InvalidArgument, "operand {} is in HBM; only dma_copy reaches HBM", op.name);
  return Status::success();
}

Status ExecContext::requireSameShape(const Operand &a, const Operand &b) const {
  if (a.partitions != b.partitions || squeezedCounts(a) != squeezedCounts(b))
    return error(ErrorCode::ShapeMismatch, "operand {} has shape {} but {} has shape {}", a.name, a.shapeString(),
                 b.name, b.shapeString());
  return Status::success();
}

Status ExecContext::requirePerPartitionScalar(const Operand &op, int64_t partitions) const {
  if (op.partitions != partitions || op.freeSize != 1)
    return error(ErrorCode::ShapeMismatch, "operand {} has shape {}; expected one element per partition [{}, 1]",
                 op.name, op.shapeString(), partitions);
  return Status::success();
}

void ExecContext::markWritten(const Operand &op, bool byMatmul) const {
  if (op.space != MemSpace::PSUM) return;
  for (int64_t p = 0; p < op.partitions; ++p) {
    uint64_t partitionAddress = op.baseAddress + static_cast<uint64_t>(p) * op.partitionStrideBytes;
    forEachElement(op, p, [&](uint8_t *address, uint64_t) {
      uint64_t byteAddress = partitionAddress + static_cast<uint64_t>(address - op.partitionBase(p));
      state_.setPsumWordWrittenByMatmul(byteAddress, byMatmul);
    });
  }
}

void loadPartition(const Operand &op, int64_t p, float *out) {
  forEachRun(op, p, [&](uint8_t *address, int64_t strideBytes, uint64_t count, uint64_t first) {
    loadRun(address, strideBytes, count, op.dtype, out + first);
  });
}

void storePartition(const Operand &op, int64_t p, const float *in) {
  forEachRun(op, p, [&](uint8_t *address, int64_t strideBytes, uint64_t count, uint64_t first) {
    storeRun(address, strideBytes, count, op.dtype, in + first);
  });
}

void loadPartitionInt(const Operand &op, int64_t p, int64_t *out) {
  forEachElement(op, p, [&](uint8_t *address, uint64_t k) { out[k] = loadInteger(address, op.dtype); });
}

void storePartitionIntBits(const Operand &op, int64_t p, const int64_t *in) {
  forEachElement(op, p, [&](uint8_t *address, uint64_t k) { storeIntegerBits(address, op.dtype, in[k]); });
}

void loadPartitionRaw(const Operand &op, int64_t p, uint8_t *out) {
  const size_t size = static_cast<size_t>(op.elementBytes);
  forEachElement(op, p, [&](uint8_t *address, uint64_t k) { std::memcpy(out + k * size, address, size); });
}

void storePartitionRaw(const Operand &op, int64_t p, const uint8_t *in) {
  const size_t size = static_cast<size_t>(op.elementBytes);
  forEachElement(op, p, [&](uint8_t *address, uint64_t k) { std::memcpy(address, in + k * size, size); });
}

RunCursor::RunCursor(const Operand &op)
    : op_(op), strideBytes_(op.dims.back().strideElements * op.elementBytes) {
  startRun();
}

void RunCursor::startRun() {
  if (!done()) runStart_ = op_.partitionBase(partition_) + offsetElements_ * op_.elementBytes;
}

void RunCursor::advance(uint64_t count) {
  inner_ += static_cast<uint32_t>(count);
  if (inner_ < op_.dims.back().count) return;
  inner_ = 0;
  bool wrapped = true;
  for (size_t d = op_.dims.size() - 1; d-- > 0;) {
    offsetElements_ += op_.dims[d].strideElements;
    if (++index_[d] < op_.dims[d].count) {
      wrapped = false;
      break;
    }
    offsetElements_ -= op_.dims[d].strideElements * static_cast<int64_t>(op_.dims[d].count);
    index_[d] = 0;
  }
  if (wrapped) ++partition_;
  startRun();
}

}  // namespace tessel::nc::functional
