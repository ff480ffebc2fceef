// Models of one tessel Attention or RotaryEmbedding node on graph inputs, in text IR, for the tests of
// every target that runs them.
#pragma once

#include <cstdint>
#include <string>

#include <fmt/format.h>

namespace tessel::testing {

/// Q [b,h,sq,d], K [b,hkv,sk,d], V [b,hkv,sk,dv]; `mask` is the Mask's shape ("" for none), `attrs`
/// the node's attributes ("" for none); `kvHeads` 0 means h (grouped-query attention otherwise).
inline std::string attentionModel(int64_t b, int64_t h, int64_t sq, int64_t sk, int64_t d, int64_t dv,
                                  const std::string &mask, const std::string &attrs, int64_t kvHeads = 0) {
  const std::string maskInput = mask.empty() ? "" : fmt::format(", %m: f32[{}]", mask);
  return fmt::format(R"(
model opset(ai.onnx=17, tessel=1) ir_version=8 {{
func @main(%q: f32[{0},{1},{2},{4}], %k: f32[{0},{9},{3},{4}], %v: f32[{0},{9},{3},{5}]{6}) -> (%y: f32[{0},{1},{2},{5}]) {{
  %y = tessel.Attention(%q, %k, %v{7}){8}
  return %y
}}
}}
)",
                     b, h, sq, sk, d, dv, maskInput, mask.empty() ? "" : ", %m",
                     attrs.empty() ? "" : " {" + attrs + "}", kvHeads > 0 ? kvHeads : h);
}

/// One tessel RotaryEmbedding of X [x] by Cos and Sin of shape [table], all graph inputs.
inline std::string rotaryEmbeddingModel(const std::string &x, const std::string &table) {
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

}  // namespace tessel::testing
