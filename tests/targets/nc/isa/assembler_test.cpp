// Assembler error messages: each names file:line:col of the offending token.
#include <gtest/gtest.h>

#include "targets/nc/isa/assembler.h"

namespace tessel::nc {
namespace {

std::string errorOf(const std::string &text) {
  auto program = assemble(text, "k.s");
  if (program.ok()) return "(no error)";
  EXPECT_EQ(program.diag().code, ErrorCode::ParseError);
  return program.diag().message;
}

TEST(NcIsaAssembler, UnknownInstruction) {
  EXPECT_EQ(errorOf("\n  matmul.PE dst=psum[p0:1, off 0]:f32"), "k.s:2:3: unknown instruction 'matmul'");
}

TEST(NcIsaAssembler, UnknownEngine) {
  EXPECT_EQ(errorOf("memset.GPU dst=sbuf[p0:1, off 0]:f32"),
            "k.s:1:8: unknown engine 'GPU'; expected PE, DVE, ACT, POOL or DMA");
}

TEST(NcIsaAssembler, UnknownField) {
  EXPECT_EQ(errorOf("memset.DVE dst=sbuf[p0:1, off 0]:f32 src=sbuf[p0:1, off 0]:f32"),
            "k.s:1:38: unknown field 'src' for memset");
}

TEST(NcIsaAssembler, DuplicateField) {
  EXPECT_EQ(errorOf("memset.DVE dst=sbuf[p0:1, off 0]:f32 imm=1 imm=2"), "k.s:1:44: duplicate field 'imm'");
}

TEST(NcIsaAssembler, MissingOperand) {
  EXPECT_EQ(errorOf("tensor_copy.DVE dst=sbuf[p0:1, off 0]:f32"), "k.s:1:42: tensor_copy needs operand 'src'");
}

TEST(NcIsaAssembler, BadMemorySpaceAndDtype) {
  EXPECT_EQ(errorOf("memset.DVE dst=dram[p0:1, off 0]:f32"),
            "k.s:1:16: unknown memory space 'dram'; expected sbuf, psum or hbm");
  EXPECT_EQ(errorOf("memset.DVE dst=sbuf[p0:1, off 0]:f64"), "k.s:1:34: unknown dtype 'f64'");
}

TEST(NcIsaAssembler, OutOfRangeNumbers) {
  EXPECT_EQ(errorOf("memset.DVE dst=sbuf[p0:1, off 0, [40000,2]]:f32"),
            "k.s:1:35: expected stride in -32768..32767");
  EXPECT_EQ(errorOf("memset.DVE dst=sbuf[p300:1, off 0]:f32"), "k.s:1:22: expected start partition in 0..255");
  EXPECT_EQ(errorOf("memset.DVE dst=sbuf[p0:1, off 0]:f32 inc=s70000"), "k.s:1:43: expected semaphore id in 0..65535");
}

TEST(NcIsaAssembler, MalformedSyntax) {
  EXPECT_EQ(errorOf("memset.DVE dst=sbuf[p0:1 off 0]:f32"), "k.s:1:25: expected ', off '");
  EXPECT_EQ(errorOf("memset.DVE dst=sbuf[p0:1, off 0]:f32 wait=s1=2"), "k.s:1:45: expected '>='");
  EXPECT_EQ(errorOf("memset.DVE dst=sbuf[p0:1, off 0]:f32 imm=x"),
            "k.s:1:42: bad immediate 'x'; expected a finite float or bits:0x<8 hex digits>");
  EXPECT_EQ(errorOf("activation.ACT dst=sbuf[p0:1, off 0]:f32 src=sbuf[p0:1, off 0]:f32 func=gelu2"),
            "k.s:1:73: unknown ACT function 'gelu2'");
  EXPECT_EQ(errorOf("tensor_tensor.DVE op0=plus"), "k.s:1:23: unknown ALU op 'plus'");
}

TEST(NcIsaAssembler, TooManyDims) {
  EXPECT_EQ(errorOf("memset.DVE dst=sbuf[p0:1, off 0, [1,1], [1,1], [1,1], [1,1], [1,1]]:f32"),
            "k.s:1:60: more than 4 free dims");
}

}  // namespace
}  // namespace tessel::nc
