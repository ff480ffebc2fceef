// `tessel asm` and `tessel disasm`, run as a user would: assembly in, binary out, and the binary
// printed back as the same canonical text; syntax errors name file:line:col, tile-rule violations
// name file:line and the rule (checked against the --target profile's limits), and corrupt binaries
// name the byte offset; every error exits 1 and writes nothing.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "../common/run_tool.h"

namespace tessel {
namespace {

namespace fs = std::filesystem;

using testing::CommandResult;
using testing::runTool;

const std::string kProgram =
    "# Load a tile, scale it, store it.\n"
    "dma_copy.DMA dst=sbuf[p0:128, off 0, [1,512]]:bf16 src=hbm[p0:1, off 0, [100000,128], [1,512]]:bf16 "
    "queue=q3 inc=s1\n"
    "\n"
    "tensor_scalar.DVE dst=sbuf[p0:128, off 1024, [1,512]]:bf16 src=sbuf[p0:128, off 0, [1,512]]:bf16 "
    "scalar0=sbuf[p0:128, off 4096]:f32 op0=multiply wait=s1>=1,s7>=2 inc=s2\n"
    "dma_copy.DMA dst=hbm[p0:1, off 0, [1,65536]]:bf16 src=sbuf[p0:128, off 1024, [1,512]]:bf16 queue=q15 "
    "wait=s2>=1\n";

std::string readFile(const fs::path &path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

/// The program without comments and blank lines: the canonical text disasm prints.
std::string canonical(const std::string &text) {
  std::string out;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);)
    if (!line.empty() && line[0] != '#') out += line + "\n";
  return out;
}

class NcAsmCommand : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("tessel-nc-asm-test-" + std::to_string(::getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string write(const std::string &name, const std::string &text) {
    fs::path path = dir_ / name;
    std::ofstream(path, std::ios::binary) << text;
    return path.string();
  }
  std::string path(const std::string &name) const { return (dir_ / name).string(); }
  fs::path dir_;
};

TEST_F(NcAsmCommand, AssembleThenDisassembleGivesTheCanonicalText) {
  std::string source = write("kernel.s", kProgram);
  CommandResult assembled = runTool("asm " + source);
  ASSERT_EQ(assembled.exitCode, 0) << assembled.output;
  EXPECT_EQ(assembled.output, "");
  ASSERT_TRUE(fs::exists(path("kernel.tnc")));  // Default output: FILE with .tnc.
  std::string binary = readFile(path("kernel.tnc"));
  EXPECT_EQ(binary.substr(0, 4), "TNCI");
  CommandResult printed = runTool("disasm " + path("kernel.tnc"));
  ASSERT_EQ(printed.exitCode, 0) << printed.output;
  EXPECT_EQ(printed.output, canonical(kProgram));
  // The printed text assembles to the same bytes (on nc-v3 too, and with an explicit -o).
  std::string again = write("again.s", printed.output);
  CommandResult reassembled = runTool("asm " + again + " --target nc-v3 -o " + path("again.bin"));
  ASSERT_EQ(reassembled.exitCode, 0) << reassembled.output;
  EXPECT_EQ(readFile(path("again.bin")), binary);
  EXPECT_FALSE(fs::exists(path("again.tnc")));
}

TEST_F(NcAsmCommand, SyntaxErrorNamesFileLineAndColumn) {
  std::string source = write("bad.s", "# header\nmemset.DVE dst=sbuf[p0:1, off 0]:f32 imm=1\nmemset.GPU dst=sbuf[p0:1, off 0]:f32\n");
  CommandResult r = runTool("asm " + source);
  EXPECT_EQ(r.exitCode, 1);
  EXPECT_EQ(r.output, "tessel: error: " + source + ":3:8: unknown engine 'GPU'; expected PE, DVE, ACT, POOL, SP or DMA\n");
  EXPECT_FALSE(fs::exists(path("bad.tnc")));
}

TEST_F(NcAsmCommand, RuleViolationsNameFileLineAndRule) {
  std::string source = write("rule.s",
                             "memset.DVE dst=sbuf[p0:1, off 0]:f32 imm=1\n"
                             "\n"
                             "memset.DVE dst=sbuf[p16:1, off 0]:f32 imm=1\n"
                             "memset.POOL dst=sbuf[p0:128, off 0, [40000,2]]:f32 queue=q1\n");
  CommandResult r = runTool("asm " + source);
  EXPECT_EQ(r.exitCode, 1);
  EXPECT_EQ(r.output,
            "tessel: error: " + source + ":3: #1 memset.DVE: dst: start partition 16 not allowed for 1 partitions; "
            "must be a multiple of 32 (T6) [target nc-v2]\n"
            "tessel: error: " + source + ":4: #2 memset.POOL: queue q1 on a non-DMA instruction; only dma_copy has "
            "a queue (must be 0) [target nc-v2]\n"
            "tessel: error: " + source + ":4: #2 memset.POOL: dst: free dim 0 stride 40000 outside the sbuf "
            "access-pattern range -32768..32767 (int16 stride) [target nc-v2]\n");
  EXPECT_FALSE(fs::exists(path("rule.tnc")));
}

TEST_F(NcAsmCommand, LimitsComeFromTheTargetProfile) {
  // A copy of nc-v2 with 4 DMA queues per engine: queue q4 is legal on nc-v2 but not there.
  std::string json = readFile(std::string(TESSEL_SOURCE_DIR) + "/src/targets/nc/machine/profiles/nc-v2.json");
  size_t at = json.find("\"queuesPerEngine\": 16");
  ASSERT_NE(at, std::string::npos);
  json.replace(at, 21, "\"queuesPerEngine\": 4");
  std::string profile = write("four-queues.json", json);
  std::string source =
      write("q.s", "dma_copy.DMA dst=sbuf[p0:1, off 0, [1,4]]:f32 src=hbm[p0:1, off 0, [1,4]]:f32 queue=q4\n");
  EXPECT_EQ(runTool("asm " + source).exitCode, 0);
  CommandResult r = runTool("asm " + source + " --target " + profile);
  EXPECT_EQ(r.exitCode, 1);
  EXPECT_EQ(r.output, "tessel: error: " + source + ":1: #0 dma_copy.DMA: queue q4 outside the DMA queues q0..q3 "
                      "[target nc-v2]\n");
  CommandResult unknown = runTool("asm " + source + " --target nc-v9");
  EXPECT_EQ(unknown.exitCode, 1);
  EXPECT_NE(unknown.output.find("nc-v9"), std::string::npos) << unknown.output;
}

TEST_F(NcAsmCommand, CorruptBinaryNamesTheByteOffset) {
  std::string source = write("k.s", kProgram);
  ASSERT_EQ(runTool("asm " + source).exitCode, 0);
  std::string binary = readFile(path("k.tnc"));
  std::string truncated = write("truncated.tnc", binary.substr(0, binary.size() - 3));
  CommandResult r = runTool("disasm " + truncated);
  EXPECT_EQ(r.exitCode, 1);
  EXPECT_EQ(r.output.rfind("tessel: error: " + truncated + ": nc program: byte offset 6: length mismatch", 0), 0u)
      << r.output;
  std::string badOpcode = binary;
  badOpcode[11] = static_cast<char>(0xee);
  std::string corrupt = write("corrupt.tnc", badOpcode);
  r = runTool("disasm " + corrupt);
  EXPECT_EQ(r.exitCode, 1);
  EXPECT_EQ(r.output, "tessel: error: " + corrupt + ": nc program: byte offset 11: bad opcode 238\n");
  r = runTool("disasm " + path("missing.tnc"));
  EXPECT_EQ(r.exitCode, 1);
  EXPECT_EQ(r.output, "tessel: error: " + path("missing.tnc") + ": cannot open the file\n");
}

}  // namespace
}  // namespace tessel
