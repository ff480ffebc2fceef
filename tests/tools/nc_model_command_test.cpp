// `tessel compile --target nc-*`, `tessel run` and `tessel profile` on an accelerator artifact, as a
// user runs them: a small model built here (a matmul block with layer norm, an op the accelerator
// lacks, a residual), compiled, simulated and checked against the reference; the artifact is
// byte-identical across compiles; a model too big for the core's HBM fails at compile time; a model
// that runs wholly on the host says so rather than printing a latency of 0 us.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <string>

#include <fmt/format.h>

#include "../common/run_tool.h"
#include "frontend/onnx/exporter.h"
#include "ir/parser.h"

namespace tessel {
namespace {

namespace fs = std::filesystem;

using testing::CommandResult;
using testing::runTool;

bool contains(const std::string &text, const std::string &part) { return text.find(part) != std::string::npos; }

std::string dense(const std::vector<int64_t> &shape, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> uniform(-0.1f, 0.1f);
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  std::string text = fmt::format("dense<f32[{}]: ", fmt::join(shape, ","));
  for (int64_t i = 0; i < n; ++i) text += fmt::format("{}{:.5g}", i ? ", " : "", uniform(rng));
  return text + ">";
}

class NcModelCommand : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("tessel-nc-model-" + std::to_string(::getpid()));
    fs::create_directories(dir_);
    const std::string ir = fmt::format(R"(model opset(ai.onnx=17) ir_version=8 {{
func @main(%x: f32[1,64,256]) -> (%y: f32[1,64,256]) {{
  const %w1 = {}
  const %b1 = {}
  const %w2 = {}
  const %g = {}
  %h = MatMul(%x, %w1) name="fc1"
  %hb = Add(%h, %b1) name="fc1_bias"
  %r = Relu(%hb) name="relu"
  %f = Sin(%r) name="sine"
  %o = MatMul(%f, %w2) name="fc2"
  %s = Add(%o, %x) name="residual"
  %y = LayerNormalization(%s, %g) {{axis = -1}} name="norm"
  return %y
}}
}})",
                                       dense({256, 384}, 1), dense({384}, 2), dense({384, 256}, 3), dense({256}, 4));
    auto model = parseModel(ir, "nc_model_command_test");
    ASSERT_TRUE(model.ok()) << model.diag().str();
    model_ = (dir_ / "block.onnx").string();
    ASSERT_TRUE(exportOnnxFile(*model, model_).ok());
  }
  void TearDown() override { fs::remove_all(dir_); }

  fs::path dir_;
  std::string model_;
};

