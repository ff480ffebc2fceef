// Each malformed or unsupported model ends in one Diagnostic with the right code, naming the file,
// the node and the op — never a crash.
#include <gtest/gtest.h>

#include "frontend/onnx/importer.h"
#include "model_builder.h"
#include "runtime/session.h"

namespace tessel {
namespace {

using testing::addNode;
using testing::makeModel;
using testing::makeTempDir;
using testing::writeBytes;

Expected<Model> importProto(const onnx::ModelProto &proto, const std::string &name) {
  auto dir = makeTempDir(name);
  auto path = (dir / "model.onnx").string();
  writeBytes(path, proto.SerializeAsString());
  return importOnnxFile(path);
}

TEST(ImportErrors, MissingFileIsFileNotFound) {
  auto model = importOnnxFile("/nonexistent/model.onnx");
  ASSERT_FALSE(model.ok());
  EXPECT_EQ(model.diag().code, ErrorCode::FileNotFound);
  EXPECT_EQ(model.diag().str(), "/nonexistent/model.onnx: no such model file");
}

TEST(ImportErrors, TruncatedProtobufIsParseError) {
  onnx::ModelProto proto = makeModel();
  addNode(proto, "Relu", {"x"}, {"y"}, "relu");
  std::string bytes = proto.SerializeAsString();
  auto model = importOnnxBytes(bytes.substr(0, bytes.size() / 2), "half.onnx");
  ASSERT_FALSE(model.ok());
  EXPECT_EQ(model.diag().code, ErrorCode::ParseError);
  EXPECT_NE(model.diag().str().find("half.onnx: not a valid ONNX protobuf"), std::string::npos) << model.diag().str();
}

TEST(ImportErrors, UnknownOpNamesNodeAndOp) {
  onnx::ModelProto proto = makeModel();
  addNode(proto, "Relu", {"x"}, {"h"}, "first");
  addNode(proto, "FrobnicateTensor", {"h"}, {"y"}, "mystery");
  auto model = importProto(proto, "unknown-op");
  ASSERT_FALSE(model.ok());
  EXPECT_EQ(model.diag().code, ErrorCode::UnsupportedOp);
  EXPECT_EQ(model.diag().loc.node, "mystery");
  EXPECT_EQ(model.diag().loc.opType, "FrobnicateTensor");
  EXPECT_EQ(model.diag().loc.nodeIndex, 1);
  EXPECT_NE(model.diag().str().find("node 'mystery' (FrobnicateTensor, #1): unknown op 'FrobnicateTensor' in domain "
                                    "'ai.onnx' at opset 13"),
            std::string::npos)
      << model.diag().str();
}

TEST(ImportErrors, OpNewerThanOpsetIsUnsupported) {
  onnx::ModelProto proto = makeModel(/*opset=*/9);
  addNode(proto, "Celu", {"x"}, {"y"}, "celu");  // Celu arrived in opset 12.
  auto model = importProto(proto, "op-too-new");
  ASSERT_FALSE(model.ok());
  EXPECT_EQ(model.diag().code, ErrorCode::UnsupportedOp);
  EXPECT_EQ(model.diag().loc.opType, "Celu");
}

TEST(ImportErrors, UnsupportedOpsetIsReported) {
  onnx::ModelProto proto = makeModel(/*opset=*/99);
  addNode(proto, "Relu", {"x"}, {"y"}, "relu");
  auto model = importProto(proto, "opset");
  ASSERT_FALSE(model.ok());
  EXPECT_EQ(model.diag().code, ErrorCode::UnsupportedOpset);
  EXPECT_NE(model.diag().message.find("opset 99; tessel supports 1 to 18"), std::string::npos) << model.diag().str();
}

TEST(ImportErrors, UndefinedInputNamesTheValue) {
  onnx::ModelProto proto = makeModel();
  addNode(proto, "Add", {"x", "ghost"}, {"y"}, "add");
  auto model = importProto(proto, "undefined");
  ASSERT_FALSE(model.ok());
  EXPECT_EQ(model.diag().code, ErrorCode::InvalidModel);
  EXPECT_EQ(model.diag().loc.node, "add");
  EXPECT_NE(model.diag().message.find("input 'ghost' is not defined"), std::string::npos) << model.diag().str();
}

TEST(ImportErrors, CycleIsReportedNotLooped) {
  onnx::ModelProto proto = makeModel();
  addNode(proto, "Add", {"x", "b"}, {"a"}, "left");
  addNode(proto, "Relu", {"a"}, {"b"}, "right");
  addNode(proto, "Identity", {"a"}, {"y"}, "out");
  auto model = importProto(proto, "cycle");
  ASSERT_FALSE(model.ok());
  EXPECT_EQ(model.diag().code, ErrorCode::InvalidModel);
  EXPECT_NE(model.diag().message.find("cycle"), std::string::npos) << model.diag().str();
}

TEST(ImportErrors, ValueProducedTwice) {
  onnx::ModelProto proto = makeModel();
  addNode(proto, "Relu", {"x"}, {"y"}, "one");
  addNode(proto, "Relu", {"x"}, {"y"}, "two");
  auto model = importProto(proto, "twice");
  ASSERT_FALSE(model.ok());
  EXPECT_EQ(model.diag().loc.node, "two");
  EXPECT_NE(model.diag().message.find("defines value 'y' more than once"), std::string::npos) << model.diag().str();
}

TEST(ImportErrors, RawDataSizeMismatch) {
  onnx::ModelProto proto = makeModel();
  auto *init = proto.mutable_graph()->add_initializer();
  init->set_name("w");
  init->set_data_type(onnx::TensorProto::FLOAT);
  init->add_dims(1000000000);
  init->set_raw_data(std::string(12, '\0'));
  addNode(proto, "Add", {"x", "w"}, {"y"}, "add");
  auto model = importProto(proto, "rawdata");
  ASSERT_FALSE(model.ok());
  EXPECT_EQ(model.diag().code, ErrorCode::InvalidModel);
  EXPECT_NE(model.diag().message.find("tensor 'w' has 12 bytes of raw_data"), std::string::npos) << model.diag().str();
}

/// A model adding an f32[3] initializer 'w' whose data lives in the external file `location`.
onnx::ModelProto modelWithExternalWeight(const std::string &location) {
  onnx::ModelProto proto = makeModel();
  auto *init = proto.mutable_graph()->add_initializer();
  init->set_name("w");
  init->set_data_type(onnx::TensorProto::FLOAT);
  init->add_dims(3);
  init->set_data_location(onnx::TensorProto::EXTERNAL);
  auto *entry = init->add_external_data();
  entry->set_key("location");
  entry->set_value(location);
  addNode(proto, "Add", {"x", "w"}, {"y"}, "add");
  return proto;
}

TEST(ImportErrors, MissingExternalDataNamesFileAndTensor) {
  onnx::ModelProto proto = modelWithExternalWeight("weights.bin");
  auto model = importProto(proto, "external");
  ASSERT_FALSE(model.ok());
  EXPECT_EQ(model.diag().code, ErrorCode::FileNotFound);
  EXPECT_NE(model.diag().message.find("tensor 'w': external data: cannot open"), std::string::npos)
      << model.diag().str();
  EXPECT_NE(model.diag().message.find("weights.bin"), std::string::npos) << model.diag().str();
}

TEST(ImportErrors, ExternalDataOutsideModelFolderIsRejected) {
  onnx::ModelProto proto = modelWithExternalWeight("../../etc/passwd");
  auto model = importProto(proto, "escape");
  ASSERT_FALSE(model.ok());
  EXPECT_NE(model.diag().message.find("must be a relative path inside the model's folder"), std::string::npos)
      << model.diag().str();
}

class RunErrors : public ::testing::Test {
 protected:
  void SetUp() override {
    onnx::ModelProto proto = makeModel(13, {2, 3});
    addNode(proto, "Relu", {"x"}, {"y"}, "relu");
    auto dir = makeTempDir("run-errors");
    path_ = (dir / "relu.onnx").string();
    writeBytes(path_, proto.SerializeAsString());
  }
  std::string path_;
};

TEST_F(RunErrors, WrongInputShape) {
  auto session = Session::load(path_, "ref");
  ASSERT_TRUE(session.ok()) << session.diag().str();
  auto out = (*session)->run({{"x", Tensor(DType::Float32, {3, 2})}});
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.diag().code, ErrorCode::ShapeMismatch);
  EXPECT_EQ(out.diag().str(), path_ + ": input 'x' expects shape [2,3]; got [3,2]");
}

TEST_F(RunErrors, WrongInputDType) {
  auto session = Session::load(path_, "ref");
  ASSERT_TRUE(session.ok());
  auto out = (*session)->run({{"x", Tensor(DType::Int64, {2, 3})}});
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.diag().code, ErrorCode::TypeMismatch);
  EXPECT_NE(out.diag().message.find("input 'x' expects f32[2,3]; got tensor i64[2,3]"), std::string::npos);
}

