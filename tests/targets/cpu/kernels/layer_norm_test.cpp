// The layer-norm row loop of every variant the host can run (others skipped) against a two-pass
// double-precision reference: ragged row lengths (1 to past several vector widths), with and
// without bias, a large common offset (which a one-pass variance would cancel away), in place,
// and the threaded driver; the RMS-norm row loop the same way. Tolerance: 2e-5 relative to the
// output's magnitude plus 1e-6: float sums over n <= 4096 elements with 16 partial sums.
#include "targets/cpu/kernels/layer_norm.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

namespace tessel::cpu {
namespace {

std::vector<float> randomFloats(int64_t count, uint32_t seed, float offset = 0.0f) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> v(size_t(std::max<int64_t>(count, 0)));
  for (float &x : v) x = offset + dist(rng);
  return v;
}

std::vector<double> layerNormRef(const std::vector<float> &x, const std::vector<float> &scale,
                                 const std::vector<float> *bias, int64_t rows, int64_t n, double epsilon) {
  std::vector<double> y(x.size());
  for (int64_t r = 0; r < rows; ++r) {
    double mean = 0, variance = 0;
    for (int64_t i = 0; i < n; ++i) mean += x[size_t(r * n + i)];
    mean /= double(n);
    for (int64_t i = 0; i < n; ++i) variance += std::pow(x[size_t(r * n + i)] - mean, 2);
    variance /= double(n);
    const double inverse = 1.0 / std::sqrt(variance + epsilon);
    for (int64_t i = 0; i < n; ++i) {
      y[size_t(r * n + i)] =
          (x[size_t(r * n + i)] - mean) * inverse * scale[size_t(i)] + (bias ? (*bias)[size_t(i)] : 0.0);
    }
  }
  return y;
}

void expectClose(const std::vector<double> &want, const std::vector<float> &got, const std::string &what) {
  int failures = 0;
  for (size_t i = 0; i < want.size() && failures < 5; ++i) {
    if (std::fabs(double(got[i]) - want[i]) <= 2e-5 * std::fabs(want[i]) + 1e-6) continue;
    ++failures;
    ADD_FAILURE() << what << " element " << i << ": got " << got[i] << ", want " << want[i];
  }
}

TEST(LayerNormKernels, Rows) {
  for (const LayerNormKernels *kernels : layerNormKernelVariants()) {
    if (!hasAll(hostIsa(), kernels->isa)) continue;
    for (int64_t n : {1, 2, 15, 16, 17, 33, 768, 1001, 4096}) {
      for (bool withBias : {false, true}) {
        for (float offset : {0.0f, 1000.0f}) {
          const std::vector<float> x = randomFloats(n, uint32_t(n), offset);
          const std::vector<float> scale = randomFloats(n, 11), bias = randomFloats(n, 12);
          std::vector<float> y(size_t(n) + 1, -7.0f);
          kernels->row(x.data(), scale.data(), withBias ? bias.data() : nullptr, y.data(), n, 1e-5f);
          EXPECT_EQ(y.back(), -7.0f) << "wrote past n";
          y.pop_back();
          expectClose(layerNormRef(x, scale, withBias ? &bias : nullptr, 1, n, 1e-5), y,
                      std::string(kernels->name) + " n=" + std::to_string(n) + " offset=" + std::to_string(offset));
        }
      }
    }
  }
}

std::vector<double> rmsNormRef(const std::vector<float> &x, const std::vector<float> &scale, int64_t rows, int64_t n,
                               double epsilon) {
  std::vector<double> y(x.size());
  for (int64_t r = 0; r < rows; ++r) {
    double sumSquares = 0;
    for (int64_t i = 0; i < n; ++i) sumSquares += std::pow(double(x[size_t(r * n + i)]), 2);
    const double inverse = 1.0 / std::sqrt(sumSquares / double(n) + epsilon);
    for (int64_t i = 0; i < n; ++i) y[size_t(r * n + i)] = x[size_t(r * n + i)] * inverse * scale[size_t(i)];
  }
  return y;
}

TEST(LayerNormKernels, RmsRows) {
  for (const LayerNormKernels *kernels : layerNormKernelVariants()) {
    if (!hasAll(hostIsa(), kernels->isa)) continue;
    for (int64_t n : {1, 2, 15, 16, 17, 33, 256, 1001, 4096}) {
      for (float offset : {0.0f, 100.0f}) {
        const std::vector<float> x = randomFloats(n, uint32_t(n), offset), scale = randomFloats(n, 13);
        std::vector<float> y(size_t(n) + 1, -7.0f);
        kernels->rmsRow(x.data(), scale.data(), y.data(), n, 1e-5f);
        EXPECT_EQ(y.back(), -7.0f) << "wrote past n";
        y.pop_back();
        expectClose(rmsNormRef(x, scale, 1, n, 1e-5), y,
                    std::string(kernels->name) + " rms n=" + std::to_string(n) + " offset=" + std::to_string(offset));
      }
    }
  }
  ThreadPool pool(2);
  const int64_t rows = 130, n = 97;
  std::vector<float> x = randomFloats(rows * n, 6);
  const std::vector<float> scale = randomFloats(n, 7);
  const std::vector<double> want = rmsNormRef(x, scale, rows, n, 1e-3);
  runRmsNorm(layerNormKernels(), x.data(), scale.data(), x.data(), rows, n, 1e-3f, &pool);
  expectClose(want, x, "rms in place");
}

TEST(LayerNormKernels, InPlaceThreaded) {
  ThreadPool pool(2);
  const int64_t rows = 130, n = 97;
  std::vector<float> x = randomFloats(rows * n, 3);
  const std::vector<float> scale = randomFloats(n, 4), bias = randomFloats(n, 5);
  const std::vector<double> want = layerNormRef(x, scale, &bias, rows, n, 1e-3);
  runLayerNorm(layerNormKernels(), x.data(), scale.data(), bias.data(), x.data(), rows, n, 1e-3f, &pool);
  expectClose(want, x, "in place");
}

}  // namespace
}  // namespace tessel::cpu
