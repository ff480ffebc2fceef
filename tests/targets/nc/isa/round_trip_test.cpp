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
  std::set<size_t> dimCounts;
  bool optionalAbsent = false, optionalPresent = false;
  for (const Instruction &insn : program) {
    opcodes.insert(insn.opcode);
    const auto &slots = operandSlots(insn.opcode);
    for (size_t i = 0; i < slots.size(); ++i) {
      if (slots[i].optional) (insn.operands[i] ? optionalPresent : optionalAbsent) = true;
      if (!insn.operands[i]) continue;
      spaces.insert(insn.operands[i]->space);
      dtypes.insert(insn.operands[i]->dtype);
      dimCounts.insert(insn.operands[i]->dims.size());
    }
  }
  EXPECT_EQ(static_cast<int>(opcodes.size()), numOpcodes());
  EXPECT_EQ(static_cast<int>(spaces.size()), kNumMemSpaces);
  EXPECT_EQ(static_cast<int>(dtypes.size()), kNumDTypes);
  EXPECT_EQ(dimCounts.size(), static_cast<size_t>(kMaxFreeDims + 1));
  EXPECT_TRUE(optionalAbsent && optionalPresent);
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

TEST(NcIsaRoundTrip, EveryOpcodeProgramVerifiesOnNcV2) {
  // Keeps the round-trip program realistic: every line is legal on nc-v2.
  Status status = verifyProgram(assembleOrDie(testing::kEveryOpcodeProgram));
  EXPECT_TRUE(status.ok()) << status.str();
}

}  // namespace
}  // namespace tessel::nc
