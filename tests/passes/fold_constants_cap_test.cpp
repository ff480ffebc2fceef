// fold-constants' size cap: it stops folds that would grow the model, not those whose output is no
// larger than an input they read (a Slice or Transpose of a weight).
#include <gtest/gtest.h>

#include "ir/parser.h"
#include "passes/fold_constants.h"

namespace tessel {
namespace {

constexpr const char *kModel = R"(
model opset(ai.onnx=13) ir_version=8 {
func @main(%x: f32[2,3]) -> (%a: f32[2,3], %b: f32[2,6]) {
  const %w = dense<f32[2,4]: 1, 2, 3, 4, 5, 6, 7, 8>
  const %starts = dense<i64[1]: 1>
  const %ends = dense<i64[1]: 4>
  const %axes = dense<i64[1]: 1>
  const %repeats = dense<i64[2]: 1, 2>
  %s = Slice(%w, %starts, %ends, %axes)
  %a = Add(%x, %s)
  %t = Tile(%s, %repeats)
  %b = Concat(%t, %t) {axis = 0}
  return %a, %b
}
}
)";

bool hasOp(const Model &model, const std::string &op) {
  for (const auto &node : model.graph->nodes()) {
    if (node->opType() == op) return true;
  }
  return false;
}

TEST(FoldConstantsCap, ShrinkingFoldsPassTheCapGrowingOnesDoNot) {
  auto model = parseModel(kModel, "cap.tsl.txt");
  ASSERT_TRUE(model.ok()) << model.diag().str();
  FoldConstantsOptions options;
  options.maxOutputElements = 4;  // Below the 6 elements of the slice and the 12 of the tile.
  auto changed = foldConstants(*model, options);
  ASSERT_TRUE(changed.ok()) << changed.diag().str();
  EXPECT_TRUE(*changed);
  EXPECT_FALSE(hasOp(*model, "Slice"));  // 6 elements out of an 8-element input: folded.
  EXPECT_TRUE(hasOp(*model, "Tile"));    // 12 elements out of a 6-element input: left alone.
}

}  // namespace
}  // namespace tessel
