// LSTM, GRU and RNN over f32 with the ONNX default activations. The input projection of every
// time step and direction is one GEMM against the packed input weights (with the biases that do
// not depend on the state in its epilogue); each step then multiplies the state by the transposed
// recurrent weights (a matrix-vector product per batch entry) and applies the fused gate update.
// (Direction, batch entry) pairs are independent sequences and run in parallel. ISA variants of
// the per-step loops at run time.
#pragma once

#include <cstdint>
#include <span>

#include "support/thread_pool.h"
#include "targets/cpu/kernels/cpu_features.h"
#include "targets/cpu/kernels/gemm.h"

namespace tessel::cpu {

/// One ISA variant of the per-step loops. Pre-activations are clipped to [-clip, clip] before
/// each gate's activation, as ONNX defines; clip is +inf for a node without one.
struct RecurrentKernels {
  const char *name;
  Isa isa;
  /// out[j] = sum_i h[i] * rt[i * ldr + j] for j < n (rt: k rows of the transposed weights).
  void (*matVec)(const float *h, const float *rt, int64_t k, int64_t n, int64_t ldr, float *out);
  /// LSTM gates i, o, f, c of xw + hr (4*hidden each, gate-major); peepholes p (3*hidden: i, o,
  /// f) or null. Updates c and h in place.
  void (*lstmCell)(const float *xw, const float *hr, const float *p, float clip, int64_t hidden, float *c, float *h);
  /// GRU with linear_before_reset: z, r, h gates; rbh is the recurrent bias of the h gate.
  void (*gruCellLinear)(const float *xw, const float *hr, const float *rbh, float clip, int64_t hidden, float *h);
  /// GRU, first half: z = f(xw_z + hr_z), and rh = f(xw_r + hr_r) * h.
  void (*gruGates)(const float *xw, const float *hr, float clip, int64_t hidden, const float *h, float *z, float *rh);
  /// GRU, second half: h = (1 - z) * g(xw_h + hrh + rbh) + z * h, hrh being R_h applied to rh.
  void (*gruUpdate)(const float *xwh, const float *hrh, const float *rbh, const float *z, float clip, int64_t hidden,
                    float *h);
  /// RNN: h = tanh(xw + hr).
  void (*rnnCell)(const float *xw, const float *hr, float clip, int64_t hidden, float *h);
};

std::span<const RecurrentKernels *const> recurrentKernelVariants();
const RecurrentKernels &recurrentKernels();

enum class RecurrentCell : uint8_t { Rnn, Gru, Lstm };

/// The sizes and options of one recurrent node, fixed at lowering.
struct RecurrentShape {
  RecurrentCell cell = RecurrentCell::Lstm;
  int64_t seq = 0, batch = 0, input = 0, hidden = 0, directions = 1;
  int64_t gates = 4;            // 4 (LSTM), 3 (GRU), 1 (RNN).
  bool reverse = false;         // One direction, run backwards.
  bool batchMajor = false;      // layout = 1: X, Y, Y_h, Y_c and the initial states lead with batch.
  bool linearBeforeReset = false;
  float clip = 0;               // <= 0: none.
};

/// Weights packed at lowering.
struct RecurrentWeights {
  PackedBView w;                // [input, D*G*H]: every direction's W, transposed.
  const float *bias = nullptr;  // [D*G*H]: Wb + Rb (GRU: Wb, plus Rb of z and r).
  const float *rt = nullptr;    // [D][H][G*H]: each direction's R, transposed.
  const float *rbh = nullptr;   // GRU: [D][H], the recurrent bias of the h gate.
  const float *p = nullptr;     // LSTM: [D][3H] peepholes, or null.
};

/// What one run reads and writes; any of seqLens, h0, c0, y, yh, yc may be null.
struct RecurrentIo {
  const float *x = nullptr;
  const int64_t *seqLens = nullptr;  // [batch], checked by the caller to lie in [0, seq].
  const float *h0 = nullptr, *c0 = nullptr;
  float *y = nullptr, *yh = nullptr, *yc = nullptr;
};

/// Scratch bytes runRecurrent needs (64-byte aligned) on `threads` threads.
size_t recurrentScratchBytes(const RecurrentShape &shape, int threads);

void runRecurrent(const RecurrentKernels &kernels, const RecurrentShape &shape, const RecurrentWeights &weights,
                  const RecurrentIo &io, void *scratch, ThreadPool *pool);

}  // namespace tessel::cpu
