// `tessel kernel list` and `tessel kernel run`, as a user runs them: the time and the check result
// are printed, --profile writes the report and the trace, and bad input exits 1 with one clear
// "tessel: error:" line.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include "../common/run_tool.h"

namespace tessel {
namespace {

namespace fs = std::filesystem;

using testing::CommandResult;
using testing::runTool;

bool contains(const std::string &text, const std::string &part) { return text.find(part) != std::string::npos; }

TEST(KernelCommand, ListShowsEveryFamily) {
  CommandResult result = runTool("kernel list");
  ASSERT_EQ(result.exitCode, 0) << result.output;
  for (const char *name : {"add", "gelu", "softmax", "layernorm", "rmsnorm", "reduce_sum", "transpose"})
    EXPECT_TRUE(contains(result.output, std::string("\n") + name + " ")) << name << "\n" << result.output;
  EXPECT_TRUE(contains(result.output, "R,C")) << result.output;
  EXPECT_TRUE(contains(result.output, "bf16,f32")) << result.output;
}

TEST(KernelCommand, RunPrintsTimeAndPass) {
  CommandResult result = runTool("kernel run softmax --target nc-v2 --shape R=256,C=512");
  ASSERT_EQ(result.exitCode, 0) << result.output;
  EXPECT_TRUE(contains(result.output, "kernel softmax R=256,C=512 bf16 on nc-v2")) << result.output;
  EXPECT_TRUE(contains(result.output, "simulated time: ")) << result.output;
  EXPECT_TRUE(contains(result.output, " us")) << result.output;
  EXPECT_TRUE(contains(result.output, "check: PASS")) << result.output;
  EXPECT_FALSE(contains(result.output, "races:")) << result.output;
}

TEST(KernelCommand, TimingOnlySkipsTheCheck) {
  CommandResult result = runTool("kernel run add --target nc-v3 --shape R=130,C=513 --dtype f32 --option broadcast=row "
                                 "--timing-only");
  ASSERT_EQ(result.exitCode, 0) << result.output;
  EXPECT_TRUE(contains(result.output, "kernel add R=130,C=513 f32 on nc-v3 broadcast=row")) << result.output;
  EXPECT_TRUE(contains(result.output, "check: skipped")) << result.output;
}

TEST(KernelCommand, VariantSelectsTheTutorialForm) {
  CommandResult list = runTool("kernel list");
  ASSERT_EQ(list.exitCode, 0) << list.output;
  EXPECT_TRUE(contains(list.output, "[variants: blocked, tiled, hoisted, mn-blocked, mnk-blocked]")) << list.output;
  EXPECT_TRUE(contains(list.output, "\nmamba ")) << list.output;
  CommandResult tiled = runTool("kernel run matmul --variant tiled --target nc-v2 --shape M=128,N=512,K=256");
  ASSERT_EQ(tiled.exitCode, 0) << tiled.output;
  EXPECT_TRUE(contains(tiled.output, "kernel matmul variant tiled M=128,N=512,K=256 bf16 on nc-v2")) << tiled.output;
  EXPECT_TRUE(contains(tiled.output, "check: PASS")) << tiled.output;
  CommandResult unknown = runTool("kernel run matmul --variant fastest --target nc-v2");
  EXPECT_EQ(unknown.exitCode, 1) << unknown.output;
  EXPECT_TRUE(contains(unknown.output, "unknown variant 'fastest'")) << unknown.output;
}

TEST(KernelCommand, ProfileWritesReportAndTrace) {
  fs::path dir = fs::temp_directory_path() / ("tessel-kernel-profile-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  CommandResult result = runTool("kernel run layernorm --target nc-v3 --shape R=130,C=513 --profile " + dir.string() +
                                 " --print-schedule --print-allocation");
  EXPECT_EQ(result.exitCode, 0) << result.output;
  EXPECT_TRUE(fs::exists(dir / "report.html")) << result.output;
  EXPECT_TRUE(fs::exists(dir / "trace.json")) << result.output;
  EXPECT_TRUE(contains(result.output, "check: PASS")) << result.output;
  fs::remove_all(dir);
}

TEST(KernelCommand, ErrorsExitOneWithAMessage) {
  CommandResult unknown = runTool("kernel run no_such_kernel --shape R=1");
  EXPECT_EQ(unknown.exitCode, 1);
  EXPECT_TRUE(contains(unknown.output, "tessel: error: unknown kernel 'no_such_kernel'")) << unknown.output;

  CommandResult badShape = runTool("kernel run softmax --shape R=abc,C=4");
  EXPECT_EQ(badShape.exitCode, 1);
  EXPECT_TRUE(contains(badShape.output, "tessel: error: kernel 'softmax': dim R=abc is not a positive integer"))
      << badShape.output;

  CommandResult unknownDim = runTool("kernel run softmax --shape M=4");
  EXPECT_EQ(unknownDim.exitCode, 1);
  EXPECT_TRUE(contains(unknownDim.output, "kernel 'softmax': unknown dim 'M'")) << unknownDim.output;

  CommandResult badTarget = runTool("kernel run softmax --target nc-v9 --shape R=4,C=4");
  EXPECT_EQ(badTarget.exitCode, 1);
  EXPECT_TRUE(contains(badTarget.output, "tessel: error: kernel 'softmax': ")) << badTarget.output;
  EXPECT_TRUE(contains(badTarget.output, "nc-v9")) << badTarget.output;

  CommandResult badOption = runTool("kernel run add --shape R=4,C=4 --option broadcast=diagonal");
  EXPECT_EQ(badOption.exitCode, 1);
  EXPECT_TRUE(contains(badOption.output, "tessel: error: kernel 'add': option broadcast=diagonal")) << badOption.output;
}

}  // namespace
}  // namespace tessel
