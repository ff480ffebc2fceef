// Reads accelerator programs written as text assembly, the form kernel engineers read and tests
// hold as golden files. The disassembler prints the same syntax; text -> binary -> text is
// byte-identical for canonical text (as the disassembler writes it).
//
// Syntax: one instruction per line; '#' starts a comment; blank lines are ignored.
//   <mnemonic>.<ENGINE> field=value ...
// mnemonic as in isa.def (nc_matmul, activation, ...); ENGINE one of PE DVE ACT POOL SP DMA.
// Fields are separated by spaces and may come in any order; each at most once. The canonical
// (printed) order:
//   <slot>=<ap>       one per operand slot of the opcode's signature (dst, src, stationary, bias, ...);
//                     optional slots ('?' in isa.def) may be left out
//   op0=<alu op>      op1=<alu op>     ALU operators of section 6.2 (add, multiply, bitwise_and, ...)
//   func=<act func>   ACT function of section 6.3 (gelu, exp, copy, ...)
//   imm=<f>,<f>,...   up to 4 float immediates; non-finite values as bits:0x<8 hex digits>
//   acc=1             nc_matmul accumulates into PSUM
//   queue=q<n>        the DMA queue, 0..255 (the verifier allows 0..queuesPerEngine-1); printed on
//                     every dma_copy; other instructions must leave it out (or write q0)
//   cores=<n>         all_gather/all_reduce: the cores taking part (the verifier allows
//                     1..coresPerChip); printed on every collective; others leave it out
//   wait=s<id>>=<v>,s<id>>=<v>,...   up to 8 waits: start only when every semaphore <id> (0..65535)
//                     has reached <v> (0..4294967295)
//   inc=s<id>         increment semaphore <id> by 1 on completion
// An access pattern <ap> is
//   <space>[p<start>:<count>, off <bytes>, [<stride>,<count>], ...]:<dtype>
// space sbuf|psum|hbm; up to 4 free dims outermost first, stride in elements and count. The syntax
// takes any int64 stride and uint32 count; the verifier holds SBUF/PSUM operands to int16 strides
// and uint16 counts (HBM operands may be wide) and every count to >= 1.
// dtype u8 i8 u16 i16 u32 i32 f8e4m3 f8e5m2 f8e4m3fn f8e8m0fnu f16 bf16 tf32 f32 bool. Examples:
//   activation.ACT dst=sbuf[p0:128, off 0, [1,512]]:bf16 src=psum[p0:128, off 0, [1,512]]:f32 func=gelu wait=s3>=1 inc=s4
//   dma_copy.DMA dst=sbuf[p0:128, off 0, [1,512]]:bf16 src=hbm[p0:1, off 0, [100000,128], [1,512]]:bf16 queue=q3 wait=s1>=3,s4>=1 inc=s5
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "support/diagnostic.h"
#include "targets/nc/isa/instruction.h"

namespace tessel::nc {

/// Parses assembly text. `fileName` only labels errors, which read "file:line:col: message"
/// (ErrorCode::ParseError). Checks syntax and field ranges, not the tile rules (see verifier.h).
Expected<std::vector<Instruction>> assemble(std::string_view text, const std::string &fileName);

/// An assembled program and, for each instruction, the 1-based line it came from (to place the
/// verifier's messages in the source).
struct AssembledProgram {
  std::vector<Instruction> instructions;
  std::vector<size_t> lines;
};

/// assemble(), also returning the source line of each instruction.
Expected<AssembledProgram> assembleWithLines(std::string_view text, const std::string &fileName);

}  // namespace tessel::nc
