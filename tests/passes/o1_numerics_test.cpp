// -O1 must not change what a model computes: for the ONNX suite's PyTorch-exported models, the
// reference target's outputs before and after the pipeline are bit-identical.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include <onnx/onnx_pb.h>

#include "frontend/onnx/importer.h"
#include "frontend/onnx/tensor_proto.h"
#include "ir/equality.h"
#include "passes/pipelines.h"
#include "targets/ref/interpreter.h"

namespace tessel {
namespace {

namespace fs = std::filesystem;

/// The tensor inputs of test_data_set_0, bound in order to the inputs without initializers.
std::optional<NamedValues> readFeeds(const fs::path &caseDir, const Graph &graph) {
  std::vector<Value *> feedable;
  for (Value *input : graph.inputs()) {
    if (!input->hasInitializer()) feedable.push_back(input);
  }
  NamedValues feeds;
  for (size_t i = 0;; ++i) {
    fs::path file = caseDir / "test_data_set_0" / ("input_" + std::to_string(i) + ".pb");
    if (!fs::exists(file)) break;
    if (i >= feedable.size() || !feedable[i]->type().isTensor()) return std::nullopt;
    std::ifstream in(file, std::ios::binary);
    std::stringstream bytes;
    bytes << in.rdbuf();
    onnx::TensorProto proto;
    if (!proto.ParseFromString(bytes.str())) return std::nullopt;
    auto tensor = onnx_frontend::tensorFromProto(proto, ".");
    if (!tensor.ok()) return std::nullopt;
    feeds.emplace_back(feedable[i]->name(), RuntimeValue(std::move(tensor).value()));
  }
  return feeds;
}

TEST(O1Numerics, PytorchSuiteOutputsAreIdenticalBeforeAndAfter) {
  int compared = 0, optimizedAway = 0;
  for (const char *suite : {"pytorch-converted", "pytorch-operator"}) {
    fs::path root = fs::path("/usr/share/libonnx-testdata/data") / suite;
    if (!fs::exists(root)) GTEST_SKIP() << root << " is not installed";
    std::vector<fs::path> cases;
    for (const auto &entry : fs::directory_iterator(root)) cases.push_back(entry.path());
    std::sort(cases.begin(), cases.end());
    for (const fs::path &dir : cases) {
      auto original = importOnnxFile((dir / "model.onnx").string());
      auto optimized = importOnnxFile((dir / "model.onnx").string());
      if (!original.ok() || !optimized.ok()) continue;
      std::optional<NamedValues> feeds = readFeeds(dir, *original->graph);
      if (!feeds) continue;
      auto before = ReferenceInterpreter(*original).run(*feeds);
      if (!before.ok()) continue;  // Not supported on ref: nothing to compare against.
      PassManager manager;
      ASSERT_TRUE(addOptimizationPipeline(manager, 1).ok());
      auto ran = manager.run(*optimized);
      ASSERT_TRUE(ran.ok()) << dir << ": " << ran.diag().str();
      size_t nodesBefore = original->graph->numNodes(), nodesAfter = optimized->graph->numNodes();
      if (nodesAfter < nodesBefore) ++optimizedAway;
      auto after = ReferenceInterpreter(*optimized).run(*feeds);
      ASSERT_TRUE(after.ok()) << dir << ": " << after.diag().str();
      ASSERT_EQ(before->size(), after->size()) << dir;
      for (size_t i = 0; i < before->size(); ++i) {
        EXPECT_EQ((*before)[i].first, (*after)[i].first) << dir << ": output " << i << " was renamed";
        const RuntimeValue &a = (*before)[i].second, &b = (*after)[i].second;
        ASSERT_TRUE(a.isTensor() && b.isTensor()) << dir;
        EXPECT_TRUE(tensorsEqual(a.tensor(), b.tensor())) << dir << ": output " << i << " differs after -O1";
      }
      ++compared;
    }
  }
  EXPECT_GT(compared, 50);
  std::printf("compared %d models; -O1 removed nodes from %d\n", compared, optimizedAway);
}

}  // namespace
}  // namespace tessel
