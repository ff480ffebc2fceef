// Round trips between text assembly and the binary encoding over a program that uses every opcode
// and every operand form.
#include <gtest/gtest.h>

#include <set>

#include "targets/nc/isa/assembler.h"
#include "targets/nc/isa/disassembler.h"
#include "targets/nc/isa/encoding.h"
#include "targets/nc/isa/verifier.h"
#include "test_program.h"

namespace tessel::nc {
namespace {

std::vector<Instruction> assembleOrDie(const std::string &text) {
  auto program = assemble(text, "every.s");
  EXPECT_TRUE(program.ok()) << program.diag().str();
  return program.ok() ? *program : std::vector<Instruction>();
}

TEST(NcIsaRoundTrip, ProgramCoversEveryOpcodeAndOperandForm) {
  std::vector<Instruction> program = assembleOrDie(testing::kEveryOpcodeProgram);
  std::set<Opcode> opcodes;
  std::set<MemSpace> spaces;
  std::set<DType> dtypes;
  std::set<size_t> dimCounts, waitCounts;
  std::set<int> queues;
  bool optionalAbsent = false, optionalPresent = false, allSlots = false, wideHbm = false, negativeWide = false;
  bool dynamicOffset = false;
  for (const Instruction &insn : program) {
    opcodes.insert(insn.opcode);
    dynamicOffset |= insn.dynamicOffset.has_value();
    waitCounts.insert(insn.waits.size());
    if (insn.opcode == Opcode::DmaCopy) queues.insert(insn.queue);
    allSlots |= insn.operands[kMaxOperands - 1].has_value();
    const auto &slots = operandSlots(insn.opcode);
    for (size_t i = 0; i < slots.size(); ++i) {
      if (slots[i].optional) (insn.operands[i] ? optionalPresent : optionalAbsent) = true;
      if (!insn.operands[i]) continue;
      spaces.insert(insn.operands[i]->space);
      dtypes.insert(insn.operands[i]->dtype);
      dimCounts.insert(insn.operands[i]->dims.size());
      for (const FreeDim &dim : insn.operands[i]->dims) {
        wideHbm |= dim.strideElements > INT16_MAX || dim.count > UINT16_MAX;
        negativeWide |= dim.strideElements < INT16_MIN;
      }
    }
  }
  EXPECT_EQ(static_cast<int>(opcodes.size()), numOpcodes());
  EXPECT_EQ(static_cast<int>(spaces.size()), kNumMemSpaces);
  EXPECT_EQ(static_cast<int>(dtypes.size()), kNumDTypes);
  EXPECT_EQ(dimCounts.size(), static_cast<size_t>(kMaxFreeDims + 1));
  EXPECT_TRUE(optionalAbsent && optionalPresent);
  EXPECT_TRUE(allSlots && wideHbm && negativeWide && dynamicOffset);
  EXPECT_EQ(waitCounts, (std::set<size_t>{0, 1, 2, static_cast<size_t>(kMaxWaits)}));
  EXPECT_EQ(queues, (std::set<int>{0, 3, 7, 15}));
}

TEST(NcIsaRoundTrip, TextToBinaryToTextIsByteIdentical) {
  std::vector<uint8_t> bytes = encodeProgram(assembleOrDie(testing::kEveryOpcodeProgram));
  auto decoded = decodeProgram(bytes);
  ASSERT_TRUE(decoded.ok()) << decoded.diag().str();
  EXPECT_EQ(disassemble(*decoded), testing::kEveryOpcodeProgram);
}

TEST(NcIsaRoundTrip, BinaryToTextToBinaryIsIdentical) {
  std::vector<uint8_t> bytes = encodeProgram(assembleOrDie(testing::kEveryOpcodeProgram));
  auto decoded = decodeProgram(bytes);
  ASSERT_TRUE(decoded.ok()) << decoded.diag().str();
  EXPECT_EQ(encodeProgram(assembleOrDie(disassemble(*decoded))), bytes);
}

TEST(NcIsaRoundTrip, EmptyProgram) {
  auto decoded = decodeProgram(encodeProgram({}));
  ASSERT_TRUE(decoded.ok());
  EXPECT_TRUE(decoded->empty());
}

TEST(NcIsaRoundTrip, CommentsAndBlankLinesAreIgnored) {
  auto program = assemble("# header\n\n  memset.DVE dst=sbuf[p0:1, off 0]:f32 imm=1  # fill\n", "c.s");
  ASSERT_TRUE(program.ok()) << program.diag().str();
  EXPECT_EQ(disassemble(*program), "memset.DVE dst=sbuf[p0:1, off 0]:f32 imm=1\n");
}

TEST(NcIsaRoundTrip, FieldsInAnyOrderPrintCanonically) {
  auto program = assemble("dma_copy.DMA inc=s2 wait=s1>=2,s0>=1 queue=q4 src=hbm[p0:1, off 0, [1,4]]:f32 "
                          "dst=sbuf[p0:1, off 0, [1,4]]:f32\n"
                          "dma_copy.DMA dst=sbuf[p0:1, off 0, [1,4]]:f32 src=hbm[p0:1, off 0, [1,4]]:f32\n",
                          "o.s");
  ASSERT_TRUE(program.ok()) << program.diag().str();
  EXPECT_EQ(disassemble(*program),
            "dma_copy.DMA dst=sbuf[p0:1, off 0, [1,4]]:f32 src=hbm[p0:1, off 0, [1,4]]:f32 queue=q4 wait=s1>=2,s0>=1 "
            "inc=s2\n"
            "dma_copy.DMA dst=sbuf[p0:1, off 0, [1,4]]:f32 src=hbm[p0:1, off 0, [1,4]]:f32 queue=q0\n");
}

TEST(NcIsaRoundTrip, ExtremeFieldValuesSurviveBinary) {
  // Values only the verifier rejects still encode and decode exactly (the decoder is not the verifier).
  std::string text =
      "memset.DVE dst=sbuf[p0:1, off 18446744073709551615, [-9223372036854775808,4294967295], "
      "[9223372036854775807,0]]:f32 queue=q255 wait=s65535>=4294967295,s0>=0\n";
  auto program = assemble(text, "x.s");
  ASSERT_TRUE(program.ok()) << program.diag().str();
  auto decoded = decodeProgram(encodeProgram(*program));
  ASSERT_TRUE(decoded.ok()) << decoded.diag().str();
  EXPECT_EQ(*decoded, *program);
  EXPECT_EQ(disassemble(*decoded), text);
  EXPECT_FALSE(verifyProgram(*decoded).ok());
}

TEST(NcIsaRoundTrip, EveryOpcodeProgramVerifiesOnNcV2) {
  // Keeps the round-trip program realistic: every line is legal on nc-v2.
  Status status = verifyProgram(assembleOrDie(testing::kEveryOpcodeProgram));
  EXPECT_TRUE(status.ok()) << status.str();
}

}  // namespace
}  // namespace tessel::nc
