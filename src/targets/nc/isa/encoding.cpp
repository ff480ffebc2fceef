// Binary encoder and decoder of accelerator programs (format in encoding.h). The decoder checks
// every byte it reads and reports the first problem with its offset; it never reads past the end.
#include "targets/nc/isa/encoding.h"

#include <bit>
#include <cstring>
#include <string>

namespace tessel::nc {
namespace {

constexpr char kMagic[4] = {'T', 'N', 'C', 'I'};
constexpr size_t kHeaderFixedBytes = 10;  // magic, version, body size.
constexpr uint8_t kFlagIncrement = 1, kFlagAccumulate = 2, kFlagCores = 4, kFlagDynamicOffset = 8;
constexpr int kNumFlagValues = 16;        // Flags bytes 0..15; anything else is corrupt.
constexpr uint64_t kMinInstructionBytes = 10;  // The fixed u8 fields of an instruction.

class Writer {
 public:
  void u8(uint8_t value) { bytes_.push_back(value); }
  void u16(uint16_t value) { u8(value & 0xff), u8(value >> 8); }
  void u32(uint32_t value) {
    for (int i = 0; i < 4; ++i) u8(static_cast<uint8_t>(value >> (8 * i)));
  }
  void varint(uint64_t value) {
    do {
      uint8_t byte = value & 0x7f;
      value >>= 7;
      u8(value ? byte | 0x80 : byte);
    } while (value);
  }
  void zigzag(int64_t value) { varint((static_cast<uint64_t>(value) << 1) ^ static_cast<uint64_t>(value >> 63)); }
  std::vector<uint8_t> &bytes() { return bytes_; }

 private:
  std::vector<uint8_t> bytes_;
};

void writeOperand(Writer &out, const AccessPattern &ap) {
  out.u8(static_cast<uint8_t>(ap.space));
  out.u8(static_cast<uint8_t>(ap.dtype));
  out.u8(ap.startPartition);
  out.u8(ap.partitionCount);
  out.varint(ap.offsetBytes);
  TESSEL_CHECK(ap.dims.size() <= kMaxFreeDims, "{} free dims: out of the encodable range", ap.dims.size());
  out.u8(static_cast<uint8_t>(ap.dims.size()));
  for (const FreeDim &dim : ap.dims) {
    out.zigzag(dim.strideElements);
    out.varint(dim.count);
  }
}

void writeInstruction(Writer &out, const Instruction &insn) {
  out.u8(static_cast<uint8_t>(insn.opcode));
  out.u8(static_cast<uint8_t>(insn.engine));
  TESSEL_CHECK(insn.scalars.size() <= kMaxScalars && insn.waits.size() <= kMaxWaits,
               "{} immediates, {} waits: out of the encodable range", insn.scalars.size(), insn.waits.size());
  out.u8((insn.increment ? kFlagIncrement : 0) | (insn.accumulate ? kFlagAccumulate : 0) |
         (insn.cores != 0 ? kFlagCores : 0) | (insn.dynamicOffset ? kFlagDynamicOffset : 0));
  uint8_t mask = 0;
  for (int i = 0; i < kMaxOperands; ++i)
    if (insn.operands[i]) mask |= 1 << i;
  out.u8(mask);
  out.u8(static_cast<uint8_t>(insn.op0));
  out.u8(static_cast<uint8_t>(insn.op1));
  out.u8(static_cast<uint8_t>(insn.func));
  out.u8(static_cast<uint8_t>(insn.scalars.size()));
  for (float scalar : insn.scalars) out.u32(std::bit_cast<uint32_t>(scalar));
  out.u8(static_cast<uint8_t>(insn.waits.size()));
  for (const SemaphoreWait &wait : insn.waits) {
    out.varint(wait.id);
    out.varint(wait.value);
  }
  if (insn.increment) out.varint(*insn.increment);
  out.u8(insn.queue);
  if (insn.cores != 0) out.u8(insn.cores);
  if (const auto &dynamic = insn.dynamicOffset) {
    out.u8(dynamic->operand);
    out.u8(dynamic->reg);
    out.varint(dynamic->strideBytes);
    out.varint(dynamic->maxValue);
  }
  for (const auto &operand : insn.operands)
    if (operand) writeOperand(out, *operand);
}

/// Reads from a byte buffer; every read checks the remaining length.
class Reader {
 public:
  explicit Reader(const std::vector<uint8_t> &bytes) : bytes_(bytes) {}
  size_t offset() const { return offset_; }
  size_t remaining() const { return bytes_.size() - offset_; }

