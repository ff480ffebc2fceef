// Helpers the channels-last kernel tests share: seeded data, and moving it between NCHW and NHWC
// so the NHWC kernels can be checked against the NCHW ones.
#pragma once

#include <cstdint>
#include <random>
#include <vector>

namespace tessel::cpu::testing {

/// `count` floats uniform in [-1, 1) from `seed`.
inline std::vector<float> randomFloats(int64_t count, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> v(static_cast<size_t>(count));
  for (float &x : v) x = dist(rng);
  return v;
}

/// [N, C, plane] -> [N, plane, C], or back with `toNchw`.
inline std::vector<float> transposeChannels(const std::vector<float> &in, int64_t n, int64_t c, int64_t plane,
                                            bool toNchw) {
  std::vector<float> out(in.size());
  for (int64_t b = 0; b < n; ++b) {
    for (int64_t ch = 0; ch < c; ++ch) {
      for (int64_t p = 0; p < plane; ++p) {
        const size_t nchw = size_t((b * c + ch) * plane + p), nhwc = size_t((b * plane + p) * c + ch);
        if (toNchw) {
          out[nchw] = in[nhwc];
        } else {
          out[nhwc] = in[nchw];
        }
      }
    }
  }
  return out;
}

}  // namespace tessel::cpu::testing
