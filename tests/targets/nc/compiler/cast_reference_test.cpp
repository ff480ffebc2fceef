// The reference with the device's casts: on a bf16 auto-cast run it agrees with the simulated device
// far more closely than the f32 reference does (only the order of f32 sums differs), it rounds the
// operands of matmuls and PE convolutions and nothing else, and it says when it cannot be exact.
#include <gtest/gtest.h>

#include <random>

#include <fmt/format.h>

#include "ir/parser.h"
#include "targets/nc/compiler/cast_reference.h"
#include "targets/nc/compiler/conv_forms.h"
#include "targets/nc/compiler/executable.h"
#include "targets/nc/compiler/nc_model_check.h"

namespace tessel::nc::compiler {
namespace {

double maxAbsDifference(const Tensor &a, const Tensor &b) {
  double worst = 0;
  for (int64_t i = 0; i < a.numel(); ++i) worst = std::max(worst, std::abs(a.scalarAsDouble(i) - b.scalarAsDouble(i)));
  return worst;
}

int countOps(const Graph &graph, const std::string &op) {
  int n = 0;
  for (const auto &node : graph.nodes()) n += node->opType() == op;
  return n;
}

/// An MLP block and a depthwise convolution: the operands of both matmuls and of the depthwise
/// convolution (diagonal-weight matmuls on the PE) are rounded.
std::string mlpModel() {
  return fmt::format(R"(model opset(ai.onnx=13) ir_version=8 {{
func @main(%x: f32[64,256], %img: f32[1,8,12,12]) -> (%y: f32[64,128], %d: f32[1,8,12,12]) {{
  const %w1 = {}
  const %w2 = {}
  const %dw = {}
  %h = MatMul(%x, %w1)
  %r = Relu(%h)
  %y = MatMul(%r, %w2)
  %d = Conv(%img, %dw) {{group = 8, pads = [1, 1, 1, 1]}}
  return %y, %d
}}
}}
)",
                     denseText({256, 256}, 1, 0.1f), denseText({256, 128}, 2, 0.1f), denseText({8, 1, 3, 3}, 3));
}

TEST(CastReference, MatchesTheDeviceFarCloserThanF32) {
  auto model = parseModel(mlpModel(), "<mlp>");
  ASSERT_TRUE(model.ok()) << model.diag().str();
  auto exe = compileNc(std::move(*model), NcCompileOptions{});
  ASSERT_TRUE(exe.ok()) << exe.diag().str();
  ASSERT_TRUE((*exe)->fallbacks().empty());
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> u(-1, 1);
  NamedValues feeds;
  for (const Value *in : (*exe)->model().graph->inputs()) {
    if (in->hasInitializer()) continue;
    Tensor t(tessel::DType::Float32, *in->type().shape().sizes());
    for (float &v : t.span<float>()) v = u(rng);
    feeds.emplace_back(in->name(), RuntimeValue(std::move(t)));
  }
  auto device = (*exe)->run(feeds);
  ASSERT_TRUE(device.ok()) << device.diag().str();
  auto casted = castReference((*exe)->model(), [&](size_t i) { return (*exe)->nodeOnDevice(i); }, (*exe)->options().lowering);
  ASSERT_TRUE(casted.ok()) << casted.diag().str();
  EXPECT_TRUE(casted->exact) << casted->unmodelled;
  // x, w1, r, w2, img, dw: each PE operand once.
  EXPECT_EQ(casted->roundedValues, 6);
  ASSERT_TRUE(casted->model.has_value());
  EXPECT_EQ(countOps(*casted->model->graph, "Cast"), 12);
  auto same = ReferenceInterpreter(*casted->model).run(feeds);
  auto f32 = ReferenceInterpreter((*exe)->model()).run(feeds);
  ASSERT_TRUE(same.ok() && f32.ok());
  const double toSame = maxAbsDifference(device->outputs[0].second.tensor(), (*same)[0].second.tensor());
  const double toF32 = maxAbsDifference(device->outputs[0].second.tensor(), (*f32)[0].second.tensor());
  EXPECT_GT(toF32, 1e-3);           // bf16 operands move a 256-long dot product this far...
  EXPECT_LT(toSame, 0.02 * toF32);  // ...and the same-cast reference accounts for nearly all of it.
  // The depthwise convolution rounds its operands as the same-cast reference does, so the two agree.
  EXPECT_LT(maxAbsDifference(device->outputs[1].second.tensor(), (*same)[1].second.tensor()), 1e-5);
}

