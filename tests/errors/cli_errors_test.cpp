// The command-line tool turns every error into one "tessel: error: ..." line naming the file
// (and node), with exit status 1 — checked by running the real binary.
#include <gtest/gtest.h>

#include <array>
#include <cstdio>

#include "../common/run_tool.h"
#include "model_builder.h"

namespace tessel {
namespace {

using testing::CommandResult;
using testing::runTool;

TEST(CliErrors, CorruptModelExitsWithOneClearLine) {
  auto dir = testing::makeTempDir("cli-corrupt");
  std::string good = testing::readBytes(std::string(TESSEL_SOURCE_DIR) + "/examples/small_cnn.onnx");
  std::string path = (dir / "broken.onnx").string();
  testing::writeBytes(path, good.substr(0, 100));
  for (const char *cmd : {"info", "run"}) {
    CommandResult r = runTool(std::string(cmd) + " " + path);
    EXPECT_EQ(r.exitCode, 1) << r.output;
    EXPECT_EQ(r.output, "tessel: error: " + path + ": not a valid ONNX protobuf (100 bytes): the file is truncated or "
                        "corrupt\n");
  }
}

TEST(CliErrors, BadInputFileAndShape) {
  const std::string model = std::string(TESSEL_SOURCE_DIR) + "/examples/small_cnn.onnx";
  CommandResult missing = runTool("run " + model + " --input image=/nonexistent.npy");
  EXPECT_EQ(missing.exitCode, 1);
  EXPECT_NE(missing.output.find("/nonexistent.npy: cannot open .npy file"), std::string::npos) << missing.output;
  CommandResult wrongName = runTool("run " + model + " --input picture=" + std::string(TESSEL_SOURCE_DIR) +
                                    "/examples/small_cnn_input.npy");
  EXPECT_EQ(wrongName.exitCode, 1);
  EXPECT_NE(wrongName.output.find("the model has no input named 'picture'"), std::string::npos) << wrongName.output;
}

TEST(CliErrors, UnknownSubcommandIsUsageError) {
  CommandResult r = runTool("frobnicate");
  EXPECT_NE(r.exitCode, 0);
}

}  // namespace
}  // namespace tessel
