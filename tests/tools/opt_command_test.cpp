// `tessel opt`, run as a user would: .onnx in, text out, and that text read back gives the same
// text; errors in text IR, in pass names and in passes come out as one "tessel: error:" line.
#include <gtest/gtest.h>

#include "../common/run_tool.h"
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace tessel {
namespace {

namespace fs = std::filesystem;

using testing::CommandResult;
using testing::runTool;

std::string readFile(const fs::path &path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

class OptCommand : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("tessel-opt-test-" + std::to_string(::getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string write(const std::string &name, const std::string &text) {
    fs::path path = dir_ / name;
    std::ofstream(path) << text;
    return path.string();
  }
  fs::path dir_;
};

TEST_F(OptCommand, OnnxToTextAndBackIsStable) {
  const std::string model = std::string(TESSEL_SOURCE_DIR) + "/examples/small_cnn.onnx";
  std::string text = (dir_ / "small_cnn.tsl.txt").string();
  CommandResult first = runTool("opt " + model + " --print-types -o " + text);
  ASSERT_EQ(first.exitCode, 0) << first.output;
  EXPECT_EQ(first.output, "");
  std::string printed = readFile(text);
  EXPECT_NE(printed.find("%c1 = Conv(%image, %conv1.weight, %conv1.bias) {pads = [1, 1, 1, 1]} name=\"conv1\" : "
                         "f32[N,8,28,28]"),
            std::string::npos)
      << printed;
  CommandResult second = runTool("opt " + text + " --print-types");
  ASSERT_EQ(second.exitCode, 0) << second.output;
  EXPECT_EQ(second.output, printed);
  CommandResult elided = runTool("opt " + model + " --elide-large-tensors");
  EXPECT_NE(elided.output.find("const %conv1.weight = dense<f32[8,1,3,3] ... hash=0x"), std::string::npos)
      << elided.output;
}

TEST_F(OptCommand, ReportsTextErrorsWithLineAndColumn) {
  std::string path = write("bad.tsl.txt",
                           "model opset(ai.onnx=13) ir_version=8 {\n"
                           "func @main(%x: f32[2]) -> (%y: f32[2]) {\n"
                           "  %y = Relu(%z)\n"
                           "  return %y\n"
                           "}\n"
                           "}\n");
  CommandResult r = runTool("opt " + path);
  EXPECT_EQ(r.exitCode, 1);
  EXPECT_EQ(r.output, "tessel: error: " + path + ":3:13: use of undefined value '%z'\n");
}

TEST_F(OptCommand, ReportsUnknownPassesAndFailingPasses) {
  std::string path = write("ok.tsl.txt",
                           "model opset(ai.onnx=13) ir_version=8 {\n"
                           "func @main(%x: f32[2,3], %y: f32[4,5]) -> (%z: ?) {\n"
                           "  %z = MatMul(%x, %y) name=\"mm\"\n"
                           "  return %z\n"
                           "}\n"
                           "}\n");
  CommandResult unknown = runTool("opt " + path + " --passes=infer-shapes,make-it-fast");
  EXPECT_EQ(unknown.exitCode, 1);
  EXPECT_EQ(unknown.output,
            "tessel: error: unknown pass 'make-it-fast'; the passes are: infer-shapes, promote-half, fuse-qdq, "
            "float-dynamic-quantization, fold-shapes, fold-constants, "
            "eliminate-common-subexpressions, eliminate-dead-code, fold-batch-norm, fold-conv-affine, recognize-gelu, "
            "recognize-layer-norm, recognize-softmax, recognize-attention, recognize-rotary-embedding, kv-cache-in-place, "
            "last-position-logits, fuse-epilogues, fold-conv-input-affine, fuse-elementwise, "
            "assign-layout\n");
  CommandResult failing = runTool("opt " + path + " --passes=infer-shapes");
  EXPECT_EQ(failing.exitCode, 1);
  EXPECT_EQ(failing.output.rfind("tessel: error: " + path + ": node 'mm' (MatMul, #0): pass 'infer-shapes': ", 0), 0u)
      << failing.output;
}

TEST_F(OptCommand, MissingFileIsOneLine) {
  CommandResult r = runTool("opt /nonexistent/model.tsl.txt");
  EXPECT_EQ(r.exitCode, 1);
  EXPECT_EQ(r.output, "tessel: error: /nonexistent/model.tsl.txt: cannot open the file\n");
}

}  // namespace
}  // namespace tessel
