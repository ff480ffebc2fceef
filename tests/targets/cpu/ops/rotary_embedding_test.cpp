// tessel RotaryEmbedding on the cpu target against its reference kernel: tables of [1,1,S,D] (Llama's
// export, broadcast over batch and heads), [S,D], one per batch and head, and a decode step of one
// token; and the exported pattern (Slices, Neg, Concat, Muls, Add) at -O3, recognized and run by the
// kernel, against the ONNX ops' reference. And tessel KvCacheUpdate (a KV cache written at a position
// read at run time), on a graph input and in place on an intermediate.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "../cpu_test_util.h"
#include "common/attention_model.h"

namespace tessel::cpu {
namespace {

using testing::CpuCheck;
using testing::expectCpuMatchesReference;
using tessel::testing::rotaryEmbeddingModel;

TEST(CpuRotaryEmbedding, MatchesReference) {
  expectCpuMatchesReference(rotaryEmbeddingModel("2,8,5,32", "1,1,5,32"));
  expectCpuMatchesReference(rotaryEmbeddingModel("2,8,5,32", "5,32"));
  expectCpuMatchesReference(rotaryEmbeddingModel("2,3,7,16", "2,3,7,16"));
  expectCpuMatchesReference(rotaryEmbeddingModel("1,32,1,64", "1,1,1,64"));  // A 1B-class decode step.
  expectCpuMatchesReference(rotaryEmbeddingModel("3,6", "6"));
}

TEST(CpuRotaryEmbedding, TablesBroadcastAlongDepthRunTheReference) {
  CpuCheck check;
  check.requireNoFallback = false;
  expectCpuMatchesReference(rotaryEmbeddingModel("2,4,3,8", "1,1,3,1"), check);
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
  EXPECT_EQ(testing::kernelsRun(kExportedRotary, 3), std::vector<std::string>{"RotaryEmbedding rotary_embedding rows"});
}


// The cache as fed (a graph input, copied) and as an intermediate the update may overwrite in place;
// the positions (seeded, 0..2) vary with the seed.
constexpr const char *kCacheUpdates = R"(
model opset(ai.onnx=17, tessel=1) ir_version=8 {
func @main(%past: f32[1,2,8,4], %new: f32[1,2,3,4], %at: i64[1]) -> (%fed: f32[1,2,8,4], %inner: f32[1,2,8,4]) {
  %fed = tessel.KvCacheUpdate(%past, %new, %at)
  %doubled = Add(%past, %past)
  %inner = tessel.KvCacheUpdate(%doubled, %new, %at)
  return %fed, %inner
}
}
)";

TEST(CpuKvCacheUpdate, MatchesReference) {
  for (uint32_t seed : {1u, 2u, 3u, 4u}) {
    CpuCheck check;
    check.seed = seed;
    expectCpuMatchesReference(kCacheUpdates, check);
  }
}

}  // namespace
}  // namespace tessel::cpu
