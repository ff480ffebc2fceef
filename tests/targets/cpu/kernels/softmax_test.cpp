// The softmax loops of every variant the host can run (others skipped) against double precision:
// rows of ragged lengths (empty to past several vector widths), column blocks of every width up to
// kSoftmaxColumnBlock, large and equal inputs (the max shift), in place, and the threaded driver
// over rows and over column blocks. Tolerance: 1e-6 relative plus 1e-7 absolute for softmax
// (exp's error, a sum of positives, one division), 1e-6 absolute for log-softmax.
#include "targets/cpu/kernels/softmax.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

namespace tessel::cpu {
namespace {

std::vector<float> randomFloats(int64_t count, uint32_t seed, float scale = 4.0f) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-scale, scale);
  std::vector<float> v(size_t(std::max<int64_t>(count, 0)));
  for (float &x : v) x = dist(rng);
  return v;
}

/// Double softmax of x viewed as [outer, length, inner] over the middle axis.
std::vector<double> softmaxRef(const std::vector<float> &x, int64_t outer, int64_t length, int64_t inner, bool log) {
  std::vector<double> y(x.size());
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t j = 0; j < inner; ++j) {
      auto at = [&](int64_t k) { return size_t((o * length + k) * inner + j); };
      double max = -INFINITY, sum = 0;
      for (int64_t k = 0; k < length; ++k) max = std::max(max, double(x[at(k)]));
      for (int64_t k = 0; k < length; ++k) sum += std::exp(double(x[at(k)]) - max);
      for (int64_t k = 0; k < length; ++k) {
        const double v = double(x[at(k)]) - max;
        y[at(k)] = log ? v - std::log(sum) : std::exp(v) / sum;
      }
    }
  }
  return y;
}

void expectClose(const std::vector<double> &want, const std::vector<float> &got, bool log, const std::string &what) {
  ASSERT_EQ(want.size(), got.size());
  int failures = 0;
  for (size_t i = 0; i < want.size() && failures < 5; ++i) {
    const double tolerance = log ? 1e-6 * (1.0 + std::fabs(want[i])) : 1e-6 * std::fabs(want[i]) + 1e-7;
    if (std::fabs(double(got[i]) - want[i]) <= tolerance) continue;
    ++failures;
    ADD_FAILURE() << what << " element " << i << ": got " << got[i] << ", want " << want[i];
  }
}

TEST(SoftmaxKernels, Rows) {
  for (const SoftmaxKernels *kernels : softmaxKernelVariants()) {
    if (!hasAll(hostIsa(), kernels->isa)) continue;
    for (bool log : {false, true}) {
      for (int64_t n : {1, 2, 15, 16, 17, 31, 64, 100, 1000}) {
        const std::vector<float> x = randomFloats(n, uint32_t(n));
        std::vector<float> y(size_t(n) + 1, -7.0f);
        kernels->row(x.data(), y.data(), n, log);
        y.pop_back();
        expectClose(softmaxRef(x, 1, n, 1, log), y, log, std::string(kernels->name) + " n=" + std::to_string(n));
      }
      // Large values must not overflow; equal values give a uniform row; in place.
      std::vector<float> x = {1000.0f, 999.0f, 1000.0f, -1000.0f, 998.5f};
      const std::vector<double> want = softmaxRef(x, 1, 5, 1, log);
      kernels->row(x.data(), x.data(), 5, log);
      expectClose(want, x, log, std::string(kernels->name) + " large in place");
    }
  }
}

TEST(SoftmaxKernels, ColumnBlocks) {
  for (const SoftmaxKernels *kernels : softmaxKernelVariants()) {
    if (!hasAll(hostIsa(), kernels->isa)) continue;
    for (bool log : {false, true}) {
      for (int64_t width : {int64_t{1}, int64_t{7}, int64_t{16}, int64_t{33}, kSoftmaxColumnBlock}) {
        const int64_t length = 13, stride = width + 5;
        const std::vector<float> x = randomFloats(length * stride, uint32_t(width));
        std::vector<float> y(x.size(), -7.0f);
        kernels->columns(x.data(), y.data(), length, stride, width, log);
        const std::vector<double> full = softmaxRef(x, 1, length, stride, log);
        for (int64_t k = 0; k < length; ++k) {
          for (int64_t j = 0; j < stride; ++j) {
            const size_t i = size_t(k * stride + j);
            if (j >= width) {
              EXPECT_EQ(y[i], -7.0f) << "column past width written";
              continue;
            }
            const double tolerance = log ? 1e-6 * (1.0 + std::fabs(full[i])) : 1e-6 * full[i] + 1e-7;
            EXPECT_NEAR(y[i], full[i], tolerance) << kernels->name << " width " << width;
          }
        }
      }
    }
  }
}

TEST(SoftmaxKernels, ThreadedDriver) {
  ThreadPool pool(2);
  struct Shape {
    int64_t outer, length, inner;
  };
  for (const Shape &s : {Shape{300, 77, 1}, Shape{3, 9, 200}, Shape{2, 1, 5}, Shape{5, 130, 1}}) {
    for (bool log : {false, true}) {
      const std::vector<float> x = randomFloats(s.outer * s.length * s.inner, uint32_t(s.outer + s.inner));
      std::vector<float> y(x.size());
      runSoftmax(softmaxKernels(), x.data(), y.data(), s.outer, s.length, s.inner, log, &pool);
      expectClose(softmaxRef(x, s.outer, s.length, s.inner, log), y, log, "threaded");
    }
  }
}

}  // namespace
}  // namespace tessel::cpu
