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

// A model may declare any sizes: inputs of 2^40 and 2^60 elements end in an error that names the
// input (or the plan) and the bytes it would need, on every command that allocates them.
TEST(CliErrors, AbsurdInputSizeIsAClearError) {
  auto dir = testing::makeTempDir("cli-absurd");
  const std::string huge = (dir / "huge.onnx").string(), vast = (dir / "vast.onnx").string();
  onnx::ModelProto model = testing::makeModel(13, {int64_t{1} << 40, 4});
  testing::addNode(model, "Relu", {"x"}, {"y"}, "relu");
  testing::writeBytes(huge, model.SerializeAsString());
  model = testing::makeModel(13, {int64_t{1} << 20, int64_t{1} << 20, int64_t{1} << 20});
  testing::addNode(model, "Relu", {"x"}, {"y"}, "relu");
  testing::writeBytes(vast, model.SerializeAsString());
  for (const std::string &path : {huge, vast}) {
    for (const char *target : {"ref", "cpu"}) {
      CommandResult r = runTool("run " + path + " --target " + target);
      EXPECT_EQ(r.exitCode, 1) << r.output;
      EXPECT_EQ(r.output.find("internal error"), std::string::npos) << r.output;
      EXPECT_NE(r.output.find("input 'x' (f32["), std::string::npos) << r.output;
    }
  }
  CommandResult run = runTool("run " + huge);
  EXPECT_NE(run.output.find("would need 17592186044416 bytes (16.0 TiB)"), std::string::npos) << run.output;
  CommandResult compile = runTool("compile " + huge + " --target cpu -o " + (dir / "huge.tsl").string());
  EXPECT_EQ(compile.exitCode, 1) << compile.output;
  EXPECT_NE(compile.output.find("the plan's buffers would need 17592186044416 bytes"), std::string::npos)
      << compile.output;
  // The accelerator keeps the node on the host, saying why; running the artifact asks for the input.
  const std::string artifact = (dir / "huge.nc.tsl").string();
  CommandResult nc = runTool("compile " + huge + " --target nc-v2 --report -o " + artifact);
  EXPECT_EQ(nc.exitCode, 0) << nc.output;
  EXPECT_NE(nc.output.find("tensor 'x' [1099511627776,4] needs 16.0 TiB of HBM"), std::string::npos) << nc.output;
  CommandResult ncRun = runTool("run " + artifact);
  EXPECT_EQ(ncRun.exitCode, 1) << ncRun.output;
  EXPECT_NE(ncRun.output.find("input 'x' (f32["), std::string::npos) << ncRun.output;
  CommandResult bench = runTool("bench " + vast + " --runs 1");
  EXPECT_EQ(bench.exitCode, 1) << bench.output;
  EXPECT_EQ(bench.output.find("internal error"), std::string::npos) << bench.output;
}

TEST(CliErrors, UnknownSubcommandIsUsageError) {
  CommandResult r = runTool("frobnicate");
  EXPECT_NE(r.exitCode, 0);
}

}  // namespace
}  // namespace tessel
