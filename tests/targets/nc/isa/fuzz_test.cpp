// Corrupted encodings (every truncation, random bit flips, random bytes) must decode to a
// Diagnostic or to a valid program, never crash; valid results must re-encode to the same bytes.
#include <gtest/gtest.h>

#include <random>

#include "targets/nc/isa/assembler.h"
#include "targets/nc/isa/disassembler.h"
#include "targets/nc/isa/encoding.h"
#include "targets/nc/isa/verifier.h"
#include "test_program.h"

namespace tessel::nc {
namespace {

std::vector<uint8_t> goodBytes() {
  auto program = assemble(testing::kEveryOpcodeProgram, "every.s");
  EXPECT_TRUE(program.ok());
  return encodeProgram(*program);
}

/// Decodes; a success must re-encode to the same bytes, print and assemble back to them, and
/// verify without crashing; a failure names a byte offset.
void checkDecode(const std::vector<uint8_t> &bytes, int *failures) {
  auto decoded = decodeProgram(bytes);
  if (!decoded.ok()) {
    ++*failures;
    EXPECT_NE(decoded.diag().message.find("byte offset"), std::string::npos) << decoded.diag().message;
    return;
  }
  EXPECT_EQ(encodeProgram(*decoded), bytes);
  auto reassembled = assemble(disassemble(*decoded), "fuzz.s");
  ASSERT_TRUE(reassembled.ok()) << reassembled.diag().message;
  EXPECT_EQ(encodeProgram(*reassembled), bytes);
  (void)verifyProgram(*decoded);
}

TEST(NcIsaFuzz, EveryTruncationIsADiagnostic) {
  std::vector<uint8_t> bytes = goodBytes();
  int failures = 0;
  for (size_t length = 0; length < bytes.size(); ++length)
    checkDecode(std::vector<uint8_t>(bytes.begin(), bytes.begin() + length), &failures);
  EXPECT_EQ(failures, static_cast<int>(bytes.size()));
}

TEST(NcIsaFuzz, BitFlipsNeverCrash) {
  std::vector<uint8_t> bytes = goodBytes();
  std::mt19937 rng(1234);
  int failures = 0;
  const int kCases = 2000;
  for (int i = 0; i < kCases; ++i) {
    std::vector<uint8_t> mutated = bytes;
    int flips = 1 + static_cast<int>(rng() % 4);
    for (int f = 0; f < flips; ++f) mutated[rng() % mutated.size()] ^= 1 << (rng() % 8);
    if (rng() % 4 == 0) mutated.resize(rng() % mutated.size());
    checkDecode(mutated, &failures);
  }
  EXPECT_GT(failures, 0);
}

TEST(NcIsaFuzz, RandomBodiesNeverCrash) {
  std::vector<uint8_t> header = goodBytes();
  header.resize(10);
  std::mt19937 rng(99);
  int failures = 0;
  for (int i = 0; i < 1000; ++i) {
    std::vector<uint8_t> bytes = header;
    size_t bodySize = rng() % 200;
    for (size_t b = 0; b < bodySize; ++b) bytes.push_back(static_cast<uint8_t>(rng()));
    for (int b = 0; b < 4; ++b) bytes[6 + b] = static_cast<uint8_t>(bodySize >> (8 * b));
    checkDecode(bytes, &failures);
  }
  EXPECT_GT(failures, 0);
}

TEST(NcIsaFuzz, SpecificCorruptionsNameTheOffset) {
  std::vector<uint8_t> bytes = goodBytes();
  std::vector<uint8_t> badOpcode = bytes;
  badOpcode[11] = 0xee;  // First instruction's opcode, after the 10-byte header and a 1-byte count.
  auto decoded = decodeProgram(badOpcode);
  ASSERT_FALSE(decoded.ok());
  EXPECT_EQ(decoded.diag().message, "nc program: byte offset 11: bad opcode 238");
  // First instruction: 13 flags, 18 scalar count, 19 wait count, 20 increment id, 21 queue.
  std::vector<uint8_t> badFlags = bytes;
  badFlags[13] = 16;
  decoded = decodeProgram(badFlags);
  ASSERT_FALSE(decoded.ok());
  EXPECT_EQ(decoded.diag().message, "nc program: byte offset 13: bad flags 16");
  std::vector<uint8_t> tooManyWaits = bytes;
  tooManyWaits[19] = kMaxWaits + 1;
  decoded = decodeProgram(tooManyWaits);
  ASSERT_FALSE(decoded.ok());
  EXPECT_EQ(decoded.diag().message, "nc program: byte offset 19: bad wait count 9");
  std::vector<uint8_t> otherQueue = bytes;
  otherQueue[21] = 200;  // Any queue byte decodes; the verifier judges it.
  decoded = decodeProgram(otherQueue);
  ASSERT_TRUE(decoded.ok()) << decoded.diag().str();
  EXPECT_EQ(decoded->at(0).queue, 200);
  EXPECT_FALSE(verifyProgram(*decoded).ok());
  std::vector<uint8_t> longer = bytes;
  longer.push_back(0);
  decoded = decodeProgram(longer);
  ASSERT_FALSE(decoded.ok());
  EXPECT_NE(decoded.diag().message.find("byte offset 6: length mismatch"), std::string::npos);
  std::vector<uint8_t> badMagic = bytes;
  badMagic[0] = 'X';
  EXPECT_FALSE(decodeProgram(badMagic).ok());
  std::vector<uint8_t> badVersion = bytes;
  badVersion[4] = 9;
  decoded = decodeProgram(badVersion);
  ASSERT_FALSE(decoded.ok());
  EXPECT_EQ(decoded.diag().message, "nc program: byte offset 4: unsupported version 9; expected 2");
}

}  // namespace
}  // namespace tessel::nc
