// LSTM, GRU and RNN: run-time choice of the ISA variant and the driver (the input projection as
// one GEMM, then each (direction, batch entry) sequence step by step); the per-step loops are in
// recurrent_impl.h, compiled per ISA under isa/.
#include "targets/cpu/kernels/recurrent.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>

#include "targets/cpu/kernels/elementwise.h"

namespace tessel::cpu {

extern const RecurrentKernels kRecurrentAvx512;
extern const RecurrentKernels kRecurrentAvx2;
extern const RecurrentKernels kRecurrentGeneric;

namespace {

const RecurrentKernels *const kVariants[] = {&kRecurrentAvx512, &kRecurrentAvx2, &kRecurrentGeneric};

constexpr int64_t kAlignFloats = 16;  // 64 bytes.

int64_t alignFloats(int64_t n) { return (n + kAlignFloats - 1) / kAlignFloats * kAlignFloats; }

/// Floats of one sequence's private buffers: h, c, the recurrent product (G*H) and GRU's z, r*h
/// and R_h*(r*h).
int64_t pairFloats(const RecurrentShape &shape) {
  return 5 * alignFloats(shape.hidden) + alignFloats(shape.gates * shape.hidden);
}

int64_t projectionFloats(const RecurrentShape &shape) {
  return alignFloats(shape.seq * shape.batch * shape.directions * shape.gates * shape.hidden);
}

GemmShape projectionShape(const RecurrentShape &shape) {
  return {shape.seq * shape.batch, shape.directions * shape.gates * shape.hidden, shape.input};
}

}  // namespace

std::span<const RecurrentKernels *const> recurrentKernelVariants() { return kVariants; }

const RecurrentKernels &recurrentKernels() {
  static const RecurrentKernels &selected = []() -> const RecurrentKernels & {
    for (const RecurrentKernels *kernels : kVariants) {
      if (!hasAll(hostIsa(), kernels->isa)) continue;
      if (std::getenv("TESSEL_LOG_KERNELS") != nullptr) {
        std::fprintf(stderr, "tessel: recurrent ops use %s (host isa: %s)\n", kernels->name, isaName(hostIsa()).c_str());
      }
      return *kernels;
    }
    return kRecurrentGeneric;
  }();
  return selected;
}

size_t recurrentScratchBytes(const RecurrentShape &shape, int threads) {
  const int64_t pairs = shape.directions * shape.batch;
  const size_t floats = static_cast<size_t>(projectionFloats(shape) + pairs * pairFloats(shape));
  return floats * sizeof(float) + sgemmScratchBytes(projectionShape(shape), threads, {.a = false, .b = true});
}

void runRecurrent(const RecurrentKernels &kernels, const RecurrentShape &shape, const RecurrentWeights &weights,
                  const RecurrentIo &io, void *scratch, ThreadPool *pool) {
  const int64_t seq = shape.seq, batch = shape.batch, hidden = shape.hidden, dirs = shape.directions;
  const int64_t gh = shape.gates * hidden, cols = dirs * gh;
  const float clip = shape.clip > 0 ? shape.clip : std::numeric_limits<float>::infinity();
  auto *xw = static_cast<float *>(scratch);
  float *pairsBase = xw + projectionFloats(shape);
  const int64_t pairs = dirs * batch;
  auto *gemmScratch = reinterpret_cast<std::byte *>(pairsBase + pairs * pairFloats(shape));
  const GemmShape projection = projectionShape(shape);
  if (seq * batch > 0) {
    GemmEpilogue epilogue;
    epilogue.bias = weights.bias;
    sgemmPacked(projection, io.x, shape.input, weights.w, xw, cols, epilogue, pool,
                {gemmScratch, sgemmScratchBytes(projection, pool ? pool->size() : 1, {.a = false, .b = true})});
  }
  // Steps past a sequence's length leave Y zero.
  if (io.y && io.seqLens) std::memset(io.y, 0, static_cast<size_t>(seq * dirs * batch * hidden) * sizeof(float));

  auto stateAt = [&](int64_t d, int64_t b) { return (shape.batchMajor ? b * dirs + d : d * batch + b) * hidden; };
  parallelRanges(pool, pairs, 1, [&](int64_t begin, int64_t end) {
    for (int64_t pair = begin; pair < end; ++pair) {
      const int64_t d = pair / batch, b = pair % batch;
      float *h = pairsBase + pair * pairFloats(shape);
      float *c = h + alignFloats(hidden);
      float *z = c + alignFloats(hidden), *rh = z + alignFloats(hidden), *hrh = rh + alignFloats(hidden);
      float *hr = hrh + alignFloats(hidden);
      const int64_t state = stateAt(d, b);
      if (io.h0) std::memcpy(h, io.h0 + state, hidden * sizeof(float)); else std::fill_n(h, hidden, 0.0f);
      if (io.c0) std::memcpy(c, io.c0 + state, hidden * sizeof(float)); else std::fill_n(c, hidden, 0.0f);
      const float *rt = weights.rt + d * hidden * gh;
      const float *p = weights.p ? weights.p + d * 3 * hidden : nullptr;
      const float *rbh = weights.rbh ? weights.rbh + d * hidden : nullptr;
      const bool backward = shape.reverse || d == 1;
      const int64_t len = io.seqLens ? io.seqLens[b] : seq;
      for (int64_t step = 0; step < len; ++step) {
        const int64_t t = backward ? len - 1 - step : step;
        const float *xwt = xw + (shape.batchMajor ? b * seq + t : t * batch + b) * cols + d * gh;
        switch (shape.cell) {
          case RecurrentCell::Lstm:
            kernels.matVec(h, rt, hidden, gh, gh, hr);
            kernels.lstmCell(xwt, hr, p, clip, hidden, c, h);
            break;
          case RecurrentCell::Rnn:
            kernels.matVec(h, rt, hidden, gh, gh, hr);
            kernels.rnnCell(xwt, hr, clip, hidden, h);
            break;
          case RecurrentCell::Gru:
            if (shape.linearBeforeReset) {
              kernels.matVec(h, rt, hidden, gh, gh, hr);
              kernels.gruCellLinear(xwt, hr, rbh, clip, hidden, h);
            } else {
              // The h gate's recurrent term is R_h (r * h): a second product once r is known.
              kernels.matVec(h, rt, hidden, 2 * hidden, gh, hr);
              kernels.gruGates(xwt, hr, clip, hidden, h, z, rh);
              kernels.matVec(rh, rt + 2 * hidden, hidden, hidden, gh, hrh);
              kernels.gruUpdate(xwt + 2 * hidden, hrh, rbh, z, clip, hidden, h);
            }
            break;
        }
        if (io.y) {
          const int64_t at = (shape.batchMajor ? (b * seq + t) * dirs + d : (t * dirs + d) * batch + b) * hidden;
          std::memcpy(io.y + at, h, hidden * sizeof(float));
        }
      }
      if (io.yh) std::memcpy(io.yh + state, h, hidden * sizeof(float));
      if (io.yc) std::memcpy(io.yc + state, c, hidden * sizeof(float));
    }
  });
}

}  // namespace tessel::cpu
