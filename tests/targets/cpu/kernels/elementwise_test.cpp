// The binary and select loops of every elementwise variant the host can run (others skipped),
// the broadcast layout, and the threaded drivers: against double-precision loops at ragged sizes
// (empty, below, at and above the vector widths), each operand form (vector, scalar either side),
// in place, and broadcasts whose rows start mid-range. Tolerance: exact for Add..Min (one rounding
// of an exact double result), 1e-6 relative for Pow.
#include "targets/cpu/kernels/elementwise.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

namespace tessel::cpu {
namespace {

std::vector<float> randomFloats(int64_t count, uint32_t seed, float lo = -2.0f, float hi = 2.0f) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(size_t(std::max<int64_t>(count, 0)));
  for (float &x : v) x = dist(rng);
  return v;
}

double binaryRef(BinaryOp op, double a, double b) {
  switch (op) {
    case BinaryOp::Add: return a + b;
    case BinaryOp::Sub: return a - b;
    case BinaryOp::Mul: return a * b;
    case BinaryOp::Div: return a / b;
    case BinaryOp::Pow: return std::pow(a, b);
    case BinaryOp::Max: return std::max(a, b);
    case BinaryOp::Min: return std::min(a, b);
  }
  return 0;
}

constexpr BinaryOp kBinaryOps[] = {BinaryOp::Add, BinaryOp::Sub, BinaryOp::Mul, BinaryOp::Div,
                                   BinaryOp::Pow, BinaryOp::Max, BinaryOp::Min};

void expectBinaryClose(BinaryOp op, double want, float got, const std::string &what) {
  const double tolerance = op == BinaryOp::Pow ? 1e-6 * std::fabs(want) : 0.0;
  EXPECT_LE(std::fabs(double(got) - double(float(want))), tolerance) << what << ": got " << got << ", want " << want;
}

TEST(ElementwiseKernels, BinaryOperandForms) {
  for (const ElementwiseKernels *kernels : elementwiseKernelVariants()) {
    if (!hasAll(hostIsa(), kernels->isa)) continue;
    for (BinaryOp op : kBinaryOps) {
      for (int64_t n : {0, 1, 3, 8, 15, 16, 17, 33, 100}) {
        // Positive bases keep Pow real.
        const std::vector<float> a = randomFloats(n + 1, uint32_t(n), 0.1f, 2.0f);
        const std::vector<float> b = randomFloats(n + 1, uint32_t(n) + 99, 0.1f, 2.0f);
        for (int form = 0; form < 3; ++form) {
          const bool aScalar = form == 1, bScalar = form == 2;
          std::vector<float> y(size_t(n) + 1, -7.0f);
          kernels->binary(op, a.data(), aScalar, b.data(), bScalar, y.data(), n);
          for (int64_t i = 0; i < n; ++i) {
            const double want = binaryRef(op, a[aScalar ? 0 : size_t(i)], b[bScalar ? 0 : size_t(i)]);
            expectBinaryClose(op, want, y[size_t(i)],
                              std::string(kernels->name) + " op " + std::to_string(int(op)) + " form " +
                                  std::to_string(form) + " n " + std::to_string(n));
          }
          EXPECT_EQ(y[size_t(n)], -7.0f) << kernels->name << " wrote past n";
        }
      }
    }
  }
}

TEST(ElementwiseKernels, BinaryInPlaceAndNaN) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  for (const ElementwiseKernels *kernels : elementwiseKernelVariants()) {
    if (!hasAll(hostIsa(), kernels->isa)) continue;
    std::vector<float> a = randomFloats(37, 1), b = randomFloats(37, 2);
    const std::vector<float> a0 = a;
    kernels->binary(BinaryOp::Mul, a.data(), false, b.data(), false, a.data(), 37);
    for (size_t i = 0; i < a.size(); ++i) EXPECT_EQ(a[i], a0[i] * b[i]) << kernels->name;
    const float u[] = {nan, 1.0f, 2.0f}, v[] = {0.0f, nan, 1.0f};
    float y[3];
    kernels->binary(BinaryOp::Max, u, false, v, false, y, 3);
    EXPECT_TRUE(std::isnan(y[0]) && std::isnan(y[1])) << kernels->name;
    EXPECT_EQ(y[2], 2.0f);
    kernels->binary(BinaryOp::Min, u, false, v, false, y, 3);
    EXPECT_TRUE(std::isnan(y[0]) && std::isnan(y[1])) << kernels->name;
    EXPECT_EQ(y[2], 1.0f);
  }
}

TEST(ElementwiseKernels, Select) {
  for (const ElementwiseKernels *kernels : elementwiseKernelVariants()) {
    if (!hasAll(hostIsa(), kernels->isa)) continue;
    const int64_t n = 45;
    std::vector<float> c(n), a = randomFloats(n, 3), b = randomFloats(n, 4), y(n);
    for (int64_t i = 0; i < n; ++i) c[size_t(i)] = i % 3 == 0 ? 1.0f : 0.0f;
    kernels->select(c.data(), a.data(), b.data(), y.data(), n);
    for (int64_t i = 0; i < n; ++i) EXPECT_EQ(y[size_t(i)], i % 3 == 0 ? a[size_t(i)] : b[size_t(i)]) << kernels->name;
  }
}

