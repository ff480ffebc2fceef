// The reduction loops of every variant the host can run (others skipped) against double
// precision: rows of ragged lengths including 0 (the identities), column accumulation at ragged
// widths, NaN propagation for Max and Min, and the threaded driver over [outer, length, inner]
// in both the row (inner == 1) and column forms, including columns wider than one block.
// Tolerance: exact for Max and Min; n * 2^-24 of the sum of |x| for Sum and Mean.
#include "targets/cpu/kernels/reduction.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <vector>

namespace tessel::cpu {
namespace {

std::vector<float> randomFloats(int64_t count, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> v(size_t(std::max<int64_t>(count, 0)));
  for (float &x : v) x = dist(rng);
  return v;
}

constexpr ReduceKind kKinds[] = {ReduceKind::Sum, ReduceKind::Mean, ReduceKind::Max, ReduceKind::Min};

/// Reduces x viewed as [outer, length, inner] over the middle in double; also the bound per output.
void reduceRef(ReduceKind kind, const std::vector<float> &x, int64_t outer, int64_t length, int64_t inner,
               std::vector<double> *want, std::vector<double> *bound) {
  want->assign(size_t(outer * inner), 0.0);
  bound->assign(size_t(outer * inner), 0.0);
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t j = 0; j < inner; ++j) {
      double acc = kind == ReduceKind::Max ? -INFINITY : kind == ReduceKind::Min ? INFINITY : 0.0, magnitude = 0;
      for (int64_t k = 0; k < length; ++k) {
        const double v = x[size_t((o * length + k) * inner + j)];
        magnitude += std::fabs(v);
        if (kind == ReduceKind::Max)
          acc = std::max(acc, v);
        else if (kind == ReduceKind::Min)
          acc = std::min(acc, v);
        else
          acc += v;
      }
      if (kind == ReduceKind::Mean) acc /= double(length), magnitude /= double(length);
      const size_t i = size_t(o * inner + j);
      (*want)[i] = acc;
      (*bound)[i] = kind == ReduceKind::Max || kind == ReduceKind::Min ? 0.0 : double(length) * 0x1p-24 * magnitude;
    }
  }
}

TEST(ReductionKernels, Rows) {
  for (const ReductionKernels *kernels : reductionKernelVariants()) {
    if (!hasAll(hostIsa(), kernels->isa)) continue;
    for (ReduceKind kind : kKinds) {
      for (int64_t n : {0, 1, 7, 15, 16, 17, 40, 768, 1001}) {
        const std::vector<float> x = randomFloats(n, uint32_t(n));
        std::vector<double> want, bound;
        reduceRef(kind == ReduceKind::Mean ? ReduceKind::Sum : kind, x, 1, n, 1, &want, &bound);
        const float got = kernels->row(kind, x.data(), n);
        if (std::isinf(want[0])) {  // The identity of an empty Max or Min.
          EXPECT_EQ(double(got), want[0]) << kernels->name;
          continue;
        }
        EXPECT_LE(std::fabs(double(got) - want[0]), bound[0]) << kernels->name << " kind " << int(kind) << " n " << n;
      }
    }
  }
}

TEST(ReductionKernels, MaxAndMinPropagateNaN) {
  for (const ReductionKernels *kernels : reductionKernelVariants()) {
    if (!hasAll(hostIsa(), kernels->isa)) continue;
    std::vector<float> x = randomFloats(37, 1);
    x[20] = std::numeric_limits<float>::quiet_NaN();
    EXPECT_TRUE(std::isnan(kernels->row(ReduceKind::Max, x.data(), 37))) << kernels->name;
    EXPECT_TRUE(std::isnan(kernels->row(ReduceKind::Min, x.data(), 37))) << kernels->name;
    std::vector<float> acc = {0.0f, std::numeric_limits<float>::quiet_NaN(), 1.0f};
    const float row[] = {std::numeric_limits<float>::quiet_NaN(), 5.0f, 2.0f};
    kernels->accumulate(ReduceKind::Max, row, acc.data(), 3);
    EXPECT_TRUE(std::isnan(acc[0]) && std::isnan(acc[1])) << kernels->name;
    EXPECT_EQ(acc[2], 2.0f);
  }
}

TEST(ReductionKernels, ThreadedDriver) {
  ThreadPool pool(2);
  struct Shape {
    int64_t outer, length, inner;
  };
  for (const Shape &s : {Shape{128, 768, 1}, Shape{1, 50, 2500}, Shape{3, 7, 1030}, Shape{5, 0, 3}, Shape{4, 0, 1},
                         Shape{2, 1, 17}, Shape{1000, 3, 1}}) {
    for (ReduceKind kind : kKinds) {
      const std::vector<float> x = randomFloats(s.outer * s.length * s.inner, uint32_t(s.length + s.inner));
      std::vector<double> want, bound;
      reduceRef(kind, x, s.outer, s.length, s.inner, &want, &bound);
      std::vector<float> y(want.size(), -7.0f);
      runReduce(reductionKernels(), kind, x.data(), y.data(), s.outer, s.length, s.inner, &pool);
      for (size_t i = 0; i < want.size(); ++i) {
        if (std::isnan(want[i])) {
          EXPECT_TRUE(std::isnan(y[i])) << "empty mean";
          continue;
        }
        if (std::isinf(want[i])) {
          EXPECT_EQ(double(y[i]), want[i]);
          continue;
        }
        ASSERT_LE(std::fabs(double(y[i]) - want[i]), bound[i]) << "kind " << int(kind) << " element " << i;
      }
    }
  }
}

}  // namespace
}  // namespace tessel::cpu