  Diagnostic error(size_t at, const std::string &what) const {
    return makeError(ErrorCode::ParseError, "nc program: byte offset {}: {}", at, what);
  }
  Expected<uint8_t> u8(const char *what) {
    if (remaining() < 1) return error(offset_, std::string("truncated: expected ") + what);
    return bytes_[offset_++];
  }
  Expected<uint32_t> u32(const char *what) {
    if (remaining() < 4) return error(offset_, std::string("truncated: expected ") + what);
    uint32_t value = 0;
    for (int i = 0; i < 4; ++i) value |= static_cast<uint32_t>(bytes_[offset_ + i]) << (8 * i);
    offset_ += 4;
    return value;
  }
  /// A minimal LEB128 varint no larger than `max`.
  Expected<uint64_t> varint(const char *what, uint64_t max) {
    size_t start = offset_;
    uint64_t value = 0;
    for (int shift = 0;; shift += 7) {
      if (remaining() < 1) return error(offset_, std::string("truncated: expected ") + what);
      uint8_t byte = bytes_[offset_++];
      if (shift == 63 && byte > 1) return error(start, std::string("varint overflow in ") + what);
      value |= static_cast<uint64_t>(byte & 0x7f) << shift;
      if (!(byte & 0x80)) {
        if (byte == 0 && shift > 0) return error(start, std::string("non-minimal varint in ") + what);
        break;
      }
    }
    if (value > max)
      return error(start, std::string(what) + " " + std::to_string(value) + " out of range (max " +
                              std::to_string(max) + ")");
    return value;
  }
  /// A byte that must be < `count` (an enum value).
  Expected<uint8_t> enumByte(const char *what, int count) {
    size_t at = offset_;
    TESSEL_ASSIGN_OR_RETURN(uint8_t value, u8(what));
    if (value >= count) return error(at, std::string("bad ") + what + " " + std::to_string(value));
    return value;
  }