TEST(CastReference, SaysWhatItCannotModel) {
  auto model = parseModel(mlpModel(), "<mlp>");
  ASSERT_TRUE(model.ok());
  LoweringOptions all;
  all.autoCast = AutoCast::All;
  auto everyActivation = castReference(*model, [](size_t) { return true; }, all);
  ASSERT_TRUE(everyActivation.ok());
  EXPECT_FALSE(everyActivation->exact);
  EXPECT_NE(everyActivation->unmodelled.find("--auto-cast all"), std::string::npos);
  LoweringOptions none;
  none.autoCast = AutoCast::None;
  auto f32 = castReference(*model, [](size_t) { return true; }, none);
  ASSERT_TRUE(f32.ok());
  EXPECT_TRUE(f32->exact);
  EXPECT_EQ(f32->roundedValues, 0);
  EXPECT_FALSE(f32->model.has_value());
  // Nodes on the host are not rounded.
  auto onHost = castReference(*model, [](size_t) { return false; }, LoweringOptions{});
  ASSERT_TRUE(onHost.ok());
  EXPECT_EQ(onHost->roundedValues, 0);
  EXPECT_FALSE(onHost->model.has_value());
}

// A depthwise convolution runs on the PE when the casts put convolutions in a PE dtype (diagonal-weight
// matmuls), so its operands are rounded like any PE convolution's, and the same-cast reference
// rounds them too; in f32 (no casts) it stays on the vector engines.
TEST(CastReference, RoundsTheOperandsOfADepthwiseConvolutionOnThePe) {
  const std::string ir = fmt::format(R"(model opset(ai.onnx=13) ir_version=8 {{
func @main(%img: f32[1,48,32,32]) -> (%d: f32[1,48,32,32]) {{
  const %dw = {}
  %d = Conv(%img, %dw) {{group = 48, pads = [1, 1, 1, 1]}}
  return %d
}}
}}
)",
                                     denseText({48, 1, 3, 3}, 5));
  auto model = parseModel(ir, "<depthwise>");
  ASSERT_TRUE(model.ok()) << model.diag().str();
  const Node &conv = *(*model).graph->nodes().front();
  LoweringOptions none;
  none.autoCast = AutoCast::None;
  EXPECT_TRUE(depthwiseOnPe(conv, LoweringOptions{}));
  EXPECT_FALSE(depthwiseOnPe(conv, none));
  auto exe = compileNc(std::move(*model), NcCompileOptions{});
  ASSERT_TRUE(exe.ok()) << exe.diag().str();
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> u(-1, 1);
  Tensor img(tessel::DType::Float32, {1, 48, 32, 32});
  for (float &v : img.span<float>()) v = u(rng);
  auto device = (*exe)->run({{"img", RuntimeValue(img)}});
  ASSERT_TRUE(device.ok()) << device.diag().str();
  auto casted = castReference((*exe)->model(), [&](size_t i) { return (*exe)->nodeOnDevice(i); }, (*exe)->options().lowering);
  ASSERT_TRUE(casted.ok() && casted->model.has_value());
  EXPECT_EQ(casted->roundedValues, 2);  // X and W.
  auto same = ReferenceInterpreter(*casted->model).run({{"img", RuntimeValue(img)}});
  auto f32 = ReferenceInterpreter((*exe)->model()).run({{"img", RuntimeValue(img)}});
  ASSERT_TRUE(same.ok() && f32.ok());
  const double toSame = maxAbsDifference(device->outputs[0].second.tensor(), (*same)[0].second.tensor());
  const double toF32 = maxAbsDifference(device->outputs[0].second.tensor(), (*f32)[0].second.tensor());
  EXPECT_GT(toF32, 1e-3);  // bf16 operands...
  EXPECT_LT(toSame, 1e-5);  // ...exactly modelled: nine products summed in f32.
}

}  // namespace
}  // namespace tessel::nc::compiler
