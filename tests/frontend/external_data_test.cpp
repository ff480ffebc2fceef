// Initializers stored as ONNX external data: a model written in a temporary folder next to its
// weights file imports with the right values, exports them inline, and a missing weights file is
// a Diagnostic naming the file and the tensor.
#include <gtest/gtest.h>

#include <stdlib.h>

#include <filesystem>
#include <fstream>

#include <onnx/onnx_pb.h>

#include "frontend/onnx/exporter.h"
#include "frontend/onnx/importer.h"
#include "ir/equality.h"

namespace tessel {
namespace {

namespace fs = std::filesystem;

/// A fresh folder under the test temp dir, removed with the object.
class TempDir {
 public:
  TempDir() {
    std::string pattern = (fs::path(testing::TempDir()) / "tessel_external_XXXXXX").string();
    TESSEL_CHECK(mkdtemp(pattern.data()) != nullptr, "mkdtemp failed for {}", pattern);
    path_ = pattern;
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  const fs::path &path() const { return path_; }

 private:
  fs::path path_;
};

constexpr size_t kWeightsOffsetBytes = 16;
const std::vector<float> kWeights = {1.0f, -2.5f, 3.25f, 0.0f, 1e-3f, 42.0f};

/// Writes kWeightsOffsetBytes junk bytes, then kWeights, to `path`.
void writeWeightsFile(const fs::path &path) {
  std::ofstream out(path, std::ios::binary);
  std::string junk(kWeightsOffsetBytes, '\x7f');
  out.write(junk.data(), static_cast<std::streamsize>(junk.size()));
  out.write(reinterpret_cast<const char *>(kWeights.data()),
            static_cast<std::streamsize>(kWeights.size() * sizeof(float)));
}

/// Y = X + W with W (f32[2,3]) in external data at `location`, offset kWeightsOffsetBytes.
onnx::ModelProto externalDataModel(const std::string &location) {
  onnx::ModelProto model;
  model.set_ir_version(8);
  model.add_opset_import()->set_version(17);
  auto *graph = model.mutable_graph();
  graph->set_name("external");
  auto addValueInfo = [](onnx::ValueInfoProto *info, const std::string &name) {
    info->set_name(name);
    auto *tensor = info->mutable_type()->mutable_tensor_type();
    tensor->set_elem_type(onnx::TensorProto::FLOAT);
    tensor->mutable_shape()->add_dim()->set_dim_value(2);
    tensor->mutable_shape()->add_dim()->set_dim_value(3);
  };
  addValueInfo(graph->add_input(), "X");
  addValueInfo(graph->add_output(), "Y");
  auto *weights = graph->add_initializer();
  weights->set_name("W");
  weights->set_data_type(onnx::TensorProto::FLOAT);
  weights->add_dims(2);
  weights->add_dims(3);
  weights->set_data_location(onnx::TensorProto::EXTERNAL);
  auto addEntry = [&](const std::string &key, const std::string &value) {
    auto *entry = weights->add_external_data();
    entry->set_key(key);
    entry->set_value(value);
  };
  addEntry("location", location);
  addEntry("offset", std::to_string(kWeightsOffsetBytes));
  addEntry("length", std::to_string(kWeights.size() * sizeof(float)));
  auto *node = graph->add_node();
  node->set_op_type("Add");
  node->set_name("add_weights");
  node->add_input("X");
  node->add_input("W");
  node->add_output("Y");
  return model;
}

fs::path writeModel(const fs::path &dir, const onnx::ModelProto &model) {
  fs::path path = dir / "model.onnx";
  std::ofstream out(path, std::ios::binary);
  out << model.SerializeAsString();
  return path;
}

TEST(OnnxExternalData, ImportsValuesFromTheWeightsFile) {
  TempDir dir;
  writeWeightsFile(dir.path() / "weights.bin");
  fs::path path = writeModel(dir.path(), externalDataModel("weights.bin"));

  auto model = importOnnxFile(path.string());
  ASSERT_TRUE(model.ok()) << model.diag().str();
  const Value *weights = model->graph->findValue("W");
  ASSERT_NE(weights, nullptr);
  ASSERT_TRUE(weights->hasInitializer());
  const Tensor &tensor = weights->initializer();
  EXPECT_EQ(tensor.dtype(), DType::Float32);
  EXPECT_EQ(tensor.sizes(), (std::vector<int64_t>{2, 3}));
  auto values = tensor.span<float>();
  EXPECT_EQ(std::vector<float>(values.begin(), values.end()), kWeights);
  EXPECT_EQ(model->graph->outputs()[0]->type().str(), "f32[2,3]");
}

TEST(OnnxExternalData, ExportWritesTheWeightsInline) {
  TempDir dir;
  writeWeightsFile(dir.path() / "weights.bin");
  fs::path path = writeModel(dir.path(), externalDataModel("weights.bin"));
  auto model = importOnnxFile(path.string());
  ASSERT_TRUE(model.ok()) << model.diag().str();

  auto proto = exportOnnxProto(*model);
  ASSERT_TRUE(proto.ok()) << proto.diag().str();
  const onnx::TensorProto &weights = proto->graph().initializer(0);
  EXPECT_NE(weights.data_location(), onnx::TensorProto::EXTERNAL);
  EXPECT_EQ(weights.raw_data().size(), kWeights.size() * sizeof(float));

  // Re-imported from elsewhere, with the weights file gone, the values are still all there.
  fs::remove(dir.path() / "weights.bin");
  auto again = importOnnxBytes(proto->SerializeAsString(), "/elsewhere/model.onnx");
  ASSERT_TRUE(again.ok()) << again.diag().str();
  std::string why;
  EXPECT_TRUE(modelsEqual(*model, *again, why)) << why;
}

TEST(OnnxExternalData, MissingWeightsFileNamesFileAndTensor) {
  TempDir dir;
  fs::path path = writeModel(dir.path(), externalDataModel("missing_weights.bin"));

  auto model = importOnnxFile(path.string());
  ASSERT_FALSE(model.ok());
  const Diagnostic &diag = model.diag();
  EXPECT_EQ(diag.code, ErrorCode::FileNotFound) << diag.str();
  EXPECT_NE(diag.message.find("missing_weights.bin"), std::string::npos) << diag.message;
  EXPECT_NE(diag.message.find("'W'"), std::string::npos) << diag.message;
  EXPECT_EQ(diag.loc.file, path.string());
}

TEST(OnnxExternalData, ShortWeightsFileIsAnError) {
  TempDir dir;
  {
    std::ofstream out(dir.path() / "weights.bin", std::ios::binary);
    out << "too short";
  }
  fs::path path = writeModel(dir.path(), externalDataModel("weights.bin"));
  auto model = importOnnxFile(path.string());
  ASSERT_FALSE(model.ok());
  EXPECT_EQ(model.diag().code, ErrorCode::InvalidModel) << model.diag().str();
  EXPECT_NE(model.diag().message.find("'W'"), std::string::npos) << model.diag().message;
}

}  // namespace
}  // namespace tessel
