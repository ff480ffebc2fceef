// The recurrent per-step loops of every variant the host can run (others skipped) against
// double-precision loops: the transposed matrix-vector product (row counts around its 4-row
// unroll, column counts around the vector widths, a row stride wider than the columns), and the
// LSTM (with and without peepholes), GRU (both forms) and RNN cells, with and without clip.
// Tolerance: 1e-5 absolute plus 1e-5 relative (float sums of <= 128 terms; tanh/sigmoid < 1e-6).
#include "targets/cpu/kernels/recurrent.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <vector>

namespace tessel::cpu {
namespace {

std::vector<float> randomFloats(int64_t count, uint32_t seed, float scale = 1.0f) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-scale, scale);
  std::vector<float> v(static_cast<size_t>(count));
  for (float &x : v) x = dist(rng);
  return v;
}

double sigmoid(double x) { return 1.0 / (1.0 + std::exp(-x)); }
double clipped(double x, double clip) { return std::clamp(x, -clip, clip); }

void expectNear(const std::vector<float> &got, const std::vector<double> &want, const char *what) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    ASSERT_NEAR(got[i], want[i], 1e-5 + 1e-5 * std::fabs(want[i])) << what << " element " << i;
  }
}

class RecurrentKernelTest : public ::testing::TestWithParam<const RecurrentKernels *> {
 protected:
  void SetUp() override {
    if (!hasAll(hostIsa(), GetParam()->isa)) GTEST_SKIP() << GetParam()->name << " needs ISA bits this host lacks";
  }
};

TEST_P(RecurrentKernelTest, MatVec) {
  const RecurrentKernels &kernels = *GetParam();
  for (int64_t k : {1, 3, 4, 5, 64}) {
    for (int64_t n : {1, 7, 16, 33, 512}) {
      const int64_t ldr = n + 3;
      auto h = randomFloats(k, 1), rt = randomFloats(k * ldr, 2);
      std::vector<float> out(size_t(n), 99.0f);
      kernels.matVec(h.data(), rt.data(), k, n, ldr, out.data());
      std::vector<double> want(size_t(n), 0.0);
      for (int64_t i = 0; i < k; ++i)
        for (int64_t j = 0; j < n; ++j) want[j] += double(h[i]) * rt[i * ldr + j];
      SCOPED_TRACE(testing::Message() << "k=" << k << " n=" << n);
      expectNear(out, want, "matVec");
    }
  }
}

TEST_P(RecurrentKernelTest, Cells) {
  const RecurrentKernels &kernels = *GetParam();
  for (int64_t hid : {1, 5, 16, 19, 128}) {
    for (float clip : {std::numeric_limits<float>::infinity(), 0.5f}) {
      SCOPED_TRACE(testing::Message() << "hidden=" << hid << " clip=" << clip);
      auto xw = randomFloats(4 * hid, 3, 3.0f), hr = randomFloats(4 * hid, 4, 3.0f), p = randomFloats(3 * hid, 5);
      auto h0 = randomFloats(hid, 6), c0 = randomFloats(hid, 7), rbh = randomFloats(hid, 8);
      for (bool peep : {false, true}) {
        std::vector<float> h = h0, c = c0;
        kernels.lstmCell(xw.data(), hr.data(), peep ? p.data() : nullptr, clip, hid, c.data(), h.data());
        std::vector<double> wantH(static_cast<size_t>(hid)), wantC(static_cast<size_t>(hid));
        for (int64_t j = 0; j < hid; ++j) {
          auto pe = [&](int64_t g) { return peep ? double(p[g * hid + j]) : 0.0; };
          const double in = sigmoid(clipped(xw[j] + hr[j] + pe(0) * c0[j], clip));
          const double forget = sigmoid(clipped(xw[2 * hid + j] + hr[2 * hid + j] + pe(2) * c0[j], clip));
          const double cand = std::tanh(clipped(xw[3 * hid + j] + hr[3 * hid + j], clip));
          wantC[j] = forget * c0[j] + in * cand;
          wantH[j] = sigmoid(clipped(xw[hid + j] + hr[hid + j] + pe(1) * wantC[j], clip)) * std::tanh(wantC[j]);
        }
        expectNear(c, wantC, "lstm c");
        expectNear(h, wantH, "lstm h");
      }
      std::vector<double> wantH(static_cast<size_t>(hid));
      std::vector<float> h = h0;
      kernels.gruCellLinear(xw.data(), hr.data(), rbh.data(), clip, hid, h.data());
      for (int64_t j = 0; j < hid; ++j) {
        const double z = sigmoid(clipped(xw[j] + hr[j], clip)), r = sigmoid(clipped(xw[hid + j] + hr[hid + j], clip));
        const double cand = std::tanh(clipped(xw[2 * hid + j] + r * (hr[2 * hid + j] + rbh[j]), clip));
        wantH[j] = (1 - z) * cand + z * h0[j];
      }
      expectNear(h, wantH, "gru linear_before_reset");
      std::vector<float> z(static_cast<size_t>(hid)), rh(static_cast<size_t>(hid));
      kernels.gruGates(xw.data(), hr.data(), clip, hid, h0.data(), z.data(), rh.data());
      std::vector<double> wantZ(static_cast<size_t>(hid)), wantRh(static_cast<size_t>(hid));
      for (int64_t j = 0; j < hid; ++j) {
        wantZ[j] = sigmoid(clipped(xw[j] + hr[j], clip));
        wantRh[j] = sigmoid(clipped(xw[hid + j] + hr[hid + j], clip)) * h0[j];
      }
      expectNear(z, wantZ, "gru z");
      expectNear(rh, wantRh, "gru r*h");
      h = h0;
      kernels.gruUpdate(xw.data(), hr.data(), rbh.data(), z.data(), clip, hid, h.data());
      for (int64_t j = 0; j < hid; ++j) {
        const double cand = std::tanh(clipped(double(xw[j]) + hr[j] + rbh[j], clip));
        wantH[j] = (1 - z[j]) * cand + z[j] * h0[j];
      }
      expectNear(h, wantH, "gru update");
      h = h0;
      kernels.rnnCell(xw.data(), hr.data(), clip, hid, h.data());
      for (int64_t j = 0; j < hid; ++j) wantH[j] = std::tanh(clipped(double(xw[j]) + hr[j], clip));
      expectNear(h, wantH, "rnn");
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Variants, RecurrentKernelTest, ::testing::ValuesIn(recurrentKernelVariants().begin(),
                                                                            recurrentKernelVariants().end()),
                         [](const auto &info) { return std::string(info.param->name); });

}  // namespace
}  // namespace tessel::cpu
