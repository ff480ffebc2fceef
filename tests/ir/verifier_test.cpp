// The verifier accepts well-formed graphs (including outer-scope reads from subgraphs) and names
// the node, op and problem for each broken invariant.
#include "ir/verifier.h"

#include <gtest/gtest.h>

#include "ir/builder.h"

namespace tessel {
namespace {

Type f32(std::vector<int64_t> sizes) { return Type::tensor(DType::Float32, Shape::fromSizes(sizes)); }

/// Expects verification to fail with a message that contains `needle`; returns the full text.
std::string expectInvalid(const Model &model, const std::string &needle) {
  Status status = verifyModel(model);
  EXPECT_FALSE(status.ok()) << "expected an error containing: " << needle;
  if (status.ok()) return "";
  EXPECT_EQ(status.diag().code, ErrorCode::InvalidModel);
  EXPECT_NE(status.str().find(needle), std::string::npos) << status.str();
  return status.str();
}

/// main(%c, %x) with an If whose branch reads %x from the enclosing graph.
struct IfModel {
  Model model;
  Node *ifNode;
  std::shared_ptr<Graph> branch;
};

IfModel makeIfModel() {
  IfModel m;
  m.model.sourcePath = "m.onnx";
  Graph &g = *m.model.graph;
  Value *c = g.addInput("c", Type::tensor(DType::Bool, Shape::scalar()));
  Value *x = g.addInput("x", f32({2}));
  m.ifNode = g.addNode("If", {c}, {"r"}, "branchy");
  m.branch = std::make_shared<Graph>("then");
  m.branch->setParentNode(m.ifNode);
  Node *neg = m.branch->addNode("Neg", {x}, {"t"}, "neg");
  m.branch->addOutput(neg->output(0));
  m.ifNode->setAttr("then_branch", m.branch);
  g.addOutput(m.ifNode->output(0));
  return m;
}

TEST(Verifier, AcceptsWellFormedGraphsWithOuterScopeReads) {
  IfModel m = makeIfModel();
  Status status = verifyModel(m.model);
  EXPECT_TRUE(status.ok()) << status.str();

  Model plain;
  GraphBuilder b(*plain.graph);
  Value *x = b.input("x", f32({2}));
  Value *w = b.constant("w", Tensor::fromVector<float>({2}, {1, 2}));
  Node *split = plain.graph->addNode("Split", {b.op("Add", {x, w})}, {"lo", "hi"});
  b.output(split->output(1));
  b.output(x);  // An input may be an output too.
  EXPECT_TRUE(verifyModel(plain).ok()) << verifyModel(plain).str();
}

TEST(Verifier, RejectsUseBeforeDefinition) {
  Model model;
  model.sourcePath = "m.onnx";
  Graph &g = *model.graph;
  Value *x = g.addInput("x", f32({2}));
  Node *late = g.addNode("Relu", {}, {"late"}, "late");
  Node *early = g.addNode("Neg", {x}, {"early"}, "early");
  late->addInput(early->output(0));
  g.addOutput(late->output(0));
  EXPECT_EQ(expectInvalid(model, "not in topological order"),
            "m.onnx: node 'late' (Relu): input 0 ('%early') is used before the node that defines it (nodes are not "
            "in topological order) (in graph '@main')");
  ASSERT_TRUE(g.sortTopologically().ok());
  EXPECT_TRUE(verifyModel(model).ok());
}

TEST(Verifier, RejectsValuesFromOutsideTheScope) {
  Model model;
  Graph &g = *model.graph;
  Graph other("other");
  Value *stranger = other.addInput("stranger", f32({2}));
  Node *n = g.addNode("Relu", {stranger}, {"y"}, "reads_stranger");
  g.addOutput(n->output(0));
  expectInvalid(model,
                "node 'reads_stranger' (Relu): input 0 ('%stranger') is not defined in this graph or an "
                "enclosing graph");
  g.eraseNode(n);  // Leave no Use in `other`, which dies first.
}

TEST(Verifier, RejectsSubgraphReadsOfLaterOrSiblingValues) {
  IfModel m = makeIfModel();
  Graph &g = *m.model.graph;
  // A value defined after the If cannot be read by its branch.
  Node *after = g.addNode("Abs", {g.inputs()[1]}, {"after"}, "after");
  Node *reader = m.branch->addNode("Sin", {after->output(0)}, {"s"}, "reads_later");
  expectInvalid(m.model, "node 'reads_later' (Sin): input 0 ('%after') is");
  m.branch->eraseNode(reader);

  // Nor can a second branch read the first branch's values.
  auto sibling = std::make_shared<Graph>("else");
  sibling->setParentNode(m.ifNode);
  Node *peek = sibling->addNode("Identity", {m.branch->outputs()[0]}, {"e"}, "peeks");
  sibling->addOutput(peek->output(0));
  m.ifNode->setAttr("else_branch", sibling);
  expectInvalid(m.model, "node 'peeks' (Identity): input 0 ('%t') is not defined in this graph or an enclosing graph");
  sibling->eraseNode(peek);
}

TEST(Verifier, RejectsDuplicateDefinitions) {
  Model model;
  Graph &g = *model.graph;
  Value *x = g.addInput("x", f32({2}));
  Node *a = g.addNode("Neg", {x}, {"y"}, "a");
  Node *b = g.addNode("Abs", {x}, {"y"}, "b");
  g.addOutput(b->output(0));
  (void)a;
  expectInvalid(model, "graph '@main' has two values named '%y'");

  Model shadow;
  Graph &h = *shadow.graph;
  Value *in = h.addInput("x", f32({2}));
  Node *n = h.addNode("Neg", {in}, {"c"}, "neg");
  h.addInitializer("c", Tensor::fromVector<float>({2}, {1, 2}));  // Turns the node's output into a constant too.
  h.addOutput(n->output(0));
  expectInvalid(shadow, "initializer '%c' is not a constant owned by the graph");
}

TEST(Verifier, RejectsUndefinedGraphOutputsAndOrphanedSubgraphs) {
  Model model;
  Graph &g = *model.graph;
  Graph other("other");
  g.addInput("x", f32({2}));
  g.addOutput(other.addInput("elsewhere", f32({2})));
  expectInvalid(model, "graph '@main' output 0 ('%elsewhere') is not defined in the graph or an enclosing graph");

  IfModel m = makeIfModel();
  m.branch->setParentNode(nullptr);
  expectInvalid(m.model, "m.onnx: node 'branchy' (If): subgraph '@then' does not name this node as its parent");
}

TEST(Verifier, RejectsUsesByNodesNoLongerInTheModel) {
  IfModel m = makeIfModel();
  Graph &g = *m.model.graph;
  // Dropping the subgraph without detaching its nodes leaves their Uses of %x behind.
  m.ifNode->setAttr("then_branch", int64_t{0});
  expectInvalid(m.model, "value '%x' has a use by a node that is not in the model");
  for (const auto &node : m.branch->nodes()) node->setInput(0, nullptr);
  EXPECT_TRUE(verifyModel(m.model).ok()) << verifyModel(m.model).str();
  (void)g;
}

}  // namespace
}  // namespace tessel
