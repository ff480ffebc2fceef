// The quantization arithmetic against values worked out by hand from ORT's formulas.
#include <gtest/gtest.h>

#include "quantize/quant_params.h"

namespace tessel {
namespace {

TEST(ActivationParams, AsymmetricWidensTheRangeToZero) {
  QuantParams p = activationParams({-1.0f, 3.0f}, /*symmetric=*/false);
  EXPECT_EQ(p.dtype, DType::UInt8);
  EXPECT_FLOAT_EQ(p.scales[0], 4.0f / 255);
  EXPECT_EQ(p.zeroPoints[0], 64);  // round(1 / (4 / 255)) = round(63.75).
  // A range above 0 starts at 0, so its zero point is 0.
  p = activationParams({2.0f, 5.1f}, /*symmetric=*/false);
  EXPECT_FLOAT_EQ(p.scales[0], 5.1f / 255);
  EXPECT_EQ(p.zeroPoints[0], 0);
  // Below 0 entirely: the zero point is the top of the range.
  p = activationParams({-2.0f, -1.0f}, /*symmetric=*/false);
  EXPECT_EQ(p.zeroPoints[0], 255);
}

TEST(ActivationParams, SymmetricIsInt8AroundZero) {
  QuantParams p = activationParams({-1.0f, 2.54f}, /*symmetric=*/true);
  EXPECT_EQ(p.dtype, DType::Int8);
  EXPECT_FLOAT_EQ(p.scales[0], 0.02f);
  EXPECT_EQ(p.zeroPoints[0], 0);
}

TEST(ActivationParams, AnEmptyRangeGetsScaleOne) {
  QuantParams p = activationParams({0.0f, 0.0f}, /*symmetric=*/false);
  EXPECT_EQ(p.scales[0], 1.0f);
  EXPECT_EQ(p.zeroPoints[0], 0);
}

TEST(QuantizeWeight, PerChannelAlongEachAxis) {
  // [2, 3]: rows 0 and 1, columns 0..2.
  Tensor w = Tensor::fromVector<float>({2, 3}, {1.27f, -0.5f, 0.0f, 0.1f, 2.54f, -0.3f});
  QuantizedConstant rows = quantizeWeight(w, 0);
  ASSERT_EQ(rows.params.scales.size(), 2u);
  EXPECT_FLOAT_EQ(rows.params.scales[0], 0.01f);
  EXPECT_FLOAT_EQ(rows.params.scales[1], 0.02f);
  EXPECT_EQ(rows.params.axis, 0);
  EXPECT_EQ(std::vector<int8_t>(rows.values.data<int8_t>(), rows.values.data<int8_t>() + 6),
            (std::vector<int8_t>{127, -50, 0, 5, 127, -15}));
  QuantizedConstant columns = quantizeWeight(w, 1);
  ASSERT_EQ(columns.params.scales.size(), 3u);
  EXPECT_FLOAT_EQ(columns.params.scales[0], 1.27f / 127);
  EXPECT_FLOAT_EQ(columns.params.scales[1], 2.54f / 127);
  EXPECT_FLOAT_EQ(columns.params.scales[2], 0.3f / 127);
  EXPECT_EQ(columns.values.data<int8_t>()[2], 0);
  EXPECT_EQ(columns.values.data<int8_t>()[5], -127);
  QuantizedConstant whole = quantizeWeight(w, -1);
  ASSERT_EQ(whole.params.scales.size(), 1u);
  EXPECT_FLOAT_EQ(whole.params.scales[0], 0.02f);
  EXPECT_FALSE(whole.params.perAxis());
}

TEST(QuantizeBias, Int32AtTheProductScale) {
  Tensor b = Tensor::fromVector<float>({2}, {1.0f, -0.25f});
  QuantizedConstant q = quantizeBias(b, 0.5f, {0.01f, 0.002f});
  EXPECT_EQ(q.params.dtype, DType::Int32);
  EXPECT_EQ(q.params.axis, 0);
  EXPECT_FLOAT_EQ(q.params.scales[0], 0.005f);
  EXPECT_FLOAT_EQ(q.params.scales[1], 0.001f);
  EXPECT_EQ(q.values.data<int32_t>()[0], 200);
  EXPECT_EQ(q.values.data<int32_t>()[1], -250);
  QuantizedConstant whole = quantizeBias(b, 0.5f, {0.01f});
  EXPECT_FALSE(whole.params.perAxis());
  EXPECT_EQ(whole.values.data<int32_t>()[1], -50);
}

}  // namespace
}  // namespace tessel
