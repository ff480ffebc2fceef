// Importing opset-18 models, which the linked ONNX library (opsets up to 17) has no schemas for:
// ReduceMean with axes as an input and Split with num_outputs import and are typed by tessel's own
// inference; opset 19, an opset-18 op tessel leaves out, an opset-17 attribute on an opset-18 node
// and an attribute of the wrong type are Diagnostics naming the file, node and op.
#include <gtest/gtest.h>

#include <onnx/onnx_pb.h>

#include "frontend/onnx/importer.h"

namespace tessel {
namespace {

void addTensorInfo(onnx::ValueInfoProto *info, const std::string &name, std::vector<int64_t> dims) {
  info->set_name(name);
  auto *tensor = info->mutable_type()->mutable_tensor_type();
  tensor->set_elem_type(onnx::TensorProto::FLOAT);
  for (int64_t d : dims) tensor->mutable_shape()->add_dim()->set_dim_value(d);
}

/// x: f32[2,7] -> mean = ReduceMean(x, axes=[1]) (keepdims 0), (a, b, c) = Split(x) in 3 along axis 1.
onnx::ModelProto opset18Model(int64_t opset = 18) {
  onnx::ModelProto model;
  model.set_ir_version(8);
  model.add_opset_import()->set_version(opset);
  auto *graph = model.mutable_graph();
  graph->set_name("opset18");
  addTensorInfo(graph->add_input(), "x", {2, 7});
  graph->add_output()->set_name("mean");  // Output types left to inference.
  graph->add_output()->set_name("c");
  auto *axes = graph->add_initializer();
  axes->set_name("axes");
  axes->set_data_type(onnx::TensorProto::INT64);
  axes->add_dims(1);
  axes->add_int64_data(1);
  auto *reduce = graph->add_node();
  reduce->set_op_type("ReduceMean");
  reduce->set_name("mean_node");
  reduce->add_input("x");
  reduce->add_input("axes");
  reduce->add_output("mean");
  auto *keepdims = reduce->add_attribute();
  keepdims->set_name("keepdims");
  keepdims->set_type(onnx::AttributeProto::INT);
  keepdims->set_i(0);
  auto *split = graph->add_node();
  split->set_op_type("Split");
  split->set_name("split_node");
  split->add_input("x");
  for (const char *out : {"a", "b", "c"}) split->add_output(out);
  auto *axis = split->add_attribute();
  axis->set_name("axis");
  axis->set_type(onnx::AttributeProto::INT);
  axis->set_i(1);
  auto *parts = split->add_attribute();
  parts->set_name("num_outputs");
  parts->set_type(onnx::AttributeProto::INT);
  parts->set_i(3);
  return model;
}

TEST(OnnxOpset18, ImportsAndInfersTheNewForms) {
  auto model = importOnnxBytes(opset18Model().SerializeAsString(), "opset18.onnx");
  ASSERT_TRUE(model.ok()) << model.diag().str();
  EXPECT_EQ(model->opsetFor(""), 18);
  EXPECT_EQ(model->graph->outputs()[0]->type().str(), "f32[2]");
  EXPECT_EQ(model->graph->findValue("a")->type().str(), "f32[2,3]");
  EXPECT_EQ(model->graph->outputs()[1]->type().str(), "f32[2,1]");  // The smaller last chunk.
}

TEST(OnnxOpset18, Opset19IsRejected) {
  auto model = importOnnxBytes(opset18Model(19).SerializeAsString(), "opset19.onnx");
  ASSERT_FALSE(model.ok());
  EXPECT_EQ(model.diag().code, ErrorCode::UnsupportedOpset);
  EXPECT_NE(model.diag().message.find("tessel supports 1 to 18"), std::string::npos) << model.diag().str();
}

TEST(OnnxOpset18, LeftOutOpNamesTheOpset) {
  onnx::ModelProto proto = opset18Model();
  auto *node = proto.mutable_graph()->add_node();
  node->set_op_type("GroupNormalization");
  node->set_name("group_norm");
  for (const char *input : {"x", "axes", "axes"}) node->add_input(input);
  node->add_output("normalized");
  auto model = importOnnxBytes(proto.SerializeAsString(), "group_norm.onnx");
  ASSERT_FALSE(model.ok());
  EXPECT_EQ(model.diag().code, ErrorCode::UnsupportedOp);
  EXPECT_EQ(model.diag().loc.node, "group_norm");
  EXPECT_EQ(model.diag().loc.opType, "GroupNormalization");
  EXPECT_NE(model.diag().message.find("not supported at opset 18"), std::string::npos) << model.diag().str();
}

TEST(OnnxOpset18, Opset17AttributeOnOpset18NodeIsAnError) {
  onnx::ModelProto proto = opset18Model();
  auto *reduce = proto.mutable_graph()->mutable_node(0);
  reduce->mutable_input()->RemoveLast();
  auto *axes = reduce->add_attribute();
  axes->set_name("axes");
  axes->set_type(onnx::AttributeProto::INTS);
  axes->add_ints(1);
  auto model = importOnnxBytes(proto.SerializeAsString(), "old_axes.onnx");
  ASSERT_FALSE(model.ok());
  EXPECT_EQ(model.diag().loc.file, "old_axes.onnx");
  EXPECT_EQ(model.diag().loc.node, "mean_node");
  EXPECT_NE(model.diag().message.find("ReduceMean at opset 18 has no attribute 'axes'"), std::string::npos)
      << model.diag().str();
}

TEST(OnnxOpset18, AttributeOfTheWrongTypeIsAnError) {
  onnx::ModelProto proto = opset18Model();
  auto *parts = proto.mutable_graph()->mutable_node(1)->mutable_attribute(1);
  parts->set_type(onnx::AttributeProto::FLOAT);
  parts->set_f(3.0f);
  auto model = importOnnxBytes(proto.SerializeAsString(), "float_parts.onnx");
  ASSERT_FALSE(model.ok());
  EXPECT_EQ(model.diag().loc.node, "split_node");
  EXPECT_NE(model.diag().message.find("Split attribute 'num_outputs' has type FLOAT; expected INT"), std::string::npos)
      << model.diag().str();
}

}  // namespace
}  // namespace tessel
