// The pass table and manager: names resolve, pipelines run in order and report whether anything
// changed, and a second run of a pass that reached its fixed point changes nothing.
#include "passes/pass_manager.h"

#include <gtest/gtest.h>

#include "ir/builder.h"
#include "ir/printer.h"
#include "ir/verifier.h"
#include "passes/eliminate_dead_code.h"

namespace tessel {
namespace {

Type f32(std::vector<int64_t> sizes) { return Type::tensor(DType::Float32, Shape::fromSizes(sizes)); }

/// relu(x) is the output; neg(x) and abs(neg) are dead.
Model makeModelWithDeadChain() {
  Model model;
  model.opsetImports[""] = 13;
  GraphBuilder b(*model.graph);
  Value *x = b.input("x", f32({2, 3}));
  b.op("Abs", {b.op("Neg", {x})});
  b.output(b.op("Relu", {x}));
  return model;
}

TEST(PassManager, FindsEveryPassOfTheTable) {
  ASSERT_GE(allPasses().size(), 2u);
  for (const PassInfo &pass : allPasses()) {
    EXPECT_EQ(findPass(pass.cliName), &pass);
    EXPECT_FALSE(pass.description.empty());
  }
  EXPECT_EQ(findPass("no-such-pass"), nullptr);
}

TEST(PassManager, RejectsUnknownNamesListingTheKnownOnes) {
  PassManager manager;
  Status status = manager.addPipeline("infer-shapes,fold-everything");
  ASSERT_FALSE(status.ok());
  EXPECT_EQ(status.diag().code, ErrorCode::InvalidArgument);
  EXPECT_EQ(status.diag().message, "unknown pass 'fold-everything'; the passes are: infer-shapes, promote-half, fuse-qdq, "
            "float-dynamic-quantization, fold-shapes, fold-constants, "
            "eliminate-common-subexpressions, eliminate-dead-code, fold-batch-norm, fold-conv-affine, recognize-gelu, "
            "recognize-layer-norm, recognize-softmax, recognize-attention, recognize-rotary-embedding, kv-cache-in-place, "
            "last-position-logits, fuse-epilogues, fold-conv-input-affine, fuse-elementwise, "
            "assign-layout");
}

TEST(PassManager, RunsPipelinesInOrderAndReportsChanges) {
  Model model = makeModelWithDeadChain();
  PassManager manager;
  ASSERT_TRUE(manager.addPipeline("infer-shapes,eliminate-dead-code").ok());
  ASSERT_EQ(manager.passes().size(), 2u);
  EXPECT_EQ(manager.passes()[0]->cliName, "infer-shapes");
  auto changed = manager.run(model);
  ASSERT_TRUE(changed.ok()) << changed.diag().str();
  EXPECT_TRUE(*changed);
  EXPECT_EQ(model.graph->numNodes(), 1u);
  EXPECT_EQ(model.graph->outputs()[0]->type(), f32({2, 3}));
  auto again = manager.run(model);
  ASSERT_TRUE(again.ok()) << again.diag().str();
  EXPECT_FALSE(*again);
}

TEST(EliminateDeadCode, LeavesNoUsesBehindWhenErasingNodesWithSubgraphs) {
  Model model;
  model.opsetImports[""] = 13;
  Graph &g = *model.graph;
  Value *c = g.addInput("c", Type::tensor(DType::Bool, Shape::scalar()));
  Value *x = g.addInput("x", f32({2}));
  Node *deadIf = g.addNode("If", {c}, {"unused"}, "dead_if");
  auto branch = std::make_shared<Graph>("then");
  branch->setParentNode(deadIf);
  branch->addOutput(branch->addNode("Neg", {x}, {"t"})->output(0));
  deadIf->setAttr("then_branch", branch);
  branch.reset();  // The attribute owns it: erasing the If destroys it.
  Node *live = g.addNode("Relu", {x}, {"y"});
  g.addOutput(live->output(0));
  ASSERT_TRUE(verifyModel(model).ok());
  auto changed = eliminateDeadCode(model);
  ASSERT_TRUE(changed.ok());
  EXPECT_TRUE(*changed);
  EXPECT_EQ(g.numNodes(), 1u);
  EXPECT_EQ(x->uses().size(), 1u);  // Only the Relu; the Neg inside the erased If let go of %x.
  EXPECT_TRUE(verifyModel(model).ok()) << verifyModel(model).str();
}

}  // namespace
}  // namespace tessel
