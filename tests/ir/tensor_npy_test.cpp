// Tensors: sizes checks against overflow, views, and .npy round trips for every NumPy dtype.
#include <gtest/gtest.h>

#include "ir/npy.h"
#include "ir/tensor.h"

namespace tessel {
namespace {

TEST(Tensor, CheckedNumBytesRejectsNegativeAndOverflow) {
  EXPECT_EQ(*checkedNumBytes(DType::Float32, {2, 3}, 1 << 20), 24u);
  EXPECT_FALSE(checkedNumBytes(DType::Float32, {-1, 3}, 1 << 20).ok());
  EXPECT_FALSE(checkedNumBytes(DType::Float64, {int64_t{1} << 40, int64_t{1} << 40}, SIZE_MAX).ok());
  EXPECT_FALSE(checkedNumBytes(DType::Float32, {1 << 20}, 1 << 20).ok());
}

TEST(Tensor, ReshapeSharesStorageAndCloneDoesNot) {
  Tensor t = Tensor::fromVector<float>({2, 2}, {1, 2, 3, 4});
  Tensor r = t.reshaped({4});
  Tensor c = t.clone();
  t.data<float>()[0] = 9;
  EXPECT_EQ(r.data<float>()[0], 9);
  EXPECT_EQ(c.data<float>()[0], 1);
  EXPECT_EQ(t.toInt64Vector(), (std::vector<int64_t>{9, 2, 3, 4}));
}

template <class T>
void expectNpyRoundTrip(std::vector<int64_t> sizes, std::vector<T> values) {
  Tensor t = Tensor::fromVector<T>(sizes, values);
  auto bytes = serializeNpy(t);
  ASSERT_TRUE(bytes.ok());
  auto back = parseNpy(*bytes, "mem.npy");
  ASSERT_TRUE(back.ok()) << back.diag().str();
  EXPECT_EQ(back->dtype(), t.dtype());
  EXPECT_EQ(back->sizes(), sizes);
  for (size_t i = 0; i < values.size(); ++i) EXPECT_EQ(back->data<T>()[i], values[i]);
}

TEST(Npy, RoundTripsNumpyDtypes) {
  expectNpyRoundTrip<float>({2, 2}, {1.5f, -2, 3, 4});
  expectNpyRoundTrip<double>({3}, {1e300, -0.0, 7});
  expectNpyRoundTrip<int64_t>({}, {42});
  expectNpyRoundTrip<uint8_t>({1, 3}, {0, 128, 255});
  expectNpyRoundTrip<bool>({2}, {true, false});
  expectNpyRoundTrip<int32_t>({0, 3}, {});
}

TEST(Npy, RejectsTruncatedAndForeignFiles) {
  auto bytes = serializeNpy(Tensor::fromVector<float>({4}, {1, 2, 3, 4}));
  ASSERT_TRUE(bytes.ok());
  auto truncated = parseNpy(bytes->substr(0, bytes->size() - 3), "t.npy");
  ASSERT_FALSE(truncated.ok());
  EXPECT_NE(truncated.diag().str().find("t.npy: .npy data is truncated"), std::string::npos) << truncated.diag().str();
  EXPECT_FALSE(parseNpy("hello world", "x.npy").ok());
}

TEST(Npy, WidensBFloat16ToFloat) {
  Tensor t(DType::BFloat16, {2});
  t.data<BFloat16>()[0] = BFloat16(1.5f);
  t.data<BFloat16>()[1] = BFloat16(-3.0f);
  auto back = parseNpy(*serializeNpy(t), "bf.npy");
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->dtype(), DType::Float32);
  EXPECT_EQ(back->data<float>()[1], -3.0f);
}

}  // namespace
}  // namespace tessel
