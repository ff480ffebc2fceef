// The elementwise loops, written once and compiled per ISA: each isa/<family>/elementwise.cpp
// includes this file and builds its ElementwiseKernels row from the functions below, so GCC
// vectorizes the same source with AVX-512, AVX2+FMA or baseline flags. Internal linkage only.
//
// `#pragma GCC ivdep`: outputs may be exactly an input (in place), which a vector loop handles
// because each element is loaded before its lane is stored; without the pragma GCC would add an
// overlap check that sends the in-place case to the scalar loop.
#pragma once

#include <cmath>

#include "targets/cpu/kernels/elementwise.h"
#include "targets/cpu/kernels/vector_math.h"

namespace tessel::cpu {
namespace {

template <class F>
inline __attribute__((always_inline)) void mapUnary(const float *x, float *y, int64_t n, F f) {
#pragma GCC ivdep
  for (int64_t i = 0; i < n; ++i) y[i] = f(x[i]);
}

void unaryLoop(UnaryOp op, UnaryParams params, const float *x, float *y, int64_t n) {
  const float alpha = params.alpha, beta = params.beta;
  switch (op) {
    case UnaryOp::Identity:
      if (x != y) mapUnary(x, y, n, [](float v) { return v; });
      return;
    case UnaryOp::Relu: return mapUnary(x, y, n, [](float v) { return maxFloat(v, 0.0f); });
    case UnaryOp::Sigmoid: return mapUnary(x, y, n, [](float v) { return fastSigmoid(v); });
    case UnaryOp::Tanh: return mapUnary(x, y, n, [](float v) { return fastTanh(v); });
    case UnaryOp::Exp: return mapUnary(x, y, n, [](float v) { return fastExp(v); });
    case UnaryOp::Log: return mapUnary(x, y, n, [](float v) { return fastLog(v); });
    // A single instruction where the including file turns errno off (the isa/ files do).
    case UnaryOp::Sqrt: return mapUnary(x, y, n, [](float v) { return std::sqrt(v); });
    case UnaryOp::Reciprocal: return mapUnary(x, y, n, [](float v) { return 1.0f / v; });
    case UnaryOp::Neg: return mapUnary(x, y, n, [](float v) { return -v; });
    case UnaryOp::Abs: return mapUnary(x, y, n, [](float v) { return absBits(v); });
    case UnaryOp::Erf: return mapUnary(x, y, n, [](float v) { return fastErf(v); });
    case UnaryOp::Clip: return mapUnary(x, y, n, [=](float v) { return minFloat(maxFloat(v, alpha), beta); });
    case UnaryOp::LeakyRelu: return mapUnary(x, y, n, [=](float v) { return v >= 0.0f ? v : alpha * v; });
    case UnaryOp::HardSigmoid:
      return mapUnary(x, y, n, [=](float v) { return minFloat(maxFloat(alpha * v + beta, 0.0f), 1.0f); });
    case UnaryOp::HardSwish:
      return mapUnary(x, y, n, [](float v) { return v * minFloat(maxFloat(v * (1.0f / 6.0f) + 0.5f, 0.0f), 1.0f); });
    case UnaryOp::Softplus: return mapUnary(x, y, n, [](float v) { return fastSoftplus(v); });
    case UnaryOp::Gelu: return mapUnary(x, y, n, [](float v) { return fastGelu(v); });
    case UnaryOp::GeluTanh: return mapUnary(x, y, n, [](float v) { return fastGeluTanh(v); });
    case UnaryOp::Silu: return mapUnary(x, y, n, [](float v) { return fastSilu(v); });
    case UnaryOp::Square: return mapUnary(x, y, n, [](float v) { return v * v; });
    case UnaryOp::Cube: return mapUnary(x, y, n, [](float v) { return v * v * v; });
    // One rounding instruction (vrndscaleps) where SSE4.1 or later is on; libm calls on the portable row.
    case UnaryOp::Round: return mapUnary(x, y, n, [](float v) { return std::nearbyint(v); });
    case UnaryOp::Floor: return mapUnary(x, y, n, [](float v) { return std::floor(v); });
    case UnaryOp::Ceil: return mapUnary(x, y, n, [](float v) { return std::ceil(v); });
  }
}

/// One binary op in its three operand forms (vector-vector, vector-scalar, scalar-vector).
template <class F>
inline __attribute__((always_inline)) void mapBinary(const float *a, bool aScalar, const float *b, bool bScalar,
                                                     float *y, int64_t n, F f) {
  if (!aScalar && !bScalar) {
#pragma GCC ivdep
    for (int64_t i = 0; i < n; ++i) y[i] = f(a[i], b[i]);
  } else if (!aScalar) {
    const float s = b[0];
#pragma GCC ivdep
    for (int64_t i = 0; i < n; ++i) y[i] = f(a[i], s);
  } else if (!bScalar) {
    const float s = a[0];
#pragma GCC ivdep
    for (int64_t i = 0; i < n; ++i) y[i] = f(s, b[i]);
  } else {
    const float v = f(a[0], b[0]);
    for (int64_t i = 0; i < n; ++i) y[i] = v;
  }
}

void binaryLoop(BinaryOp op, const float *a, bool aScalar, const float *b, bool bScalar, float *y, int64_t n) {
  switch (op) {
    case BinaryOp::Add: return mapBinary(a, aScalar, b, bScalar, y, n, [](float u, float v) { return u + v; });
    case BinaryOp::Sub: return mapBinary(a, aScalar, b, bScalar, y, n, [](float u, float v) { return u - v; });
    case BinaryOp::Mul: return mapBinary(a, aScalar, b, bScalar, y, n, [](float u, float v) { return u * v; });
    case BinaryOp::Div: return mapBinary(a, aScalar, b, bScalar, y, n, [](float u, float v) { return u / v; });
    // A general exponent has no vector form here; the op lowering turns 0.5, 1, 2 and 3 into unary ops.
    case BinaryOp::Pow: return mapBinary(a, aScalar, b, bScalar, y, n, [](float u, float v) { return std::pow(u, v); });
    // NaN in either operand gives NaN, as the reference does.
    case BinaryOp::Max:
      return mapBinary(a, aScalar, b, bScalar, y, n,
                       [](float u, float v) { return selectFloat(isNaN(u) || isNaN(v), u + v, maxFloat(u, v)); });
    case BinaryOp::Min:
      return mapBinary(a, aScalar, b, bScalar, y, n,
                       [](float u, float v) { return selectFloat(isNaN(u) || isNaN(v), u + v, minFloat(u, v)); });
  }
}

void selectLoop(const float *condition, const float *a, const float *b, float *y, int64_t n) {
#pragma GCC ivdep
  for (int64_t i = 0; i < n; ++i) y[i] = condition[i] != 0.0f ? a[i] : b[i];
}

}  // namespace
}  // namespace tessel::cpu
