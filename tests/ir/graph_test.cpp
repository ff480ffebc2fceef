// Graph mutation keeps use lists exact; topological sort orders producers first and finds cycles.
#include "ir/graph.h"

#include <gtest/gtest.h>

#include <set>

#include "ir/builder.h"
#include "ir/verifier.h"

namespace tessel {
namespace {

Type f32(std::vector<int64_t> sizes) { return Type::tensor(DType::Float32, Shape::fromSizes(sizes)); }

TEST(Graph, UseListsFollowMutations) {
  Graph g;
  GraphBuilder b(g);
  Value *x = b.input("x", f32({2}));
  Value *y = b.op("Relu", {x});
  Value *z = b.op("Add", {y, x});
  b.output(z);
  ASSERT_EQ(x->uses().size(), 2u);
  EXPECT_EQ(y->uses().size(), 1u);
  EXPECT_EQ(y->producer()->opType(), "Relu");

  Value *w = b.op("Neg", {x});
  g.replaceAllUsesWith(y, w);
  EXPECT_TRUE(y->uses().empty());
  EXPECT_EQ(w->uses().size(), 1u);
  EXPECT_EQ(z->producer()->input(0), w);
  g.eraseNode(y->producer());
  EXPECT_EQ(g.numNodes(), 2u);
  EXPECT_EQ(x->uses().size(), 2u);  // Neg and Add; the erased Relu dropped its use.
}

TEST(Graph, RemovesUnusedInitializers) {
  Graph g;
  Value *x = g.addInput("x", f32({2}));
  Value *w = g.addInitializer("w", Tensor::fromVector<float>({2}, {1, 2}));
  Value *dead = g.addInitializer("dead", Tensor::fromVector<float>({2}, {3, 4}));
  Node *add = g.addNode("Add", {x, w}, {"y"});
  g.addOutput(add->output(0));
  g.removeInitializer(dead);
  EXPECT_EQ(g.initializers(), std::vector<Value *>{w});
  EXPECT_FALSE(dead->hasInitializer());
  EXPECT_FALSE(dead->isGraphInput());
  EXPECT_EQ(dead->producer(), nullptr);
  EXPECT_EQ(g.findValue("dead"), dead);  // Stays owned, as an orphan.
  EXPECT_TRUE(verifyGraph(g).ok());
  // Once unread, the other goes too.
  add->setInput(1, x);
  g.removeInitializer(w);
  EXPECT_TRUE(g.initializers().empty());
  EXPECT_TRUE(verifyGraph(g).ok());
  // A name freed this way can be an initializer again, on the same value.
  EXPECT_EQ(g.addInitializer("dead", Tensor::fromVector<float>({1}, {5})), dead);
  EXPECT_EQ(g.initializers(), std::vector<Value *>{dead});
  EXPECT_TRUE(verifyGraph(g).ok());
}

TEST(Graph, SortsTopologicallyAndRejectsCycles) {
  Graph g;
  GraphBuilder b(g);
  Value *x = b.input("x", f32({2}));
  Node *late = g.addNode("Relu", {}, {"late"}, "late");
  Node *early = g.addNode("Neg", {x}, {"early"}, "early");
  late->addInput(early->output(0));
  ASSERT_TRUE(g.sortTopologically().ok());
  EXPECT_EQ(g.nodes().front()->name(), "early");

  Node *a = g.addNode("Add", {}, {"a"}, "a");
  Node *c = g.addNode("Relu", {a->output(0)}, {"c"}, "c");
  a->addInput(c->output(0));
  Status s = g.sortTopologically();
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.diag().message.find("cycle"), std::string::npos);
}

TEST(Graph, UniqueNamesAvoidCollisions) {
  Graph g;
  g.createValue("t");
  std::string n = g.uniqueName("t");
  EXPECT_NE(n, "t");
  g.createValue(n);
  EXPECT_NE(g.uniqueName("t"), n);
}

}  // namespace
}  // namespace tessel

namespace tessel {
namespace {

TEST(GraphBuilder, MultiOutputNodesGetDistinctNames) {
  Graph g;
  GraphBuilder b(g);
  Value *x = b.input("x", Type::tensor(DType::Float32, Shape::fromSizes({4})));
  Node *first = b.node("Split", {x}, 2);
  Node *second = b.node("Split", {x}, 2);
  std::set<std::string> names;
  for (Node *n : {first, second}) {
    for (Value *v : n->outputs()) names.insert(v->name());
  }
  EXPECT_EQ(names.size(), 4u);
}

}  // namespace
}  // namespace tessel
