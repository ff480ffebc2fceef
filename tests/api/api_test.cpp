// The public API as a user links it (libtessel.so): load, compile for every target, run, save and
// load, errors with their locations, zero-copy feeds, and one executable run from many threads.
#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>
#include <tessel/tessel.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <thread>

#include "ir/npy.h"

namespace ts = tessel::api;

namespace {

const std::string kExamples = std::string(TESSEL_SOURCE_DIR) + "/examples/";

/// The bundled example's input and golden output (examples/make_small_cnn.py, computed with numpy).
struct Golden {
  ts::Tensor input, expected;
};

ts::Tensor fromNpy(const std::string &path) {
  auto t = tessel::readNpy(path);
  EXPECT_TRUE(t.ok()) << path;
  return ts::Tensor::copyOf(static_cast<ts::DType>(t->dtype()), t->sizes(), t->rawData());
}

Golden golden() { return {fromNpy(kExamples + "small_cnn_input.npy"), fromNpy(kExamples + "small_cnn_expected.npy")}; }

std::string temporaryPath(const std::string &name) {
  return (std::filesystem::temp_directory_path() / ("tessel_api_test_" + std::to_string(::getpid()) + "_" + name)).string();
}

/// A one-node model: y = Identity(x), x float32[2,3]; or, with `op`, any unary op.
std::string unaryModel(const std::string &op = "Identity") {
  onnx::ModelProto model;
  model.set_ir_version(8);
  model.add_opset_import()->set_version(17);
  onnx::GraphProto *graph = model.mutable_graph();
  graph->set_name("unary");
  onnx::NodeProto *node = graph->add_node();
  node->set_op_type(op);
  node->set_name("the_node");
  node->add_input("x");
  node->add_output("y");
  for (auto [info, name] : {std::pair{graph->add_input(), "x"}, std::pair{graph->add_output(), "y"}}) {
    info->set_name(name);
    auto *tensor = info->mutable_type()->mutable_tensor_type();
    tensor->set_elem_type(onnx::TensorProto::FLOAT);
    tensor->mutable_shape()->add_dim()->set_dim_value(2);
    tensor->mutable_shape()->add_dim()->set_dim_value(3);
  }
  return model.SerializeAsString();
}

void expectNear(const ts::Tensor &got, const ts::Tensor &want, double tolerance) {
  ASSERT_EQ(got.shape(), want.shape());
  ASSERT_EQ(got.dtype(), ts::DType::Float32);
  for (int64_t i = 0; i < got.numel(); ++i) EXPECT_NEAR(got.data<float>()[i], want.data<float>()[i], tolerance) << i;
}

TEST(ApiModel, DescribesInputsAndOutputsWithSymbolicDims) {
  auto model = ts::Model::load(kExamples + "small_cnn.onnx");
  ASSERT_TRUE(model.ok()) << model.status().str();
  ASSERT_EQ(model->inputs().size(), 1u);
  const ts::TensorInfo &image = model->inputs()[0];
  EXPECT_EQ(image.name, "image");
  EXPECT_EQ(image.dtype, ts::DType::Float32);
  ASSERT_EQ(image.shape.size(), 4u);
  EXPECT_FALSE(image.shape[0].isStatic());
  EXPECT_EQ(image.shape[0].symbol, "N");
  EXPECT_EQ(image.shape[2].size, 28);
  ASSERT_EQ(model->outputs().size(), 1u);
  EXPECT_EQ(model->outputs()[0].name, "probabilities");
  EXPECT_GT(model->nodeCount(), 0);
}

TEST(ApiTargets, ListsEveryTarget) {
  std::vector<std::string> names = ts::targets();
  for (const char *name : {"ref", "cpu", "nc-v2", "nc-v3"})
    EXPECT_NE(std::find(names.begin(), names.end(), name), names.end()) << name;
}

class ApiOnTarget : public ::testing::TestWithParam<std::string> {};

TEST_P(ApiOnTarget, MatchesTheGoldenOutput) {
  auto model = ts::Model::load(kExamples + "small_cnn.onnx");
  ASSERT_TRUE(model.ok());
  ts::CompileOptions options;
  options.autoCast = "none";
  options.shapes["image"] = {2, 1, 28, 28};
  auto exe = ts::compile(*model, GetParam(), options);
  ASSERT_TRUE(exe.ok()) << exe.status().str();
  EXPECT_EQ(exe->target(), GetParam());
  Golden g = golden();
  auto outputs = exe->run({{"image", g.input}});
  ASSERT_TRUE(outputs.ok()) << outputs.status().str();
  ASSERT_EQ(outputs->size(), 1u);
  EXPECT_EQ((*outputs)[0].first, "probabilities");
  expectNear((*outputs)[0].second, g.expected, 1e-5);
  const ts::RunSummary summary = exe->lastRun();
  EXPECT_GT(summary.latencyUs, 0);
  EXPECT_EQ(summary.simulated, GetParam().starts_with("nc-"));
}

INSTANTIATE_TEST_SUITE_P(Targets, ApiOnTarget, ::testing::Values("ref", "cpu", "nc-v2", "nc-v3"));

TEST(ApiExecutable, PlansEachNewShapeWhenDimsAreSymbolic) {
  auto model = ts::Model::load(kExamples + "small_cnn.onnx");
  ASSERT_TRUE(model.ok());
  ts::CompileOptions options;
  options.dimRanges["N"] = {1, 4};
  auto exe = ts::compile(*model, "cpu", options);
  ASSERT_TRUE(exe.ok()) << exe.status().str();
  Golden g = golden();
  // Batch 1: the first image alone gives the first row of the batch-2 golden output.
  ts::Tensor first = ts::Tensor::borrow(ts::DType::Float32, {1, 1, 28, 28}, g.input.data());
  auto one = exe->run({{"image", first}});
  ASSERT_TRUE(one.ok()) << one.status().str();
  ts::Tensor firstRow = ts::Tensor::borrow(ts::DType::Float32, {1, 10}, g.expected.data());
  expectNear((*one)[0].second, firstRow, 1e-5);
  auto two = exe->run({{"image", g.input}});
  ASSERT_TRUE(two.ok());
  expectNear((*two)[0].second, g.expected, 1e-5);
  // One artifact serves both batches, and keeps the range.
  const std::string path = temporaryPath("every_batch.tsl");
  ts::Status saved = exe->save(path);
  ASSERT_TRUE(saved.ok()) << saved.str();
  auto loaded = ts::load(path);
  ASSERT_TRUE(loaded.ok()) << loaded.status().str();
  auto loadedTwo = loaded->run({{"image", g.input}});
  ASSERT_TRUE(loadedTwo.ok()) << loadedTwo.status().str();
  expectNear((*loadedTwo)[0].second, g.expected, 1e-5);
  auto loadedOne = loaded->run({{"image", first}});
  ASSERT_TRUE(loadedOne.ok()) << loadedOne.status().str();
  expectNear((*loadedOne)[0].second, firstRow, 1e-5);
  std::vector<float> five(5 * 28 * 28, 0.0f);
  auto outside = loaded->run({{"image", ts::Tensor::borrow(ts::DType::Float32, {5, 1, 28, 28}, five.data())}});
  ASSERT_FALSE(outside.ok());
  EXPECT_NE(outside.status().message().find("dim 0 (N) is 5, outside the range N=1..4"), std::string::npos)
      << outside.status().str();
}

TEST(ApiExecutable, SavedArtifactsLoadAndRunTheSame) {
  auto model = ts::Model::load(kExamples + "small_cnn.onnx");
  ASSERT_TRUE(model.ok());
  Golden g = golden();
  for (const std::string target : {"cpu", "nc-v2"}) {
    ts::CompileOptions options;
    options.batch = 2;
    auto exe = ts::compile(*model, target, options);
    ASSERT_TRUE(exe.ok()) << exe.status().str();
    auto before = exe->run({{"image", g.input}});
    ASSERT_TRUE(before.ok()) << before.status().str();
    const std::string path = temporaryPath(target + ".tsl");
    ASSERT_TRUE(exe->save(path).ok());
    auto loaded = ts::load(path);
    ASSERT_TRUE(loaded.ok()) << loaded.status().str();
    EXPECT_EQ(loaded->target(), target);
    EXPECT_FALSE(loaded->report().empty());
    auto after = loaded->run({{"image", g.input}});
    ASSERT_TRUE(after.ok()) << after.status().str();
    const ts::Tensor &x = (*before)[0].second, &y = (*after)[0].second;
    ASSERT_EQ(x.bytes(), y.bytes());
    EXPECT_EQ(std::memcmp(x.data(), y.data(), x.bytes()), 0) << target;
    std::filesystem::remove(path);
  }
}

TEST(ApiExecutable, AcceleratorProfileWritesTheReportAndTimeline) {
  auto model = ts::Model::load(kExamples + "small_cnn.onnx");
  ASSERT_TRUE(model.ok());
  ts::CompileOptions options;
  options.batch = 1;
  auto exe = ts::compile(*model, "nc-v2", options);
  ASSERT_TRUE(exe.ok()) << exe.status().str();
  auto trace = exe->timeline();
  ASSERT_TRUE(trace.ok()) << trace.status().str();
  EXPECT_NE(trace->find("traceEvents"), std::string::npos);
  const std::string dir = temporaryPath("profile");
  ASSERT_TRUE(exe->profile(dir).ok());
  EXPECT_TRUE(std::filesystem::exists(dir + "/report.html"));
  const ts::RunSummary summary = exe->lastRun();
  EXPECT_TRUE(summary.simulated);
  EXPECT_GT(summary.deviceUs, 0);
  EXPECT_GT(summary.deviceNodes, 0);
  EXPECT_FALSE(summary.boundingEngine.empty());
  std::filesystem::remove_all(dir);
}

TEST(ApiExecutable, CpuProfilesPerOp) {
  auto model = ts::Model::load(kExamples + "small_cnn.onnx");
  ASSERT_TRUE(model.ok());
  ts::CompileOptions options;
  options.batch = 2;
  auto exe = ts::compile(*model, "cpu", options);
  ASSERT_TRUE(exe.ok());
  exe->setProfiling(true);
  Golden g = golden();
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(exe->run({{"image", g.input}}).ok());
  std::vector<ts::OpProfile> rows = exe->opProfile();
  ASSERT_FALSE(rows.empty());
  for (const ts::OpProfile &row : rows) EXPECT_EQ(row.runs, 3) << row.node;
  EXPECT_FALSE(exe->timeline().ok());  // Native: no timeline.
}

TEST(ApiTensor, FeedsAreNotCopied) {
  auto model = ts::Model::fromBytes(unaryModel(), "identity.onnx");
  ASSERT_TRUE(model.ok()) << model.status().str();
  auto exe = ts::compile(*model, "ref");
  ASSERT_TRUE(exe.ok());
  std::vector<float> x = {1, 2, 3, 4, 5, 6};
  auto outputs = exe->run({{"x", ts::Tensor::borrow(ts::DType::Float32, {2, 3}, x.data())}});
  ASSERT_TRUE(outputs.ok()) << outputs.status().str();
  // The reference interpreter passes the fed tensor through Identity: the output is the caller's memory.
  EXPECT_EQ((*outputs)[0].second.data(), static_cast<void *>(x.data()));
}

TEST(ApiTensor, OutputsKeepTheirMemoryAliveAfterTheExecutable) {
  ts::Tensor y;
  {
    auto model = ts::Model::fromBytes(unaryModel("Relu"), "relu.onnx");
    ASSERT_TRUE(model.ok());
    auto exe = ts::compile(*model, "cpu");
    ASSERT_TRUE(exe.ok()) << exe.status().str();
    auto outputs = exe->run({{"x", ts::Tensor::copyOf({2, 3}, std::vector<float>{-1, 2, -3, 4, -5, 6})}});
    ASSERT_TRUE(outputs.ok());
    y = (*outputs)[0].second;
  }
  const std::vector<float> want = {0, 2, 0, 4, 0, 6};
  ASSERT_EQ(y.numel(), 6);
  for (int i = 0; i < 6; ++i) EXPECT_EQ(y.data<float>()[i], want[i]);
}

TEST(ApiErrors, NameTheFileTheNodeAndTheOp) {
  auto missing = ts::Model::load("/nonexistent/model.onnx");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), ts::ErrorCode::FileNotFound);
  EXPECT_EQ(missing.status().file(), "/nonexistent/model.onnx");

  auto unknown = ts::Model::fromBytes(unaryModel("FrobnicateTensor"), "frobnicate.onnx");
  ASSERT_FALSE(unknown.ok());
  EXPECT_EQ(unknown.status().code(), ts::ErrorCode::UnsupportedOp);
  EXPECT_EQ(unknown.status().file(), "frobnicate.onnx");
  EXPECT_EQ(unknown.status().node(), "the_node");
  EXPECT_EQ(unknown.status().op(), "FrobnicateTensor");
  EXPECT_NE(unknown.status().str().find("frobnicate.onnx: node 'the_node' (FrobnicateTensor"), std::string::npos)
      << unknown.status().str();

  auto model = ts::Model::fromBytes(unaryModel(), "identity.onnx");
  ASSERT_TRUE(model.ok());
  auto badTarget = ts::compile(*model, "tpu");
  ASSERT_FALSE(badTarget.ok());
  EXPECT_NE(badTarget.status().message().find("unknown target 'tpu'"), std::string::npos);

  auto exe = ts::compile(*model, "cpu");
  ASSERT_TRUE(exe.ok());
  auto wrongShape = exe->run({{"x", ts::Tensor::zeros(ts::DType::Float32, {3, 2})}});
  ASSERT_FALSE(wrongShape.ok());
  EXPECT_EQ(wrongShape.status().code(), ts::ErrorCode::ShapeMismatch);
  EXPECT_NE(wrongShape.status().message().find("input 'x'"), std::string::npos) << wrongShape.status().str();
  auto wrongName = exe->run({{"z", ts::Tensor::zeros(ts::DType::Float32, {2, 3})}});
  ASSERT_FALSE(wrongName.ok());
  EXPECT_NE(wrongName.status().message().find("'z'"), std::string::npos) << wrongName.status().str();

  auto notArtifact = ts::load(kExamples + "small_cnn.onnx");
  ASSERT_FALSE(notArtifact.ok());
  EXPECT_EQ(notArtifact.status().file(), kExamples + "small_cnn.onnx");
}

