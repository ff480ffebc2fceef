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
            "k.s:1:8: unknown engine 'GPU'; expected PE, DVE, ACT, POOL, SP or DMA");
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
  EXPECT_EQ(errorOf("memset.DVE dst=sbuf[p0:1, off 0, [9223372036854775808,2]]:f32"),
            "k.s:1:35: expected stride in -9223372036854775808..9223372036854775807");
  EXPECT_EQ(errorOf("memset.DVE dst=sbuf[p0:1, off 0, [1,4294967296]]:f32"),
            "k.s:1:37: expected dim count in 0..4294967295");
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

TEST(NcIsaAssembler, WideDimsParse) {
  // The syntax takes any int64 stride and uint32 count; the int16/uint16 rule is the verifier's.
  auto program = assemble("memset.DVE dst=sbuf[p0:1, off 0, [40000,70000], [-9223372036854775808,1]]:f32", "k.s");
  ASSERT_TRUE(program.ok()) << program.diag().str();
  EXPECT_EQ(program->at(0).operands[0]->dims,
            (std::vector<FreeDim>{{40000, 70000}, {INT64_MIN, 1}}));
}

TEST(NcIsaAssembler, Waits) {
  auto program = assemble("memset.DVE dst=sbuf[p0:1, off 0]:f32 wait=s1>=3,s4>=1", "k.s");
  ASSERT_TRUE(program.ok()) << program.diag().str();
  EXPECT_EQ(program->at(0).waits, (std::vector<SemaphoreWait>{{1, 3}, {4, 1}}));
  std::string eight = "wait=s0>=1,s1>=1,s2>=1,s3>=1,s4>=1,s5>=1,s6>=1,s7>=1";
  EXPECT_EQ(errorOf("memset.DVE dst=sbuf[p0:1, off 0]:f32 " + eight), "(no error)");
  EXPECT_EQ(errorOf("memset.DVE dst=sbuf[p0:1, off 0]:f32 " + eight + ",s8>=1"), "k.s:1:91: more than 8 semaphore waits");
  EXPECT_EQ(errorOf("memset.DVE dst=sbuf[p0:1, off 0]:f32 wait=s1>=3,"), "k.s:1:49: expected 's'");
  EXPECT_EQ(errorOf("memset.DVE dst=sbuf[p0:1, off 0]:f32 wait=s1>=3 wait=s2>=1"), "k.s:1:49: duplicate field 'wait'");
  EXPECT_EQ(errorOf("memset.DVE dst=sbuf[p0:1, off 0]:f32 wait="), "k.s:1:43: expected 's'");
}

TEST(NcIsaAssembler, Queue) {
  auto program = assemble("dma_copy.DMA dst=sbuf[p0:1, off 0]:f32 src=hbm[p0:1, off 0]:f32 queue=q15", "k.s");
  ASSERT_TRUE(program.ok()) << program.diag().str();
  EXPECT_EQ(program->at(0).queue, 15);
  EXPECT_EQ(errorOf("dma_copy.DMA dst=sbuf[p0:1, off 0]:f32 src=hbm[p0:1, off 0]:f32 queue=3"),
            "k.s:1:71: expected 'q'");
  EXPECT_EQ(errorOf("dma_copy.DMA dst=sbuf[p0:1, off 0]:f32 src=hbm[p0:1, off 0]:f32 queue=q256"),
            "k.s:1:72: expected queue in 0..255");
}

TEST(NcIsaAssembler, NewOptionalOperands) {
  auto program = assemble("tensor_scalar.DVE dst=sbuf[p0:1, off 0]:f32 src=sbuf[p0:1, off 4]:f32 "
                          "scalar1=sbuf[p0:1, off 8]:f32 op0=add op1=add\n"
                          "activation.ACT dst=sbuf[p0:1, off 0]:f32 src=sbuf[p0:1, off 4]:f32 scale=sbuf[p0:1, off 8]:f32 "
                          "func=exp",
                          "k.s");
  ASSERT_TRUE(program.ok()) << program.diag().str();
  EXPECT_FALSE(program->at(0).operands[2].has_value());
  EXPECT_TRUE(program->at(0).operands[3].has_value());
  EXPECT_TRUE(program->at(1).operands[4].has_value());
  EXPECT_EQ(errorOf("tensor_copy.DVE dst=sbuf[p0:1, off 0]:f32 src=sbuf[p0:1, off 4]:f32 scale=sbuf[p0:1, off 8]:f32"),
            "k.s:1:69: unknown field 'scale' for tensor_copy");
}

TEST(NcIsaAssembler, TooManyDims) {
  EXPECT_EQ(errorOf("memset.DVE dst=sbuf[p0:1, off 0, [1,1], [1,1], [1,1], [1,1], [1,1]]:f32"),
            "k.s:1:60: more than 4 free dims");
}

}  // namespace
}  // namespace tessel::nc