std::string readAll(const fs::path &path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

TEST_F(NcModelCommand, CompileRunAndProfile) {
  const std::string artifact = (dir_ / "block.tsl").string();
  CommandResult compiled = runTool(fmt::format("compile {} --target nc-v2 --report --time-passes -o {}", model_, artifact));
  ASSERT_EQ(compiled.exitCode, 0) << compiled.output;
  // Sin has no accelerator form: it is the one fallback, between two device stages.
  EXPECT_TRUE(contains(compiled.output, "host fallbacks: 1")) << compiled.output;
  EXPECT_TRUE(contains(compiled.output, "sine (Sin): no accelerator kernel for this op yet")) << compiled.output;
  EXPECT_TRUE(contains(compiled.output, "host -> device") || contains(compiled.output, "in: ")) << compiled.output;
  EXPECT_TRUE(contains(compiled.output, "SBUF peak")) << compiled.output;
  EXPECT_TRUE(contains(compiled.output, "fuse-epilogues")) << compiled.output;

  CommandResult run = runTool("run " + artifact);
  ASSERT_EQ(run.exitCode, 0) << run.output;
  EXPECT_TRUE(contains(run.output, ": PASS")) << run.output;
  EXPECT_TRUE(contains(run.output, "simulated latency: ")) << run.output;
  EXPECT_TRUE(contains(run.output, "MFU: ")) << run.output;

  const fs::path profile = dir_ / "profile";
  CommandResult profiled = runTool(fmt::format("profile {} -o {}", artifact, profile.string()));
  ASSERT_EQ(profiled.exitCode, 0) << profiled.output;
  // Two device stages: one folder per program; the trace links each instruction to its model node
  // (MatMul, Add and Relu fused into one FusedMatMul named after the last of them).
  const std::string trace = readAll(profile / "program0" / "trace.json");
  EXPECT_TRUE(contains(trace, "\"node\":\"relu (FusedMatMul)\"")) << trace.substr(0, 2000);
  EXPECT_TRUE(fs::exists(profile / "program1" / "report.html"));
}

TEST_F(NcModelCommand, ArtifactIsDeterministic) {
  const std::string first = (dir_ / "a.tsl").string(), second = (dir_ / "b.tsl").string();
  ASSERT_EQ(runTool(fmt::format("compile {} --target nc-v3 -o {}", model_, first)).exitCode, 0);
  ASSERT_EQ(runTool(fmt::format("compile {} --target nc-v3 -o {}", model_, second)).exitCode, 0);
  EXPECT_EQ(readAll(first), readAll(second));
}

TEST_F(NcModelCommand, ShardsOverTwoCoresAndMatches) {
  const std::string artifact = (dir_ / "two.tsl").string();
  CommandResult compiled = runTool(fmt::format("compile {} --target nc-v2 --cores 2 -o {}", model_, artifact));
  ASSERT_EQ(compiled.exitCode, 0) << compiled.output;
  CommandResult run = runTool("run " + artifact);
  ASSERT_EQ(run.exitCode, 0) << run.output;
  EXPECT_TRUE(contains(run.output, "on 2 nc-v2 cores")) << run.output;
  CommandResult tooMany = runTool(fmt::format("compile {} --target nc-v2 --cores 3", model_));
  EXPECT_EQ(tooMany.exitCode, 1);
  EXPECT_TRUE(contains(tooMany.output, "--cores 3: a nc-v2 chip has 1 to 2 cores")) << tooMany.output;
}

TEST_F(NcModelCommand, WeightsOverHbmFailAtCompileTime) {
  // A profile whose core has 64 KiB of HBM: the model's bf16 weights (~400 KiB) do not fit.
  std::string profile = readAll(fs::path(TESSEL_SOURCE_DIR) / "src/targets/nc/machine/profiles/nc-v2.json");
  const std::string key = "\"bytesPerCore\": 17179869184";
  ASSERT_NE(profile.find(key), std::string::npos);
  profile.replace(profile.find(key), key.size(), "\"bytesPerCore\": 65536");
  const fs::path small = dir_ / "small-hbm.json";
  std::ofstream(small) << profile;
  CommandResult result = runTool(fmt::format("compile {} --target {} -o {}", model_, small.string(), (dir_ / "x.tsl").string()));
  EXPECT_EQ(result.exitCode, 1);
  EXPECT_TRUE(contains(result.output, "does not fit by ")) << result.output;
  EXPECT_TRUE(contains(result.output, "block.onnx")) << result.output;
  EXPECT_FALSE(fs::exists(dir_ / "x.tsl"));
}

TEST_F(NcModelCommand, AllHostModelRunsOnTheCpuTargetAndReportsItsTime) {
  auto model = parseModel(R"(model opset(ai.onnx=17) ir_version=8 {
func @main(%x: f32[4,8]) -> (%y: f32[4,8]) {
  %y = Sin(%x) name="sine"
  return %y
}
})",
                          "nc_model_command_test");
  ASSERT_TRUE(model.ok()) << model.diag().str();
  const std::string path = (dir_ / "sine.onnx").string(), artifact = (dir_ / "sine.tsl").string();
  ASSERT_TRUE(exportOnnxFile(*model, path).ok());
  CommandResult compiled = runTool(fmt::format("compile {} --target nc-v2 --report -o {}", path, artifact));
  ASSERT_EQ(compiled.exitCode, 0) << compiled.output;
  EXPECT_TRUE(contains(compiled.output, "no device program: every node runs on the host")) << compiled.output;
  // The host stage is planned on the cpu target, and its time is measured.
  EXPECT_TRUE(contains(compiled.output, "host stage on the cpu target (1 steps)")) << compiled.output;
  CommandResult run = runTool("run " + artifact);
  ASSERT_EQ(run.exitCode, 0) << run.output;
  EXPECT_TRUE(contains(run.output, ": PASS")) << run.output;
  EXPECT_TRUE(contains(run.output, "us, all on the host (measured on this host; no device program")) << run.output;
  EXPECT_FALSE(contains(run.output, "latency: 0.000 us")) << run.output;
}

}  // namespace
}  // namespace tessel
