// The per-step loops of the recurrent kernels, compiled per ISA by isa/<family>/recurrent.cpp.
// Plain loops over contiguous floats with the branch-free math of vector_math.h, so GCC
// vectorizes each for the ISA of the including file. Internal linkage only.
#pragma once

#include "targets/cpu/kernels/recurrent.h"
#include "targets/cpu/kernels/vector_math.h"

namespace tessel::cpu {
namespace {

/// x clamped to [-clip, clip]; clip is +inf when the node has none (a select, so loops vectorize).
inline __attribute__((always_inline)) float clipTo(float x, float clip) { return minFloat(maxFloat(x, -clip), clip); }

void recurrentMatVec(const float *h, const float *rt, int64_t k, int64_t n, int64_t ldr, float *out) {
  for (int64_t j = 0; j < n; ++j) out[j] = 0.0f;
  // Four rows of rt per pass over out: a quarter of the loads and stores of out.
  int64_t i = 0;
  for (; i + 4 <= k; i += 4) {
    const float h0 = h[i], h1 = h[i + 1], h2 = h[i + 2], h3 = h[i + 3];
    const float *r0 = rt + i * ldr, *r1 = r0 + ldr, *r2 = r1 + ldr, *r3 = r2 + ldr;
    for (int64_t j = 0; j < n; ++j) out[j] += h0 * r0[j] + h1 * r1[j] + h2 * r2[j] + h3 * r3[j];
  }
  for (; i < k; ++i) {
    const float hi = h[i];
    const float *r = rt + i * ldr;
    for (int64_t j = 0; j < n; ++j) out[j] += hi * r[j];
  }
}

void lstmCellLoop(const float *xw, const float *hr, const float *p, float clip, int64_t hidden, float *c, float *h) {
  const float *xi = xw, *xo = xw + hidden, *xf = xw + 2 * hidden, *xc = xw + 3 * hidden;
  const float *ri = hr, *ro = hr + hidden, *rf = hr + 2 * hidden, *rc = hr + 3 * hidden;
  if (p) {
    const float *pi = p, *po = p + hidden, *pf = p + 2 * hidden;
    for (int64_t j = 0; j < hidden; ++j) {
      const float in = fastSigmoid(clipTo(xi[j] + ri[j] + pi[j] * c[j], clip));
      const float forget = fastSigmoid(clipTo(xf[j] + rf[j] + pf[j] * c[j], clip));
      const float candidate = fastTanh(clipTo(xc[j] + rc[j], clip));
      const float cell = forget * c[j] + in * candidate;
      const float out = fastSigmoid(clipTo(xo[j] + ro[j] + po[j] * cell, clip));
      c[j] = cell;
      h[j] = out * fastTanh(cell);
    }
    return;
  }
  for (int64_t j = 0; j < hidden; ++j) {
    const float in = fastSigmoid(clipTo(xi[j] + ri[j], clip));
    const float forget = fastSigmoid(clipTo(xf[j] + rf[j], clip));
    const float candidate = fastTanh(clipTo(xc[j] + rc[j], clip));
    const float cell = forget * c[j] + in * candidate;
    const float out = fastSigmoid(clipTo(xo[j] + ro[j], clip));
    c[j] = cell;
    h[j] = out * fastTanh(cell);
  }
}

void gruCellLinearLoop(const float *xw, const float *hr, const float *rbh, float clip, int64_t hidden, float *h) {
  for (int64_t j = 0; j < hidden; ++j) {
    const float z = fastSigmoid(clipTo(xw[j] + hr[j], clip));
    const float r = fastSigmoid(clipTo(xw[hidden + j] + hr[hidden + j], clip));
    const float candidate = fastTanh(clipTo(xw[2 * hidden + j] + r * (hr[2 * hidden + j] + rbh[j]), clip));
    h[j] = (1.0f - z) * candidate + z * h[j];
  }
}

void gruGatesLoop(const float *xw, const float *hr, float clip, int64_t hidden, const float *h, float *z, float *rh) {
  for (int64_t j = 0; j < hidden; ++j) {
    z[j] = fastSigmoid(clipTo(xw[j] + hr[j], clip));
    rh[j] = fastSigmoid(clipTo(xw[hidden + j] + hr[hidden + j], clip)) * h[j];
  }
}

void gruUpdateLoop(const float *xwh, const float *hrh, const float *rbh, const float *z, float clip, int64_t hidden,
                   float *h) {
  for (int64_t j = 0; j < hidden; ++j) {
    const float candidate = fastTanh(clipTo(xwh[j] + hrh[j] + rbh[j], clip));
    h[j] = (1.0f - z[j]) * candidate + z[j] * h[j];
  }
}

void rnnCellLoop(const float *xw, const float *hr, float clip, int64_t hidden, float *h) {
  for (int64_t j = 0; j < hidden; ++j) h[j] = fastTanh(clipTo(xw[j] + hr[j], clip));
}

}  // namespace
}  // namespace tessel::cpu