 private:
  const std::vector<uint8_t> &bytes_;
  size_t offset_ = 0;
};

Expected<AccessPattern> readOperand(Reader &in) {
  AccessPattern ap;
  TESSEL_ASSIGN_OR_RETURN(uint8_t space, in.enumByte("memory space", kNumMemSpaces));
  TESSEL_ASSIGN_OR_RETURN(uint8_t dtype, in.enumByte("dtype", kNumDTypes));
  ap.space = static_cast<MemSpace>(space);
  ap.dtype = static_cast<DType>(dtype);
  TESSEL_ASSIGN_OR_RETURN(ap.startPartition, in.u8("start partition"));
  TESSEL_ASSIGN_OR_RETURN(ap.partitionCount, in.u8("partition count"));
  TESSEL_ASSIGN_OR_RETURN(ap.offsetBytes, in.varint("byte offset", UINT64_MAX));
  TESSEL_ASSIGN_OR_RETURN(uint8_t numDims, in.enumByte("free dim count", kMaxFreeDims + 1));
  for (int i = 0; i < numDims; ++i) {
    TESSEL_ASSIGN_OR_RETURN(uint64_t zz, in.varint("stride", UINT64_MAX));
    TESSEL_ASSIGN_OR_RETURN(uint64_t count, in.varint("dim count", UINT32_MAX));
    int64_t stride = static_cast<int64_t>((zz >> 1) ^ (0 - (zz & 1)));
    ap.dims.push_back({stride, static_cast<uint32_t>(count)});
  }
  return ap;
}

Expected<Instruction> readInstruction(Reader &in) {
  Instruction insn;
  TESSEL_ASSIGN_OR_RETURN(uint8_t opcode, in.enumByte("opcode", numOpcodes()));
  TESSEL_ASSIGN_OR_RETURN(uint8_t engine, in.enumByte("engine", kNumEngines));
  insn.opcode = static_cast<Opcode>(opcode);
  insn.engine = static_cast<Engine>(engine);
  TESSEL_ASSIGN_OR_RETURN(uint8_t flags, in.enumByte("flags", kNumFlagValues));
  size_t maskAt = in.offset();
  TESSEL_ASSIGN_OR_RETURN(uint8_t mask, in.u8("operand mask"));
  const std::vector<OperandSlot> &slots = operandSlots(insn.opcode);
  for (int i = 0; i < 8; ++i) {
    bool present = mask & (1 << i);
    if (i >= static_cast<int>(slots.size())) {
      if (present) return in.error(maskAt, "operand mask names slot " + std::to_string(i) + " of " +
                                               std::string(mnemonic(insn.opcode)) + ", which has " +
                                               std::to_string(slots.size()));
    } else if (!present && !slots[i].optional) {
      return in.error(maskAt, "operand mask lacks required operand '" + std::string(slots[i].name) + "'");
    }
  }
  TESSEL_ASSIGN_OR_RETURN(uint8_t op0, in.enumByte("ALU op", kNumAluOps));
  TESSEL_ASSIGN_OR_RETURN(uint8_t op1, in.enumByte("ALU op", kNumAluOps));
  TESSEL_ASSIGN_OR_RETURN(uint8_t func, in.enumByte("ACT function", kNumActFuncs));
  insn.op0 = static_cast<AluOp>(op0);
  insn.op1 = static_cast<AluOp>(op1);
  insn.func = static_cast<ActFunc>(func);
  TESSEL_ASSIGN_OR_RETURN(uint8_t numScalars, in.enumByte("scalar count", kMaxScalars + 1));
  for (int i = 0; i < numScalars; ++i) {
    TESSEL_ASSIGN_OR_RETURN(uint32_t bits, in.u32("scalar"));
    insn.scalars.push_back(std::bit_cast<float>(bits));
  }
  TESSEL_ASSIGN_OR_RETURN(uint8_t numWaits, in.enumByte("wait count", kMaxWaits + 1));
  for (int i = 0; i < numWaits; ++i) {
    TESSEL_ASSIGN_OR_RETURN(uint64_t id, in.varint("semaphore id", UINT16_MAX));
    TESSEL_ASSIGN_OR_RETURN(uint64_t value, in.varint("semaphore value", UINT32_MAX));
    insn.waits.push_back(SemaphoreWait{static_cast<uint16_t>(id), static_cast<uint32_t>(value)});
  }
  if (flags & kFlagIncrement) {
    TESSEL_ASSIGN_OR_RETURN(uint64_t id, in.varint("semaphore id", UINT16_MAX));
    insn.increment = static_cast<uint16_t>(id);
  }
  TESSEL_ASSIGN_OR_RETURN(insn.queue, in.u8("queue"));
  if (flags & kFlagCores) {
    size_t coresAt = in.offset();
    TESSEL_ASSIGN_OR_RETURN(insn.cores, in.u8("core count"));
    // A zero count is written by clearing the flag; a present zero would have two encodings.
    if (insn.cores == 0) return in.error(coresAt, "core count 0 with the core-count flag set");
  }
  if (flags & kFlagDynamicOffset) {
    DynamicOffset dynamic;
    TESSEL_ASSIGN_OR_RETURN(dynamic.operand, in.enumByte("dynamic offset operand", kMaxOperands));
    TESSEL_ASSIGN_OR_RETURN(dynamic.reg, in.u8("launch register"));
    TESSEL_ASSIGN_OR_RETURN(dynamic.strideBytes, in.varint("dynamic offset stride", UINT64_MAX));
    TESSEL_ASSIGN_OR_RETURN(uint64_t maxValue, in.varint("dynamic offset bound", UINT32_MAX));
    dynamic.maxValue = static_cast<uint32_t>(maxValue);
    insn.dynamicOffset = dynamic;
  }
  insn.accumulate = flags & kFlagAccumulate;
  for (size_t i = 0; i < slots.size(); ++i) {
    if (!(mask & (1 << i))) continue;
    TESSEL_ASSIGN_OR_RETURN(insn.operands[i], readOperand(in));
  }
  return insn;
}

}  // namespace

std::vector<uint8_t> encodeProgram(const std::vector<Instruction> &program) {
  Writer body;
  body.varint(program.size());
  for (const Instruction &insn : program) writeInstruction(body, insn);
  Writer out;
  for (char c : kMagic) out.u8(static_cast<uint8_t>(c));
  out.u16(kEncodingVersion);
  out.u32(static_cast<uint32_t>(body.bytes().size()));
  out.bytes().insert(out.bytes().end(), body.bytes().begin(), body.bytes().end());
  return std::move(out.bytes());
}

Expected<std::vector<Instruction>> decodeProgram(const std::vector<uint8_t> &bytes) {
  Reader in(bytes);
  if (bytes.size() < kHeaderFixedBytes)
    return in.error(bytes.size(), "truncated header: " + std::to_string(bytes.size()) + " bytes, need " +
                                      std::to_string(kHeaderFixedBytes));
  if (std::memcmp(bytes.data(), kMagic, 4) != 0) return in.error(0, "bad magic; expected \"TNCI\"");
  uint16_t version = bytes[4] | (bytes[5] << 8);
  if (version != kEncodingVersion)
    return in.error(4, "unsupported version " + std::to_string(version) + "; expected " +
                           std::to_string(kEncodingVersion));
  for (int i = 0; i < 6; ++i) (void)in.u8("header");
  TESSEL_ASSIGN_OR_RETURN(uint32_t bodyBytes, in.u32("body size"));
  if (bodyBytes != in.remaining())
    return in.error(6, "length mismatch: header says " + std::to_string(bodyBytes) + " body bytes, found " +
                           std::to_string(in.remaining()));
  size_t countAt = in.offset();
  TESSEL_ASSIGN_OR_RETURN(uint64_t count, in.varint("instruction count", UINT32_MAX));
  // Each instruction takes at least kMinInstructionBytes; reject impossible counts before reserving.
  if (count > in.remaining() / kMinInstructionBytes)
    return in.error(countAt, "instruction count " + std::to_string(count) + " exceeds what " +
                                 std::to_string(in.remaining()) + " bytes can hold");
  std::vector<Instruction> program;
  program.reserve(count);
  for (uint64_t i = 0; i < count; ++i) {
    TESSEL_ASSIGN_OR_RETURN(Instruction insn, readInstruction(in));
    program.push_back(std::move(insn));
  }
  if (in.remaining() != 0)
    return in.error(in.offset(), std::to_string(in.remaining()) + " trailing bytes after " +
                                     std::to_string(count) + " instructions");
  return program;
}

}  // namespace tessel::nc