TEST(BroadcastLayout, MergesDimsIntoRows) {
  auto same = planBroadcast({{2, 3, 4}, {2, 3, 4}}, {2, 3, 4});
  ASSERT_TRUE(same.ok());
  EXPECT_EQ(same->rows, 1);
  EXPECT_EQ(same->inner, 24);

  auto trailing = planBroadcast({{2, 5, 768}, {768}}, {2, 5, 768});
  ASSERT_TRUE(trailing.ok());
  EXPECT_EQ(trailing->rows, 10);
  EXPECT_EQ(trailing->inner, 768);
  EXPECT_TRUE(trailing->innerContiguous[0] && trailing->innerContiguous[1]);
  EXPECT_EQ(trailing->rowOffset(0, 3), 3 * 768);
  EXPECT_EQ(trailing->rowOffset(1, 3), 0);

  auto channel = planBroadcast({{2, 6, 5, 7}, {1, 6, 1, 1}}, {2, 6, 5, 7});
  ASSERT_TRUE(channel.ok());
  EXPECT_EQ(channel->rows, 12);
  EXPECT_EQ(channel->inner, 35);
  EXPECT_FALSE(channel->innerContiguous[1]);
  EXPECT_EQ(channel->rowOffset(1, 7), 1);  // Row 7 is batch 1, channel 1.

  auto scalarOut = planBroadcast({{}, {1}}, {1});
  ASSERT_TRUE(scalarOut.ok());
  EXPECT_EQ(scalarOut->numel(), 1);

  auto empty = planBroadcast({{0, 3}, {3}}, {0, 3});
  ASSERT_TRUE(empty.ok());
  EXPECT_EQ(empty->numel(), 0);

  EXPECT_FALSE(planBroadcast({{2, 3}, {4}}, {2, 3}).ok());
  EXPECT_FALSE(planBroadcast({{1, 2, 3}}, {2, 3}).ok());
}

/// Output-sized double reference of a two-input broadcast.
std::vector<double> broadcastRef(BinaryOp op, const std::vector<float> &a, const std::vector<int64_t> &aSizes,
                                 const std::vector<float> &b, const std::vector<int64_t> &bSizes,
                                 const std::vector<int64_t> &outSizes) {
  int64_t numel = 1;
  for (int64_t s : outSizes) numel *= s;
  std::vector<double> out(static_cast<size_t>(numel));
  const size_t rank = outSizes.size();
  for (int64_t flat = 0; flat < numel; ++flat) {
    int64_t rest = flat, ai = 0, bi = 0, aStride = 1, bStride = 1;
    for (size_t d = rank; d-- > 0;) {
      const int64_t index = rest % outSizes[d];
      rest /= outSizes[d];
      const size_t ad = d + aSizes.size() - rank, bd = d + bSizes.size() - rank;
      if (d + aSizes.size() >= rank) {
        if (aSizes[ad] != 1) ai += index * aStride;
        aStride *= aSizes[ad];
      }
      if (d + bSizes.size() >= rank) {
        if (bSizes[bd] != 1) bi += index * bStride;
        bStride *= bSizes[bd];
      }
    }
    out[size_t(flat)] = binaryRef(op, a[size_t(ai)], b[size_t(bi)]);
  }
  return out;
}

TEST(ElementwiseKernels, ThreadedBroadcast) {
  struct Case {
    std::vector<int64_t> a, b, out;
  };
  const Case cases[] = {
      {{3, 20001}, {20001}, {3, 20001}},  // Ranges start mid-row.
      {{2, 6, 5, 7}, {1, 6, 1, 1}, {2, 6, 5, 7}}, {{5, 1}, {1, 9}, {5, 9}}, {{1}, {40000}, {40000}},
      {{300, 1, 130}, {7, 130}, {300, 7, 130}},
  };
  ThreadPool pool(3);
  for (const Case &c : cases) {
    auto layout = planBroadcast({c.a, c.b}, c.out);
    ASSERT_TRUE(layout.ok());
    int64_t na = 1, nb = 1;
    for (int64_t s : c.a) na *= s;
    for (int64_t s : c.b) nb *= s;
    const std::vector<float> a = randomFloats(na, 5), b = randomFloats(nb, 6);
    const std::vector<double> want = broadcastRef(BinaryOp::Sub, a, c.a, b, c.b, c.out);
    std::vector<float> y(want.size());
    runBinary(elementwiseKernels(), BinaryOp::Sub, *layout, a.data(), b.data(), y.data(), &pool);
    for (size_t i = 0; i < want.size(); ++i) ASSERT_EQ(y[i], float(want[i])) << "element " << i;
  }
}

TEST(ElementwiseKernels, ThreadedUnaryInPlace) {
  ThreadPool pool(2);
  std::vector<float> x = randomFloats(100003, 9);
  const std::vector<float> x0 = x;
  runUnary(elementwiseKernels(), UnaryOp::Relu, {}, x.data(), x.data(), int64_t(x.size()), &pool);
  for (size_t i = 0; i < x.size(); ++i) ASSERT_EQ(x[i], std::max(x0[i], 0.0f));
}

}  // namespace
}  // namespace tessel::cpu
