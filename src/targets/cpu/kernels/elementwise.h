// Elementwise f32 kernels of the cpu target: unary maps, binary ops with one side optionally a
// scalar, and a select, each a flat loop over n elements in one of three ISA variants (AVX-512,
// AVX2+FMA, portable) chosen at run time. On top of them, the broadcast layout that views an ONNX
// multidirectional broadcast as rows of contiguous elements (same-shape, scalar, [B,S,768] + [768]
// and [B,C,H,W] * [1,C,1,1] all become a few long rows) and the threaded drivers the cpu steps call.
//
// Every loop allows the output to be exactly one of its inputs (in place), never a partial overlap.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "support/diagnostic.h"
#include "support/thread_pool.h"
#include "targets/cpu/kernels/cpu_features.h"

namespace tessel::cpu {

enum class UnaryOp : uint8_t {
  Identity,
  Relu,
  Sigmoid,
  Tanh,
  Exp,
  Log,
  Sqrt,
  Reciprocal,
  Neg,
  Abs,
  Erf,
  Clip,         // min(max(x, alpha), beta)
  LeakyRelu,    // x >= 0 ? x : alpha x
  HardSigmoid,  // clamp(alpha x + beta, 0, 1)
  HardSwish,    // x clamp(x / 6 + 1/2, 0, 1)
  Softplus,
  Gelu,      // erf form
  GeluTanh,  // tanh form
  Silu,
  Square,  // Pow(x, 2)
  Cube,    // Pow(x, 3)
  Round,   // half to even
  Floor,
  Ceil,
};

struct UnaryParams {
  float alpha = 0;
  float beta = 0;
};

enum class BinaryOp : uint8_t { Add, Sub, Mul, Div, Pow, Max, Min };

/// One ISA variant of the elementwise loops.
struct ElementwiseKernels {
  const char *name;
  Isa isa;  // Bits the host must have.
  /// y[i] = op(x[i]) for i < n.
  void (*unary)(UnaryOp op, UnaryParams params, const float *x, float *y, int64_t n);
  /// y[i] = op(a[i], b[i]); a scalar operand reads element 0 for every i.
  void (*binary)(BinaryOp op, const float *a, bool aScalar, const float *b, bool bScalar, float *y, int64_t n);
  /// y[i] = condition[i] != 0 ? a[i] : b[i].
  void (*select)(const float *condition, const float *a, const float *b, float *y, int64_t n);
};

/// Every variant, best first, including those the host cannot run.
std::span<const ElementwiseKernels *const> elementwiseKernelVariants();
/// The first variant the host (as capped by TESSEL_CPU_ISA) can run.
const ElementwiseKernels &elementwiseKernels();

/// An output of some sizes with inputs broadcast to it, as `rows` rows of `inner` elements. Adjacent
/// dims that every input treats alike (all present, or the same inputs broadcast) are merged, so the
/// last merged dim is the longest run in which each input is either contiguous or one repeated value.
struct BroadcastLayout {
  int64_t inner = 1;
  int64_t rows = 1;
  std::vector<int64_t> outerSizes;                 // The merged dims before the last; product = rows.
  std::vector<std::vector<int64_t>> outerStrides;  // Per input, its element stride along each outer dim.
  std::vector<bool> innerContiguous;               // Per input: stride 1 along the row, else stride 0.

  int64_t numel() const { return rows * inner; }
  /// Offset into input `input` of the first element of row `row`.
  int64_t rowOffset(size_t input, int64_t row) const;
};

/// Plans the broadcast of inputs of `inputSizes` to `outSizes`. Fails when an input does not
/// broadcast to it (more dims, or a dim that is neither 1 nor the output's).
Expected<BroadcastLayout> planBroadcast(const std::vector<std::vector<int64_t>> &inputSizes,
                                        const std::vector<int64_t> &outSizes);

/// Splits [0, total) into contiguous ranges of at least `grain` items (fewer when total is small)
/// and runs fn(begin, end) on each over the pool; runs inline when pool is null or one range suffices.
void parallelRanges(ThreadPool *pool, int64_t total, int64_t grain, const std::function<void(int64_t, int64_t)> &fn);

/// y = op(x) over n elements, threaded. x may equal y.
void runUnary(const ElementwiseKernels &kernels, UnaryOp op, UnaryParams params, const float *x, float *y, int64_t n,
              ThreadPool *pool);

/// y = op(a, b) with a and b broadcast as `layout` (two inputs) says, threaded. y may equal a or b
/// when that input is not broadcast.
void runBinary(const ElementwiseKernels &kernels, BinaryOp op, const BroadcastLayout &layout, const float *a,
               const float *b, float *y, ThreadPool *pool);

/// The element types Cast converts between here.
enum class CastType : uint8_t { F32, I64, I32, Bool };

/// y = Cast(x) over n elements, threaded, as ONNX Cast (and the reference) converts: float to int
/// truncates toward zero, NaN gives 0, values past int64 saturate and int64-range values wrap into
/// int32; to bool is x != 0; from bool is 0 or 1; int to int wraps. x and y do not overlap unless
/// the types are the same size and x == y.
void runCast(CastType from, CastType to, const void *x, void *y, int64_t n, ThreadPool *pool);

}  // namespace tessel::cpu