// One executable, 8 threads x 100 runs each on inputs of their own: every output equals the
// single-threaded one. (Run under ASan+UBSan by the sanitizer build.)
TEST(ApiThreads, OneExecutableRunFromEightThreads) {
  auto model = ts::Model::load(kExamples + "small_cnn.onnx");
  ASSERT_TRUE(model.ok());
  ts::CompileOptions options;
  options.batch = 2;
  options.threads = 2;
  auto exe = ts::compile(*model, "cpu", options);
  ASSERT_TRUE(exe.ok());
  Golden g = golden();
  auto want = exe->run({{"image", g.input}});
  ASSERT_TRUE(want.ok());
  const ts::Tensor &expected = (*want)[0].second;
  constexpr int kThreads = 8, kRuns = 100;
  std::vector<int> mismatches(kThreads, 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      ts::Tensor input = ts::Tensor::copyOf(g.input.dtype(), g.input.shape(), g.input.data());
      for (int r = 0; r < kRuns; ++r) {
        auto got = exe->run({{"image", input}});
        if (!got.ok() || std::memcmp((*got)[0].second.data(), expected.data(), expected.bytes()) != 0) ++mismatches[t];
      }
    });
  }
  for (std::thread &thread : threads) thread.join();
  for (int t = 0; t < kThreads; ++t) EXPECT_EQ(mismatches[t], 0) << "thread " << t;
}

TEST(ApiKernels, RunsALibraryKernelAndChecksIt) {
  std::vector<ts::nc::KernelInfo> kernels = ts::nc::kernels();
  ASSERT_FALSE(kernels.empty());
  ts::nc::KernelRunOptions options;
  options.shape = {{"M", 128}, {"N", 128}, {"K", 128}};
  auto result = ts::nc::kernelRun("matmul", options);
  ASSERT_TRUE(result.ok()) << result.status().str();
  EXPECT_TRUE(result->checked);
  EXPECT_TRUE(result->passed);
  EXPECT_GT(result->latencyUs, 0);
  EXPECT_GT(result->mfuPercent, 0);
  EXPECT_EQ(result->races, 0);
  auto unknown = ts::nc::kernelRun("no_such_kernel");
  EXPECT_FALSE(unknown.ok());
}

}  // namespace
