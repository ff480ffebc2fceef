// `tessel quantize`, run as a user would, on the bundled example: the QDQ model it writes imports
// and passes ONNX's checker, the report names every quantized node and lands as JSON, and a
// calibration folder without an input is an error naming that input.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <random>

#include <nlohmann/json.hpp>
#include <onnx/checker.h>

#include "../common/run_tool.h"
#include "frontend/onnx/importer.h"
#include "ir/npy.h"

namespace tessel {
namespace {

namespace fs = std::filesystem;

using testing::CommandResult;
using testing::runTool;

const std::string kModel = std::string(TESSEL_SOURCE_DIR) + "/examples/small_cnn.onnx";

class QuantizeCommand : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("tessel-quantize-command-test-" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    std::mt19937 rng(3);
    std::uniform_real_distribution<float> pixel(0, 1);
    for (const char *sample : {"s0", "s1"}) {
      fs::create_directories(dir_ / "calibration" / sample);
      Tensor image(DType::Float32, {2, 1, 28, 28});
      for (float &v : image.span<float>()) v = pixel(rng);
      ASSERT_TRUE(writeNpy((dir_ / "calibration" / sample / "image.npy").string(), image).ok());
    }
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
};

TEST_F(QuantizeCommand, WritesAQdqModelThatImportsAndPassesTheChecker) {
  const std::string out = (dir_ / "q.onnx").string();
  const std::string report = (dir_ / "report.json").string();
  CommandResult r = runTool("quantize " + kModel + " --calibration " + (dir_ / "calibration").string() + " -o " + out +
                            " --report " + report);
  ASSERT_EQ(r.exitCode, 0) << r.output;
  for (const char *node : {"conv1 (Conv)", "conv2 (Conv)", "fc (Gemm)", "probabilities: max abs"})
    EXPECT_NE(r.output.find(node), std::string::npos) << node << "\n" << r.output;

  auto model = importOnnxFile(out);
  ASSERT_TRUE(model.ok()) << model.diag().str();
  int quantize = 0;
  for (const auto &node : model->graph->nodes()) quantize += node->opType() == "QuantizeLinear";
  // image; r1 (relu1's, after conv1) and p1 (the MaxPool's, conv2's input): the rules see two tensors;
  // r2; f (fc's input); logits.
  EXPECT_EQ(quantize, 6);
  onnx::ModelProto proto;
  std::ifstream in(out, std::ios::binary);
  ASSERT_TRUE(proto.ParseFromIstream(&in));
  EXPECT_NO_THROW(onnx::checker::check_model(proto));

  std::ifstream json(report);
  nlohmann::json parsed = nlohmann::json::parse(json);
  ASSERT_EQ(parsed["nodes"].size(), 3u);
  EXPECT_EQ(parsed["nodes"][2]["weight"]["axis"], 0);  // fc's Gemm has transB = 1.
  EXPECT_EQ(parsed["samples"], 2);
  EXPECT_GE(parsed["outputs"][0]["cosine"].get<double>(), 0.99);
}

TEST_F(QuantizeCommand, AMissingCalibrationInputIsNamed) {
  fs::remove(dir_ / "calibration" / "s1" / "image.npy");
  CommandResult r = runTool("quantize " + kModel + " --calibration " + (dir_ / "calibration").string() + " -o " +
                            (dir_ / "q.onnx").string());
  EXPECT_EQ(r.exitCode, 1) << r.output;
  EXPECT_NE(r.output.find("tessel: error: "), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("no calibration data for model input 'image'"), std::string::npos) << r.output;
  EXPECT_FALSE(fs::exists(dir_ / "q.onnx"));
}

}  // namespace
}  // namespace tessel
