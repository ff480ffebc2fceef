// ONNX export: import -> export -> import must give back a structurally equal Model, for every
// model of the ONNX test data (whose exports must also pass ONNX's checker) and for hand-built
// models that use what the test data does not (every attribute kind, symbolic dims, unnamed
// values, outer-scope reads, omitted optionals). Also checks that modelsEqual notices changes.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>

#include <onnx/checker.h>

#include "frontend/onnx/exporter.h"
#include "frontend/onnx/importer.h"
#include "frontend/onnx/tensor_proto.h"
#include "ops/onnx_schema_bridge.h"
#include "ir/equality.h"

namespace tessel {
namespace {

namespace fs = std::filesystem;

const char *const kTestDataRoot = "/usr/share/libonnx-testdata/data";

/// Every <dir>/*/model.onnx of the ONNX test data, sorted.
std::vector<std::string> testModels(const std::string &dir) {
  std::vector<std::string> paths;
  std::error_code ec;
  for (const auto &entry : fs::directory_iterator(fs::path(kTestDataRoot) / dir, ec)) {
    fs::path model = entry.path() / "model.onnx";
    if (fs::is_regular_file(model)) paths.push_back(model.string());
  }
  std::sort(paths.begin(), paths.end());
  return paths;
}

/// Exports `model`, imports the bytes back and compares; returns "" when equal, else why not.
std::string roundTripDifference(const Model &model, const ImportOptions &options = {}) {
  auto bytes = exportOnnxBytes(model);
  if (!bytes.ok()) return "export failed: " + bytes.diag().str();
  auto again = importOnnxBytes(*bytes, model.sourcePath, options);
  if (!again.ok()) return "re-import failed: " + again.diag().str();
  std::string why;
  if (!modelsEqual(model, *again, why)) return why;
  return "";
}

/// ONNX's checker's complaint about `proto`, or "" when it has none.
std::string checkerComplaint(const onnx::ModelProto &proto) {
  try {
    onnx::checker::check_model(proto);
  } catch (const std::exception &error) {
    return error.what();
  }
  return "";
}

/// Round-trips every model of one test-data folder; models the importer rejects are skipped.
/// What is exported must also pass ONNX's checker whenever the original file does.
void checkFolderRoundTrips(const std::string &dir, size_t minModels) {
  std::vector<std::string> paths = testModels(dir);
  if (paths.empty()) GTEST_SKIP() << "no ONNX test data under " << kTestDataRoot << "/" << dir;
  size_t imported = 0, roundTripped = 0, checked = 0;
  std::vector<std::string> failures;
  for (const std::string &path : paths) {
    auto model = importOnnxFile(path);
    if (!model.ok()) continue;
    ++imported;
    std::string difference = roundTripDifference(*model);
    if (difference.empty()) ++roundTripped;
    else failures.push_back(path + ": " + difference);
    onnx::ModelProto original;
    std::ifstream in(path, std::ios::binary);
    if (!original.ParseFromIstream(&in) || !checkerComplaint(original).empty()) continue;
    ++checked;
    auto exported = exportOnnxProto(*model);
    ASSERT_TRUE(exported.ok()) << exported.diag().str();
    std::string complaint = checkerComplaint(*exported);
    if (!complaint.empty()) failures.push_back(path + ": the checker rejects the export: " + complaint);
  }
  std::cout << dir << ": " << paths.size() << " models, " << imported << " imported, "
            << roundTripped << " round-tripped, " << checked << " checked\n";
  EXPECT_GE(imported, minModels) << "too few models imported for the round trip to mean much";
  for (const std::string &failure : failures) ADD_FAILURE() << failure;
}

TEST(OnnxExporter, RoundTripsNodeTests) { checkFolderRoundTrips("node", 800); }
TEST(OnnxExporter, RoundTripsPytorchConverted) { checkFolderRoundTrips("pytorch-converted", 60); }
TEST(OnnxExporter, RoundTripsPytorchOperator) { checkFolderRoundTrips("pytorch-operator", 25); }
TEST(OnnxExporter, RoundTripsSimple) { checkFolderRoundTrips("simple", 15); }

Model emptyModel() {
  Model model;
  model.opsetImports[""] = 17;
  model.producerName = "tessel-test";
  model.producerVersion = "1.0";
  model.domain = "test.tessel";
  model.modelVersion = 3;
  model.docString = "built by exporter_test";
  model.metadata = {{"author", "someone"}, {"license", "none"}};
  return model;
}

/// A small model for the equality checks: y = Transpose(x + w, perm).
Model equalityModel() {
  Model model = emptyModel();
  Graph &g = *model.graph;
  Value *x = g.addInput("x", Type::tensor(DType::Float32, Shape({Dim::symbolic("n"), Dim(2)})));
  Value *w = g.addInitializer("w", Tensor::fromVector<float>({2}, {1.0f, 2.0f}));
  Node *add = g.addNode("Add", {x, w}, {"sum"}, "add");
  Node *transpose = g.addNode("Transpose", {add->output(0)}, {"y"}, "transpose");
  transpose->setAttr("perm", std::vector<int64_t>{1, 0});
  g.addOutput(transpose->output(0));
  return model;
}

// The round-trip tests mean something only if modelsEqual notices each kind of difference.
TEST(OnnxExporter, ModelsEqualSeesDifferences) {
  std::string why;
  EXPECT_TRUE(modelsEqual(equalityModel(), equalityModel(), why)) << why;
  auto expectDiffers = [](const std::function<void(Model &)> &mutate, const std::string &mention) {
    Model changed = equalityModel();
    mutate(changed);
    std::string why;
    EXPECT_FALSE(modelsEqual(equalityModel(), changed, why)) << "missed a change to " << mention;
    EXPECT_NE(why.find(mention), std::string::npos) << why;
  };
  auto node = [](Model &m, size_t i) { return std::next(m.graph->nodes().begin(), static_cast<long>(i))->get(); };
  expectDiffers([](Model &m) { m.metadata.clear(); }, "metadata");
  expectDiffers([](Model &m) { m.opsetImports[""] = 13; }, "opset");
  expectDiffers([&](Model &m) { node(m, 1)->setAttr("perm", std::vector<int64_t>{0, 1}); }, "perm");
  expectDiffers([&](Model &m) { node(m, 0)->setName("renamed"); }, "renamed");
  expectDiffers([](Model &m) { m.graph->findValue("w")->setInitializer(Tensor::fromVector<float>({2}, {1.0f, 2.5f})); },
                "'w'");
  expectDiffers([](Model &m) { m.graph->inputs()[0]->setType(Type::tensor(DType::Float32, Shape::fromSizes({3, 2}))); },
                "f32[3,2]");
  expectDiffers([](Model &m) { m.graph->findValue("sum")->setType(Type::tensor(DType::Float16, Shape())); }, "f16");
}

TEST(OnnxExporter, KeepsMetadataSymbolicDimsAndInitializerInputs) {
  Model model = emptyModel();
  Graph &g = *model.graph;
  Value *x = g.addInput("x", Type::tensor(DType::Float32, Shape({Dim::symbolic("batch"), Dim(3), Dim()})));
  Value *bias = g.addInput("bias", Type::tensor(DType::Float32, Shape::fromSizes({3})));
  g.addInitializer("bias", Tensor::fromVector<float>({3}, {1.5f, -2.0f, 0.25f}));
  Value *scale = g.addInitializer("scale", Tensor::scalar<float>(2.0f));
  Node *mul = g.addNode("Mul", {x, scale}, {"scaled"}, "mul");
  mul->output(0)->setType(Type::tensor(DType::Float32, Shape({Dim::symbolic("batch"), Dim(3), Dim()})));
  Node *add = g.addNode("Add", {mul->output(0), bias}, {"y"}, "add");
  add->output(0)->setType(Type::tensor(DType::Float32, Shape({Dim::symbolic("batch"), Dim(3), Dim()})));
  g.addOutput(add->output(0));

  auto proto = exportOnnxProto(model);
  ASSERT_TRUE(proto.ok()) << proto.diag().str();
  EXPECT_EQ(proto->graph().input_size(), 2);
  EXPECT_EQ(proto->graph().initializer_size(), 2);
  ASSERT_EQ(proto->graph().value_info_size(), 1);
  EXPECT_EQ(proto->graph().value_info(0).name(), "scaled");
  EXPECT_EQ(proto->graph().input(0).type().tensor_type().shape().dim(0).dim_param(), "batch");
  // Without inference on re-import: with it, ONNX would name the unknown dim ("unk__0").
  EXPECT_EQ(roundTripDifference(model, ImportOptions{.inferShapes = false}), "");

  auto again = importOnnxBytes(*exportOnnxBytes(model), "again.onnx");
  ASSERT_TRUE(again.ok()) << again.diag().str();
  Value *reread = again->graph->findValue("bias");
  ASSERT_NE(reread, nullptr);
  EXPECT_TRUE(reread->isGraphInput());
  EXPECT_TRUE(reread->hasInitializer());
}

// Every attribute kind a standard op has, on ops whose schemas accept them (the importer checks).
TEST(OnnxExporter, RoundTripsTheAttributeKindsOfStandardOps) {
  Model model = emptyModel();
  Graph &g = *model.graph;
  Value *x = g.addInput("x", Type::tensor(DType::Float32, Shape::fromSizes({2, 3})));
  Value *cond = g.addInput("cond", Type::tensor(DType::Bool, Shape::scalar()));
  Node *leaky = g.addNode("LeakyRelu", {x}, {"leaky"}, "float_attr");
  leaky->setAttr("alpha", 0.25f);
  Node *flatten = g.addNode("Flatten", {leaky->output(0)}, {"flat"}, "int_attr");
  flatten->setAttr("axis", int64_t{-1});
  Value *pads = g.addInitializer("pads", Tensor::fromVector<int64_t>({4}, {0, 1, 0, 1}));
  Node *pad = g.addNode("Pad", {flatten->output(0), pads}, {"padded"}, "string_attr");
  pad->setAttr("mode", std::string("reflect"));
  Node *transpose = g.addNode("Transpose", {pad->output(0)}, {"transposed"}, "ints_attr");
  transpose->setAttr("perm", std::vector<int64_t>{1, 0});
  Tensor strings(DType::String, {2});
  strings.data<std::string>()[0] = "hello";
  strings.data<std::string>()[1] = "";
  g.addNode("Constant", {}, {"str_const"}, "tensor_attr")->setAttr("value", strings);
  g.addNode("Constant", {}, {"floats_const"}, "floats_attr")->setAttr("value_floats", std::vector<float>{1, -0.0f});
  g.addNode("Constant", {}, {"strings_const"}, "strings_attr")
      ->setAttr("value_strings", std::vector<std::string>{"a", "", "c"});
  Node *optional = g.addNode("Optional", {}, {"none"}, "type_attr");
  optional->setAttr("type", Type::tensor(DType::Int8, Shape({Dim::symbolic("n")})));
  Node *branch = g.addNode("If", {cond}, {"chosen"}, "graph_attrs");
  auto thenBranch = std::make_shared<Graph>("then");
  thenBranch->setParentNode(branch);
  thenBranch->addOutput(thenBranch->addNode("Neg", {transpose->output(0)}, {"negated"}, "outer_read")->output(0));
  auto elseBranch = std::make_shared<Graph>("else");
  elseBranch->setParentNode(branch);
  elseBranch->addOutput(elseBranch->addNode("Abs", {transpose->output(0)}, {"magnitude"})->output(0));
  branch->setAttr("then_branch", Attribute::GraphPtr(thenBranch));
  branch->setAttr("else_branch", Attribute::GraphPtr(elseBranch));
  for (const char *name : {"chosen", "str_const", "floats_const", "strings_const", "none"}) {
    g.addOutput(g.findValue(name));
  }
  // The importer sorts nodes topologically; start from that order so the comparison lines up.
  ASSERT_TRUE(g.sortTopologically().ok());

  EXPECT_EQ(roundTripDifference(model, ImportOptions{.inferShapes = false}), "");
}

// No standard op has tensors, graphs or type_protos attributes, so the importer would reject a
// node carrying them: check what the exporter writes for those at the proto level.
TEST(OnnxExporter, WritesListAttributesNoStandardOpUses) {
  Model model = emptyModel();
  Graph &g = *model.graph;
  Node *node = g.addNode("Identity", {g.addInput("x", Type::tensor(DType::Float32, Shape::fromSizes({1})))}, {"y"});
  node->setAttr("ts", std::vector<Tensor>{Tensor::scalar<bool>(true), Tensor::fromVector<double>({1}, {2.5})});
  node->setAttr("tps", std::vector<Type>{Type::sequence(Type::tensor(DType::Float16, Shape())),
                                         Type::optional(Type::tensor(DType::BFloat16, Shape::scalar()))});
  auto sub = std::make_shared<Graph>("sub");
  sub->addOutput(sub->addInput("p", Type::tensor(DType::Int64, Shape::scalar())));
  node->setAttr("gs", std::vector<Attribute::GraphPtr>{sub});
  g.addOutput(node->output(0));

  auto proto = exportOnnxProto(model);
  ASSERT_TRUE(proto.ok()) << proto.diag().str();
  const auto &attrs = proto->graph().node(0).attribute();
  ASSERT_EQ(attrs.size(), 3);
  EXPECT_EQ(attrs[0].type(), onnx::AttributeProto::TENSORS);
  ASSERT_EQ(attrs[0].tensors_size(), 2);
  auto second = onnx_frontend::tensorFromProto(attrs[0].tensors(1), ".");
  ASSERT_TRUE(second.ok()) << second.diag().str();
  EXPECT_TRUE(tensorsEqual(*second, Tensor::fromVector<double>({1}, {2.5})));
  EXPECT_EQ(attrs[1].type(), onnx::AttributeProto::TYPE_PROTOS);
  ASSERT_EQ(attrs[1].type_protos_size(), 2);
  EXPECT_EQ(onnx_bridge::typeFromProto(attrs[1].type_protos(0)).str(), "seq<f16[*]>");
  EXPECT_EQ(onnx_bridge::typeFromProto(attrs[1].type_protos(1)).str(), "opt<bf16[]>");
  EXPECT_EQ(attrs[2].type(), onnx::AttributeProto::GRAPHS);
  ASSERT_EQ(attrs[2].graphs_size(), 1);
  EXPECT_EQ(attrs[2].graphs(0).name(), "sub");
  EXPECT_EQ(attrs[2].graphs(0).output(0).name(), "p");
}

TEST(OnnxExporter, WritesOmittedOptionalsAsEmptyNames) {
  Model model = emptyModel();
  Graph &g = *model.graph;
  Value *x = g.addInput("x", Type::tensor(DType::Float32, Shape::fromSizes({4})));
  Value *max = g.addInitializer("max", Tensor::scalar<float>(6.0f));
  Node *clip = g.addNode("Clip", {x, nullptr, max}, {"clipped"}, "clip");
  Node *drop = g.addNode("Dropout", {clip->output(0)}, {"dropped", ""}, "drop");
  g.addOutput(drop->output(0));

  auto proto = exportOnnxProto(model);
  ASSERT_TRUE(proto.ok()) << proto.diag().str();
  ASSERT_EQ(proto->graph().node(0).input_size(), 3);
  EXPECT_EQ(proto->graph().node(0).input(1), "");
  ASSERT_EQ(proto->graph().node(1).output_size(), 2);
  EXPECT_EQ(proto->graph().node(1).output(1), "");
  EXPECT_EQ(roundTripDifference(model, ImportOptions{.inferShapes = false}), "");
}

TEST(OnnxExporter, NamesUnnamedAndShadowingValues) {
  Model model = emptyModel();
  Graph &g = *model.graph;
  Value *x = g.addInput("x", Type::tensor(DType::Float32, Shape::fromSizes({2})));
  Node *relu = g.addNode("Relu", {x}, {"tmp"}, "relu");
  Value *unnamed = g.createValue("");
  (void)unnamed;
  Node *neg = g.addNode("Neg", {relu->output(0)}, {"out"}, "neg");
  neg->output(0)->setName("");  // An unnamed node output must still be referable.
  Node *abs = g.addNode("Abs", {neg->output(0)}, {"y"}, "abs");
  g.addOutput(abs->output(0));

  auto proto = exportOnnxProto(model);
  ASSERT_TRUE(proto.ok()) << proto.diag().str();
  const std::string &fresh = proto->graph().node(1).output(0);
  EXPECT_FALSE(fresh.empty());
  EXPECT_EQ(proto->graph().node(2).input(0), fresh);
  auto again = importOnnxBytes(proto->SerializeAsString(), "named.onnx");
  EXPECT_TRUE(again.ok()) << again.diag().str();
}

TEST(OnnxExporter, RejectsModelsItCannotWrite) {
  Model noOpset;
  noOpset.graph->addOutput(noOpset.graph->addInput("x", Type::tensor(DType::Float32, Shape::fromSizes({1}))));
  auto bytes = exportOnnxBytes(noOpset);
  ASSERT_FALSE(bytes.ok());
  EXPECT_EQ(bytes.diag().code, ErrorCode::InvalidModel);
  EXPECT_NE(bytes.diag().message.find("opset"), std::string::npos) << bytes.diag().message;

  Model dangling = emptyModel();
  Graph other("other");
  Value *foreign = other.addInput("foreign", Type::tensor(DType::Float32, Shape::fromSizes({1})));
  Node *node = dangling.graph->addNode("Relu", {foreign}, {"y"}, "reads_foreign");
  dangling.graph->addOutput(node->output(0));
  auto status = exportOnnxBytes(dangling);
  ASSERT_FALSE(status.ok());
  EXPECT_EQ(status.diag().code, ErrorCode::InvalidModel);
  EXPECT_NE(status.diag().message.find("'foreign'"), std::string::npos) << status.diag().message;
  EXPECT_EQ(status.diag().loc.node, "reads_foreign");
}

TEST(OnnxExporter, WritesFiles) {
  Model model = emptyModel();
  Graph &g = *model.graph;
  Node *relu = g.addNode("Relu", {g.addInput("x", Type::tensor(DType::Float32, Shape::fromSizes({3})))}, {"y"});
  relu->output(0)->setType(Type::tensor(DType::Float32, Shape::fromSizes({3})));
  g.addOutput(relu->output(0));
  const std::string path = (fs::path(testing::TempDir()) / "tessel_exporter_test.onnx").string();
  ASSERT_TRUE(exportOnnxFile(model, path).ok());
  auto again = importOnnxFile(path);
  ASSERT_TRUE(again.ok()) << again.diag().str();
  std::string why;
  again->sourcePath.clear();
  EXPECT_TRUE(modelsEqual(model, *again, why)) << why;
  fs::remove(path);

  Status bad = exportOnnxFile(model, "/nonexistent-dir/model.onnx");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.diag().code, ErrorCode::IoError);
  EXPECT_EQ(bad.diag().loc.file, "/nonexistent-dir/model.onnx");
}

}  // namespace
}  // namespace tessel
