// The data-movement lowerings on the cpu target against the reference interpreter (at -O0, so the
// ops run as written, with no reference fallback): aliases, Transpose fast paths and the generic
// case, Slice (constant bounds, negative steps, the attribute form), Split, Concat, Gather
// (constant and runtime indices, negative ones, out of range at lowering and at run time),
// Expand and Tile, over f32 and integer and bool dtypes, at ragged sizes.
#include <gtest/gtest.h>

#include "ir/parser.h"
#include "../cpu_test_util.h"
#include "targets/cpu/executable.h"

namespace tessel::cpu {
namespace {

using testing::expectCpuMatchesReference;

TEST(CpuDataMovement, AliasesChain) {
  expectCpuMatchesReference(R"(
model opset(ai.onnx=13) ir_version=8 {
func @main(%x: f32[2,3,4,5], %i: i64[6,5]) -> (%e: f32[6,20], %j: i64[30]) {
  const %shape = dense<i64[3]: 6, 4, 5>
  const %axes = dense<i64[1]: 1>
  %a = Reshape(%x, %shape) : f32[6,4,5]
  %b = Flatten(%a) {axis = 1} : f32[6,20]
  %c = Unsqueeze(%b, %axes) : f32[6,1,20]
  %d = Squeeze(%c, %axes) : f32[6,20]
  %e = Identity(%d)
  const %flat = dense<i64[1]: -1>
  %j = Reshape(%i, %flat)
  return %e, %j
}
}
)");
}

TEST(CpuDataMovement, TransposeFastPathsAndGeneric) {
  expectCpuMatchesReference(R"(
model opset(ai.onnx=13) ir_version=8 {
func @main(%x: f32[2,37,3,19], %y: f32[2,3,67,33], %z: i64[3,4,5], %w: bool[5,7]) -> (%a: f32[2,3,37,19], %b: f32[2,3,33,67], %c: i64[5,4,3], %d: bool[7,5], %e: f32[19,2,3,37]) {
  %a = Transpose(%x) {perm = [0, 2, 1, 3]}
  %b = Transpose(%y) {perm = [0, 1, 3, 2]}
  %c = Transpose(%z)
  %d = Transpose(%w) {perm = [1, 0]}
  %e = Transpose(%x) {perm = [3, 0, 2, 1]}
  return %a, %b, %c, %d, %e
}
}
)");
}

TEST(CpuDataMovement, TransposeLargeOnThreads) {
  testing::CpuCheck check;
  check.threads = 3;
  expectCpuMatchesReference(R"(
model opset(ai.onnx=13) ir_version=8 {
func @main(%x: f32[2,129,12,64]) -> (%a: f32[2,12,129,64], %b: f32[2,129,64,12]) {
  %a = Transpose(%x) {perm = [0, 2, 1, 3]}
  %b = Transpose(%x) {perm = [0, 1, 3, 2]}
  return %a, %b
}
}
)", check);
}

TEST(CpuDataMovement, SliceConstantBounds) {
  expectCpuMatchesReference(R"(
model opset(ai.onnx=13) ir_version=8 {
func @main(%x: f32[9,11,13], %i: i32[7,5]) -> (%a: f32[3,11,10], %b: f32[9,4,13], %c: i32[7,2], %d: f32[9,11,0]) {
  const %s1 = dense<i64[3]: 1, 3, -1>
  const %e1 = dense<i64[3]: 7, 100, -100>
  const %a1 = dense<i64[3]: 0, 2, 1>
  const %t1 = dense<i64[3]: 2, 1, -1>
  %a = Slice(%x, %s1, %e1, %a1, %t1)
  const %s2 = dense<i64[1]: -1>
  const %e2 = dense<i64[1]: 2>
  const %a2 = dense<i64[1]: 1>
  const %t2 = dense<i64[1]: -2>
  %b = Slice(%x, %s2, %e2, %a2, %t2)
  const %s3 = dense<i64[1]: 1>
  const %e3 = dense<i64[1]: 5>
  const %a3 = dense<i64[1]: -1>
  const %t3 = dense<i64[1]: 3>
  %c = Slice(%i, %s3, %e3, %a3, %t3)
  const %s4 = dense<i64[1]: 20>
  const %e4 = dense<i64[1]: 30>
  const %a4 = dense<i64[1]: 2>
  %d = Slice(%x, %s4, %e4, %a4)
  return %a, %b, %c, %d
}
}
)");
}

TEST(CpuDataMovement, SliceAttributeForm) {
  expectCpuMatchesReference(R"(
model opset(ai.onnx=9) ir_version=4 {
func @main(%x: f32[6,10]) -> (%y: f32[4,7]) {
  %y = Slice(%x) {axes = [0, 1], ends = [5, 100], starts = [1, -7]}
  return %y
}
}
)");
}

TEST(CpuDataMovement, SplitAndConcat) {
  expectCpuMatchesReference(R"(
model opset(ai.onnx=13) ir_version=8 {
func @main(%x: f32[3,10,7], %y: f32[3,4,7], %n: i32[2,3], %m: i32[2,5]) -> (%a: f32[3,3,7], %b: f32[3,0,7], %c: f32[3,7,7], %d: f32[3,17,7], %e: i32[2,8], %f: f32[6,10,7]) {
  const %split = dense<i64[3]: 3, 0, 7>
  %a, %b, %c = Split(%x, %split) {axis = 1}
  %d = Concat(%c, %x) {axis = -2}
  %e = Concat(%n, %m) {axis = 1}
  %f = Concat(%x, %x) {axis = 0}
  return %a, %b, %c, %d, %e, %f
}
}
)");
}

TEST(CpuDataMovement, GatherConstantAndRuntimeIndices) {
  expectCpuMatchesReference(R"(
model opset(ai.onnx=13) ir_version=8 {
func @main(%table: f32[11,8], %ids: i64[2,5], %x: f32[3,6,4], %b: bool[4,3]) -> (%a: f32[2,3,8], %r: f32[2,5,8], %s: f32[3,2,4], %t: bool[4,2]) {
  const %const_ids = dense<i64[2,3]: 1, -1, 3, 10, 0, 2>
  %a = Gather(%table, %const_ids) {axis = 0}
  %r = Gather(%table, %ids) {axis = 0}
  const %cols = dense<i32[2]: 5, -6>
  %s = Gather(%x, %cols) {axis = 1}
  const %two = dense<i64[2]: 2, 0>
  %t = Gather(%b, %two) {axis = 1}
  return %a, %r, %s, %t
}
}
)");
}

TEST(CpuDataMovement, GatherConstantIndexOutOfRangeFailsAtCompile) {
  auto model = parseModel(R"(
model opset(ai.onnx=13) ir_version=8 {
func @main(%table: f32[11,8]) -> (%a: f32[2,8]) {
  const %ids = dense<i64[2]: 3, 11>
  %a = Gather(%table, %ids) {axis = 0}
  return %a
}
}
)", "gather.tsl.txt");
  ASSERT_TRUE(model.ok()) << model.diag().str();
  auto plan = compileCpu(std::move(*model), {0, 1});
  ASSERT_FALSE(plan.ok());
  EXPECT_NE(plan.diag().str().find("Gather"), std::string::npos) << plan.diag().str();
  EXPECT_NE(plan.diag().str().find("11"), std::string::npos) << plan.diag().str();
}

TEST(CpuDataMovement, GatherRuntimeIndexOutOfRangeFailsTheRun) {
  auto model = parseModel(R"(
model opset(ai.onnx=13) ir_version=8 {
func @main(%table: f32[11,8], %ids: i64[3]) -> (%a: f32[3,8]) {
  %a = Gather(%table, %ids) {axis = 0}
  return %a
}
}
)", "gather.tsl.txt");
  ASSERT_TRUE(model.ok()) << model.diag().str();
  auto plan = compileCpu(std::move(*model), {0, 2});
  ASSERT_TRUE(plan.ok()) << plan.diag().str();
  EXPECT_TRUE((*plan)->summary().fallbacks.empty());
  Tensor table(DType::Float32, {11, 8});
  for (int64_t i = 0; i < table.numel(); ++i) table.data<float>()[i] = float(i);
  for (const std::vector<int64_t> &bad : {std::vector<int64_t>{0, 11, 1}, std::vector<int64_t>{-12, 0, 0}}) {
    NamedValues feeds;
    feeds.emplace_back("table", RuntimeValue(table));
    feeds.emplace_back("ids", RuntimeValue(Tensor::fromVector<int64_t>({3}, bad)));
    auto result = (*plan)->run(feeds);
    ASSERT_FALSE(result.ok());
    EXPECT_EQ(result.diag().code, ErrorCode::RuntimeError);
    EXPECT_NE(result.diag().str().find("out of range"), std::string::npos) << result.diag().str();
  }
  // A negative index in range counts from the end.
  NamedValues feeds;
  feeds.emplace_back("table", RuntimeValue(table));
  feeds.emplace_back("ids", RuntimeValue(Tensor::fromVector<int64_t>({3}, {-1, 0, 10})));
  auto result = (*plan)->run(feeds);
  ASSERT_TRUE(result.ok()) << result.diag().str();
  const Tensor &a = (*result)[0].second.tensor();
  EXPECT_EQ(a.data<float>()[0], 80.0f);
  EXPECT_EQ(a.data<float>()[8], 0.0f);
  EXPECT_EQ(a.data<float>()[16], 80.0f);
}

TEST(CpuDataMovement, ExpandAndTile) {
  expectCpuMatchesReference(R"(
model opset(ai.onnx=13) ir_version=8 {
func @main(%x: f32[3,1], %v: i64[5], %t: f32[2,3], %b: bool[1,3]) -> (%a: f32[2,3,4], %c: i64[4,5], %d: f32[4,9], %e: bool[2,6]) {
  const %shape = dense<i64[3]: 2, 1, 4>
  %a = Expand(%x, %shape)
  const %shape2 = dense<i64[2]: 4, 1>
  %c = Expand(%v, %shape2)
  const %reps = dense<i64[2]: 2, 3>
  %d = Tile(%t, %reps)
  const %reps2 = dense<i64[2]: 2, 2>
  %e = Tile(%b, %reps2)
  return %a, %c, %d, %e
}
}
)");
}

}  // namespace
}  // namespace tessel::cpu

namespace tessel::cpu {
namespace {

// A shape computed at run time (here by Shape, which runs its reference kernel) still aliases; each
// run checks the shape against the plan.
TEST(CpuDataMovement, ReshapeToAComputedShapeAliasesAndChecks) {
  testing::CpuCheck check;
  check.requireNoFallback = false;
  testing::expectCpuMatchesReference(R"(
model opset(ai.onnx=13) ir_version=8 {
func @main(%x: f32[2,6], %like: f32[3,4]) -> (%y: f32[3,4]) {
  %s = Shape(%like)
  %y = Reshape(%x, %s)
  return %y
}
}
)", check);
}

}  // namespace
}  // namespace tessel::cpu
