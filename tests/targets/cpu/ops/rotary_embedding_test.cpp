// tessel RotaryEmbedding on the cpu target against its reference kernel: tables of [1,1,S,D] (Llama's
// export, broadcast over batch and heads), [S,D], one per batch and head, a decode step of one token,
// and in place; and the exported pattern (Slices, Neg, Concat, Muls, Add) at -O3, recognized and run
// by the kernel, against the ONNX ops' reference.
#include <gtest/gtest.h>

#include <string>

#include <fmt/format.h>

#include "ir/parser.h"
#include "targets/cpu/executable.h"

#include "../cpu_test_util.h"

namespace tessel::cpu {
namespace {

using testing::CpuCheck;
using testing::expectCpuMatchesReference;

/// X [x] embedded by Cos and Sin of shape [table].
std::string rotaryModel(const std::string &x, const std::string &table) {
  return fmt::format(R"(
model opset(ai.onnx=17, tessel=1) ir_version=8 {{
func @main(%x: f32[{0}], %c: f32[{1}], %s: f32[{1}]) -> (%y: f32[{0}]) {{
  %y = tessel.RotaryEmbedding(%x, %c, %s)
  return %y
}}
}}
)",
                     x, table);
}

TEST(CpuRotaryEmbedding, MatchesReference) {
  expectCpuMatchesReference(rotaryModel("2,8,5,32", "1,1,5,32"));
  expectCpuMatchesReference(rotaryModel("2,8,5,32", "5,32"));
  expectCpuMatchesReference(rotaryModel("2,3,7,16", "2,3,7,16"));
  expectCpuMatchesReference(rotaryModel("1,32,1,64", "1,1,1,64"));  // A 1B-class decode step.
  expectCpuMatchesReference(rotaryModel("3,6", "6"));
}

TEST(CpuRotaryEmbedding, TablesBroadcastAlongDepthRunTheReference) {
  CpuCheck check;
  check.requireNoFallback = false;
  expectCpuMatchesReference(rotaryModel("2,4,3,8", "1,1,3,1"), check);
}

// Llama's export of q = q * cos + rotate_half(q) * sin, with D = 16.
constexpr const char *kExportedRotary = R"(
model opset(ai.onnx=17) ir_version=8 {
func @main(%q: f32[1,4,3,16], %cos: f32[1,1,3,16], %sin: f32[1,1,3,16]) -> (%y: f32[1,4,3,16]) {
  const %zero = dense<i64[1]: 0>
  const %half = dense<i64[1]: 8>
  const %end = dense<i64[1]: 9223372036854775807>
  const %last = dense<i64[1]: 3>
  const %one = dense<i64[1]: 1>
  %x1 = Slice(%q, %zero, %half, %last, %one)
  %x2 = Slice(%q, %half, %end, %last, %one)
  %nx2 = Neg(%x2)
  %rot = Concat(%nx2, %x1) {axis = -1}
  %qc = Mul(%q, %cos)
  %rs = Mul(%rot, %sin)
  %y = Add(%qc, %rs)
  return %y
}
}
)";

TEST(CpuRotaryEmbedding, ExportedPatternRunsTheKernel) {
  CpuCheck check;
  check.optLevel = 3;
  expectCpuMatchesReference(kExportedRotary, check);

  auto model = parseModel(kExportedRotary, "rotary.tsl.txt");
  ASSERT_TRUE(model.ok()) << model.diag().str();
  auto plan = compileCpu(std::move(*model), {3, 2});
  ASSERT_TRUE(plan.ok()) << plan.diag().str();
  (*plan)->setProfiling(true);
  auto feeds = testing::randomFeeds((*plan)->model(), 1);
  ASSERT_TRUE((*plan)->run(feeds).ok());
  ASSERT_EQ((*plan)->profile().size(), 1u);
  EXPECT_EQ((*plan)->profile()[0].kernel, "rotary_embedding rows");
}

}  // namespace
}  // namespace tessel::cpu
