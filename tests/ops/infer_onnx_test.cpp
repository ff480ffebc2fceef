// Per-node ONNX shape inference on graphs built in code: static shapes through Conv, MatMul,
// Concat and Gather; Reshape reading a constant shape (Constant node or initializer) but not one
// that can be fed; subgraphs of If; merging with types already known; and bad input reported as
// a Diagnostic naming the node and op.
#include <gtest/gtest.h>

#include "ir/builder.h"
#include "ops/registry.h"

namespace tessel {
namespace {

constexpr int64_t kOpset = 17;

Type f32(std::vector<Dim> dims) { return Type::tensor(DType::Float32, Shape(std::move(dims))); }
Type i64(std::vector<Dim> dims) { return Type::tensor(DType::Int64, Shape(std::move(dims))); }

/// Infers `node` at kOpset and returns the type of its output `index` as text ("f32[1,4,8,8]").
std::string inferred(Node *node, size_t index = 0) {
  Status status = inferOnnx(*node, kOpset);
  EXPECT_TRUE(status.ok()) << status.str();
  return node->output(index)->type().str();
}

TEST(InferOnnx, Conv) {
  Graph g;
  GraphBuilder b(g);
  Value *x = b.input("x", f32({1, 3, 8, 8}));
  Value *w = b.constant("w", Tensor(DType::Float32, {4, 3, 3, 3}));
  Node *same = b.node("Conv", {x, w}, 1, {{"pads", std::vector<int64_t>{1, 1, 1, 1}}});
  EXPECT_EQ(inferred(same), "f32[1,4,8,8]");
  Node *strided = b.node("Conv", {x, w}, 1, {{"strides", std::vector<int64_t>{2, 2}}});
  EXPECT_EQ(inferred(strided), "f32[1,4,3,3]");
}

TEST(InferOnnx, MatMulKeepsSymbolicBatch) {
  Graph g;
  GraphBuilder b(g);
  Value *x = b.input("x", f32({Dim::symbolic("batch"), 3, 4}));
  Value *y = b.input("y", f32({4, 5}));
  EXPECT_EQ(inferred(b.node("MatMul", {x, y})), "f32[batch,3,5]");
}

TEST(InferOnnx, ReshapeReadsConstantShapes) {
  Graph g;
  GraphBuilder b(g);
  Value *x = b.input("x", f32({2, 3, 4}));
  Node *constant = b.node("Constant", {}, 1, {{"value", Tensor::fromVector<int64_t>({2}, {6, -1})}});
  EXPECT_EQ(inferred(constant), "i64[2]");
  EXPECT_EQ(inferred(b.node("Reshape", {x, constant->output(0)})), "f32[6,4]");

  Node *ints = b.node("Constant", {}, 1, {{"value_ints", std::vector<int64_t>{4, 0, 2}}});
  EXPECT_EQ(inferred(b.node("Reshape", {x, ints->output(0)})), "f32[4,3,2]");

  Value *initializer = b.constant("shape", Tensor::fromVector<int64_t>({3}, {1, -1, 2}));
  EXPECT_EQ(inferred(b.node("Reshape", {x, initializer})), "f32[1,12,2]");

  // An initializer that is also a graph input can be fed at run time, so its values are not used.
  Value *fed = b.input("fed_shape", i64({2}));
  g.addInitializer("fed_shape", Tensor::fromVector<int64_t>({2}, {24, 1}));
  EXPECT_EQ(inferred(b.node("Reshape", {x, fed})), "f32[*]");
}

TEST(InferOnnx, ConcatAndGather) {
  Graph g;
  GraphBuilder b(g);
  Value *a = b.input("a", f32({2, 3}));
  Value *c = b.input("c", f32({2, 5}));
  EXPECT_EQ(inferred(b.node("Concat", {a, c}, 1, {{"axis", int64_t{1}}})), "f32[2,8]");

  Value *data = b.input("data", f32({5, 4}));
  Value *indices = b.input("indices", i64({2, 3}));
  EXPECT_EQ(inferred(b.node("Gather", {data, indices}, 1, {{"axis", int64_t{0}}})), "f32[2,3,4]");
  EXPECT_EQ(inferred(b.node("Gather", {data, indices}, 1, {{"axis", int64_t{1}}})), "f32[5,2,3]");
}

TEST(InferOnnx, OmittedOptionalInputsAndOutputs) {
  Graph g;
  GraphBuilder b(g);
  Value *x = b.input("x", f32({4, 6}));
  Value *max = b.constant("max", Tensor::scalar<float>(6.0f));
  EXPECT_EQ(inferred(b.node("Clip", {x, nullptr, max})), "f32[4,6]");
  Node *dropout = g.addNode("Dropout", {x}, {"dropped", ""}, "dropout");
  EXPECT_EQ(inferred(dropout), "f32[4,6]");
}

TEST(InferOnnx, IfInfersBothBranches) {
  Graph g;
  GraphBuilder b(g);
  Value *cond = b.input("cond", Type::tensor(DType::Bool, Shape::scalar()));
  Value *x = b.input("x", f32({2, 3}));
  Node *node = b.node("If", {cond});
  auto thenBranch = std::make_shared<Graph>("then");
  thenBranch->addOutput(GraphBuilder(*thenBranch).op("Relu", {x}));  // Reads x from the outer graph.
  auto elseBranch = std::make_shared<Graph>("else");
  elseBranch->addOutput(GraphBuilder(*elseBranch).op("Neg", {x}));
  node->setAttr("then_branch", Attribute::GraphPtr(thenBranch));
  node->setAttr("else_branch", Attribute::GraphPtr(elseBranch));
  EXPECT_EQ(inferred(node), "f32[2,3]");
  EXPECT_EQ(thenBranch->outputs()[0]->type().str(), "f32[2,3]");  // The subgraph is typed too.
}

TEST(InferOnnx, MergeKeepsKnownDims) {
  Graph g;
  GraphBuilder b(g);
  Value *x = b.input("x", f32({2, 3, 4}));
  Value *shape = b.input("shape", i64({2}));
  Node *reshape = b.node("Reshape", {x, shape});
  reshape->output(0)->setType(f32({6, Dim::symbolic("n")}));
  EXPECT_EQ(inferred(reshape), "f32[6,n]");  // ONNX infers only the dtype; what was known stays.

  // Unknown dims take what is inferred; a symbol stays unless a size is inferred for it.
  Value *partial = b.input("partial", f32({Dim(), 3, Dim(), 5}));
  Node *relu = b.node("Relu", {partial});
  relu->output(0)->setType(f32({Dim::symbolic("b"), Dim(), 4, Dim::symbolic("c")}));
  EXPECT_EQ(inferred(relu), "f32[b,3,4,5]");
}

TEST(InferOnnx, ConflictWithDeclaredTypeIsAnError) {
  Graph g;
  GraphBuilder b(g);
  Value *x = b.input("x", f32({2, 3}));
  Node *relu = b.node("Relu", {x});
  relu->output(0)->setType(f32({2, 5}));
  Status status = inferOnnx(*relu, kOpset);
  ASSERT_FALSE(status.ok());
  EXPECT_EQ(status.diag().code, ErrorCode::ShapeMismatch);
  EXPECT_EQ(relu->output(0)->type().str(), "f32[2,5]");  // Left as it was.

  relu->output(0)->setType(Type::tensor(DType::Int32, Shape::fromSizes({2, 3})));
  status = inferOnnx(*relu, kOpset);
  ASSERT_FALSE(status.ok());
  EXPECT_EQ(status.diag().code, ErrorCode::TypeMismatch);
}

TEST(InferOnnx, BadShapeIsADiagnosticNamingTheNode) {
  Graph g;
  GraphBuilder b(g);
  Value *x = b.input("x", f32({2, 3}));
  Value *y = b.input("y", f32({4, 5}));
  Node *matmul = g.addNode("MatMul", {x, y}, {"z"}, "bad_matmul");
  Status status = inferOnnx(*matmul, kOpset);
  ASSERT_FALSE(status.ok());
  EXPECT_EQ(status.diag().code, ErrorCode::ShapeMismatch);
  EXPECT_NE(status.diag().message.find("MatMul"), std::string::npos) << status.diag().message;
  EXPECT_NE(status.diag().message.find("Incompatible dimensions"), std::string::npos) << status.diag().message;
  EXPECT_EQ(status.diag().loc.node, "bad_matmul");
  EXPECT_EQ(status.diag().loc.opType, "MatMul");
  EXPECT_EQ(matmul->output(0)->type().kind(), Type::Kind::Unknown);
}

TEST(InferOnnx, BadTypeIsATypeMismatch) {
  Graph g;
  GraphBuilder b(g);
  Value *x = b.input("x", f32({2}));
  Value *axes = b.input("axes", f32({1}));  // Unsqueeze needs int64 axes.
  Status status = inferOnnx(*b.node("Unsqueeze", {x, axes}), kOpset);
  ASSERT_FALSE(status.ok());
  EXPECT_EQ(status.diag().code, ErrorCode::TypeMismatch) << status.str();
}

TEST(InferOnnx, UnknownOpIsUnsupported) {
  Graph g;
  GraphBuilder b(g);
  Value *x = b.input("x", f32({2}));
  Status status = inferOnnx(*b.node("NoSuchOp", {x}), kOpset);
  ASSERT_FALSE(status.ok());
  EXPECT_EQ(status.diag().code, ErrorCode::UnsupportedOp);
  EXPECT_NE(status.diag().message.find("NoSuchOp"), std::string::npos);
}

TEST(InferOnnx, InputWithoutTypeIsReported) {
  Graph g;
  GraphBuilder b(g);
  Value *untyped = g.createValue("untyped");
  Status status = inferOnnx(*b.node("Relu", {untyped}), kOpset);
  ASSERT_FALSE(status.ok());
  EXPECT_EQ(status.diag().code, ErrorCode::TypeMismatch) << status.str();

  Value *noDtype = b.input("no_dtype", Type::tensor(DType::Undefined, Shape::fromSizes({2})));
  status = inferOnnx(*b.node("Relu", {noDtype}), kOpset);
  ASSERT_FALSE(status.ok());
  EXPECT_EQ(status.diag().code, ErrorCode::TypeMismatch) << status.str();
}

TEST(InferOnnx, OpsetOutOfRangeIsUnsupported) {
  Graph g;
  GraphBuilder b(g);
  Node *relu = b.node("Relu", {b.input("x", f32({2}))});
  EXPECT_EQ(inferOnnx(*relu, -1).diag().code, ErrorCode::UnsupportedOp);
  EXPECT_TRUE(inferOnnx(*relu, int64_t{1} << 40).ok());  // Newest schema.
}

}  // namespace
}  // namespace tessel