TEST_F(RunErrors, MissingAndUnknownInputs) {
  auto session = Session::load(path_, "ref");
  ASSERT_TRUE(session.ok());
  auto missing = (*session)->run({});
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.diag().message.find("input 'x' (f32[2,3]) was not given"), std::string::npos);
  auto unknown = (*session)->run({{"z", Tensor(DType::Float32, {2, 3})}});
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.diag().message.find("no input named 'z'"), std::string::npos);
}

TEST(RunErrorsUnknownTarget, IsInvalidArgument) {
  auto session = Session::load(std::string(TESSEL_SOURCE_DIR) + "/examples/small_cnn.onnx", "tpu");
  ASSERT_FALSE(session.ok());
  EXPECT_EQ(session.diag().code, ErrorCode::InvalidArgument);
}

}  // namespace
}  // namespace tessel

namespace tessel {
namespace {

// ONNX's own shape inference divides by strides; such values must be rejected before it runs.
TEST(ImportErrors, ZeroStrideIsRejectedBeforeShapeInference) {
  onnx::ModelProto proto = testing::makeModel(13, {1, 1, 4, 4});
  auto *pool = testing::addNode(proto, "MaxPool", {"x"}, {"y"}, "pool");
  auto *kernel = pool->add_attribute();
  kernel->set_name("kernel_shape");
  kernel->set_type(onnx::AttributeProto::INTS);
  kernel->add_ints(2);
  kernel->add_ints(2);
  auto *strides = pool->add_attribute();
  strides->set_name("strides");
  strides->set_type(onnx::AttributeProto::INTS);
  strides->add_ints(0);
  strides->add_ints(1);
  auto model = importOnnxBytes(proto.SerializeAsString(), "pool.onnx");
  ASSERT_FALSE(model.ok());
  EXPECT_EQ(model.diag().str(), "pool.onnx: node 'pool' (MaxPool, #0): attribute 'strides' has value 0; it must be positive");
}

// Node structure is checked against the ONNX schema: a Conv without its weight input.
TEST(ImportErrors, MissingRequiredInputMatchesSchema) {
  onnx::ModelProto proto = testing::makeModel(13, {1, 1, 4, 4});
  testing::addNode(proto, "Conv", {"x"}, {"y"}, "conv");
  auto model = importOnnxBytes(proto.SerializeAsString(), "conv.onnx");
  ASSERT_FALSE(model.ok());
  EXPECT_EQ(model.diag().code, ErrorCode::InvalidModel);
  EXPECT_EQ(model.diag().loc.node, "conv");
  EXPECT_NE(model.diag().message.find("does not match the Conv schema of opset 13"), std::string::npos)
      << model.diag().str();
}

}  // namespace
}  // namespace tessel
