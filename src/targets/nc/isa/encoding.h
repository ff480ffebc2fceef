// The binary form of an accelerator program: what the compiler emits into the executable and the
// simulator loads. Compact (varints, one byte per enum) and versioned; little-endian throughout.
//
// Layout, version 2:
//   header:      "TNCI" | u16 version | u32 body size in bytes | varint instruction count
//   instruction: u8 opcode | u8 engine | u8 flags (bit0 increment, bit1 accumulate, bit2 core count,
//                bit3 dynamic offset)
//                | u8 operand mask (bit i: signature slot i present) | u8 op0 | u8 op1 | u8 func
//                | u8 scalar count (<= kMaxScalars) | f32 scalars
//                | u8 wait count (<= kMaxWaits) | per wait: varint semaphore id, varint value
//                | [varint increment id] | u8 queue | [u8 core count, nonzero]
//                | [u8 operand slot, u8 register, varint stride bytes, varint bound] | operands in slot order
//   operand:     u8 space | u8 dtype | u8 start partition | u8 partition count | varint offset
//                | u8 dim count | per dim: zigzag varint stride (int64), varint count (uint32)
// Varints are LEB128 and must be minimal, so each program has exactly one encoding. The encoding
// holds every value the fields can take (wide strides on SBUF too, a queue on any instruction); the
// verifier, not the decoder, applies the hardware rules. Version 1 (int16/uint16 dims, one wait, no
// queue) is no longer read. The core count (collectives) came after version 2's first programs; it
// is flagged, so programs without collectives encode as before; so is a dynamic offset.
#pragma once

#include <cstdint>
#include <vector>

#include "support/diagnostic.h"
#include "targets/nc/isa/instruction.h"

namespace tessel::nc {

/// The encoding version this build writes and reads.
inline constexpr uint16_t kEncodingVersion = 2;

/// Encodes a program. Precondition: each instruction has at most kMaxScalars immediates, kMaxWaits
/// waits and kMaxFreeDims dims per operand (as decode returns or the assembler builds them; checked);
/// the verifier is not required to have run.
std::vector<uint8_t> encodeProgram(const std::vector<Instruction> &program);

/// Decodes a program. Truncated or corrupt input (bad magic or version, unknown opcode, enum out
/// of range, too many waits, length mismatch, malformed varint) gives a ParseError naming the byte
/// offset; it never reads past the end.
Expected<std::vector<Instruction>> decodeProgram(const std::vector<uint8_t> &bytes);

}  // namespace tessel::nc
