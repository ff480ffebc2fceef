// Opset 18 in the registry: every ai.onnx row reaches 18 or is followed by an opset-18 row, each
// opset-18 row the linked ONNX library predates has a signature for the importer, and the
// opset-18 inference gives the new semantics (Reduce* axes from input 1, Split's num_outputs with an
// uneven last chunk, Pad's axes, Resize's axes and keep_aspect_ratio_policy), not the opset-17 ones
// ONNX's older schemas would.
#include <gtest/gtest.h>

#include <map>

#include "ir/builder.h"
#include "ops/registry.h"

namespace tessel {
namespace {

constexpr int64_t kOpset = 18;

Type f32(std::vector<Dim> dims) { return Type::tensor(DType::Float32, Shape(std::move(dims))); }

std::string inferred(Node *node, size_t index = 0) {
  Status status = inferOnnx(*node, kOpset);
  EXPECT_TRUE(status.ok()) << status.str();
  return node->output(index)->type().str();
}

TEST(Opset18Registry, EveryOnnxOpReachesOpset18OrSaysWhy) {
  std::map<std::string_view, int64_t> newest;
  for (const OpInfo &op : allOps()) {
    if (!op.domain.empty()) continue;
    newest[op.name] = std::max(newest[op.name], op.untilVersion);
    if (op.sinceVersion > onnxLibraryMaxOpset()) {
      EXPECT_NE(opset18Signature(op.name), nullptr) << op.name << " has an opset-18 row but no signature";
      // Only the scatters, whose shapes did not change, may infer by ONNX's older schema.
      if (op.name != "ScatterElements" && op.name != "ScatterND") {
        EXPECT_NE(op.infer, &inferOnnx) << op.name;
      }
    }
  }
  for (const auto &[name, until] : newest) EXPECT_EQ(until, 18) << name;
  // The changed ops resolve to their opset-18 rows; unchanged ones keep their single row.
  for (std::string_view changed : {"ReduceMean", "ReduceMax", "Split", "Pad", "Resize", "LpPool", "ScatterND"}) {
    const OpInfo *row = findOp("", changed, 18);
    ASSERT_NE(row, nullptr) << changed;
    EXPECT_EQ(row->sinceVersion, 18) << changed;
    EXPECT_EQ(findOp("", changed, 17)->untilVersion, 17) << changed;
  }
  EXPECT_EQ(findOp("", "ReduceSum", 18)->sinceVersion, 1);  // Axes became an input at 13 already.
  EXPECT_EQ(findOp("", "GroupNormalization", 18), nullptr);
}

TEST(Opset18Infer, ReduceReadsAxesInput) {
  Graph g;
  GraphBuilder b(g);
  Value *x = b.input("x", f32({2, 3, 4}));
  Value *axes = b.constant("axes", Tensor::fromVector<int64_t>({1}, {-1}));
  EXPECT_EQ(inferred(b.node("ReduceMean", {x, axes}, 1, {{"keepdims", int64_t{0}}})), "f32[2,3]");
  EXPECT_EQ(inferred(b.node("ReduceMax", {x, axes})), "f32[2,3,1]");
  // No axes: all of them, or none with noop_with_empty_axes.
  EXPECT_EQ(inferred(b.node("ReduceL2", {x}, 1, {{"keepdims", int64_t{0}}})), "f32[]");
  EXPECT_EQ(inferred(b.node("ReduceProd", {x}, 1, {{"noop_with_empty_axes", int64_t{1}}})), "f32[2,3,4]");
  // Axes known only at run time: nothing is known of the shape (as ONNX infers ReduceSum-13).
  Value *fed = b.input("fed", Type::tensor(DType::Int64, Shape(std::vector<Dim>{Dim(1)})));
  EXPECT_EQ(inferred(b.node("ReduceMin", {x, fed})), "f32[*]");
  // The opset-17 attribute on an opset-18 node is an error, not the old meaning.
  Node *old = b.node("ReduceMean", {x}, 1, {{"axes", std::vector<int64_t>{1}}});
  Status status = inferOnnx(*old, kOpset);
  ASSERT_FALSE(status.ok());
  EXPECT_NE(status.diag().message.find("takes axes as input 1"), std::string::npos) << status.str();
}

TEST(Opset18Infer, SplitNumOutputsUnevenLastChunk) {
  Graph g;
  GraphBuilder b(g);
  Value *x = b.input("x", f32({2, 7}));
  Node *split = b.node("Split", {x}, 3, {{"axis", int64_t{1}}, {"num_outputs", int64_t{3}}});
  EXPECT_EQ(inferred(split, 0), "f32[2,3]");
  EXPECT_EQ(inferred(split, 2), "f32[2,1]");
  Node *tooMany = b.node("Split", {x}, 5, {{"axis", int64_t{1}}, {"num_outputs", int64_t{5}}});
  Status status = inferOnnx(*tooMany, kOpset);  // ceil(7 / 5) = 2: 2 + 2 + 2 + 2 > 7.
  ASSERT_FALSE(status.ok());
  EXPECT_NE(status.diag().message.find("does not split into 5 chunks of 2"), std::string::npos) << status.str();
  // A declared output type that contradicts the inference is an error, not trusted.
  Node *declared = b.node("Split", {x}, 2, {{"axis", int64_t{1}}, {"num_outputs", int64_t{2}}});
  declared->output(1)->setType(f32({2, 4}));
  Status mismatch = inferOnnx(*declared, kOpset);
  ASSERT_FALSE(mismatch.ok());
  EXPECT_NE(mismatch.diag().message.find("is declared f32[2,4] but infers as f32[2,3]"), std::string::npos)
      << mismatch.str();
  Value *sizes = b.constant("sizes", Tensor::fromVector<int64_t>({2}, {5, 2}));
  Node *both = b.node("Split", {x, sizes}, 2, {{"axis", int64_t{1}}, {"num_outputs", int64_t{2}}});
  EXPECT_FALSE(inferOnnx(*both, kOpset).ok());
}

TEST(Opset18Infer, PadAxesAndResizeAxes) {
  Graph g;
  GraphBuilder b(g);
  Value *x = b.input("x", f32({1, 2, 8, 10}));
  Value *pads = b.constant("pads", Tensor::fromVector<int64_t>({4}, {1, 2, 3, 4}));
  Value *padAxes = b.constant("pad_axes", Tensor::fromVector<int64_t>({2}, {-1, 1}));
  // Begins then ends, in the order of axes: axis 3 gets 1 and 3, axis 1 gets 2 and 4.
  EXPECT_EQ(inferred(b.node("Pad", {x, pads, nullptr, padAxes})), "f32[1,8,8,14]");

  Value *sizes = b.constant("sizes", Tensor::fromVector<int64_t>({2}, {6, 6}));
  Node *notLarger = b.node("Resize", {x, nullptr, nullptr, sizes}, 1,
                           {{"axes", std::vector<int64_t>{2, 3}}, {"keep_aspect_ratio_policy", std::string("not_larger")}});
  EXPECT_EQ(inferred(notLarger), "f32[1,2,5,6]");  // One scale, 0.6 = min(6/8, 6/10), rounded half up.
  Node *notSmaller = b.node("Resize", {x, nullptr, nullptr, sizes}, 1,
                            {{"axes", std::vector<int64_t>{2, 3}}, {"keep_aspect_ratio_policy", std::string("not_smaller")}});
  EXPECT_EQ(inferred(notSmaller), "f32[1,2,6,8]");
  Value *scales = b.constant("scales", Tensor::fromVector<float>({1}, {0.5f}));
  EXPECT_EQ(inferred(b.node("Resize", {x, nullptr, scales}, 1, {{"axes", std::vector<int64_t>{-1}}})), "f32[1,2,8,5]");
}

}  // namespace
}  // namespace tessel
