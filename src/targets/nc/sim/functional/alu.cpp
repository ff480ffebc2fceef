// ALU operators and ACT functions (alu.h). The ACT functions are the textbook definitions in fp32
// (the hardware's piecewise polynomials are not modeled): gelu is the exact erf form, the *_dx
// functions are derivatives, prelu's negative slope comes from the caller.
#include "targets/nc/sim/functional/alu.h"

#include <cmath>

#include "support/diagnostic.h"
#include "targets/nc/sim/functional/dtype_convert.h"

namespace tessel::nc::functional {
namespace {

constexpr float kSqrtHalf = 0.70710678118654752f;          // 1/sqrt(2).
constexpr float kInvSqrtTwoPi = 0.39894228040143268f;      // 1/sqrt(2*pi).
constexpr float kTwoOverSqrtPi = 1.12837916709551257f;     // 2/sqrt(pi).
constexpr float kSqrtTwoOverPi = 0.79788456080286536f;     // sqrt(2/pi), gelu tanh form.
constexpr float kGeluTanhCubic = 0.044715f;                // gelu tanh form.
constexpr float kGeluSigmoidScale = 1.702f;                // gelu sigmoid form: x * sigmoid(1.702 x).

float sigmoid(float x) { return 1.0f / (1.0f + std::exp(-x)); }
/// log(1 + e^x) without overflow for large x.
float softplus(float x) { return std::fmax(x, 0.0f) + std::log1p(std::exp(-std::fabs(x))); }

}  // namespace

bool isBitwiseOp(AluOp op) {
  switch (op) {
    case AluOp::Invert: case AluOp::BitwiseAnd: case AluOp::BitwiseOr: case AluOp::BitwiseXor:
    case AluOp::LeftShift: case AluOp::LogicalShiftRight:
      return true;
    default:
      return false;
  }
}

bool isUnaryOp(AluOp op) {
  switch (op) {
    case AluOp::Invert: case AluOp::Abs: case AluOp::Square: case AluOp::Relu: case AluOp::Rsqrt:
    case AluOp::Reciprocal:
      return true;
    default:
      return false;
  }
}

float applyAlu(AluOp op, float a, float b) {
  switch (op) {
    case AluOp::Add: return a + b;
    case AluOp::Subtract: return a - b;
    case AluOp::Multiply: return a * b;
    case AluOp::Maximum: return std::fmax(a, b);
    case AluOp::Minimum: return std::fmin(a, b);
    case AluOp::Equal: return a == b ? 1.0f : 0.0f;
    case AluOp::NotEqual: return a != b ? 1.0f : 0.0f;
    case AluOp::Greater: return a > b ? 1.0f : 0.0f;
    case AluOp::GreaterEqual: return a >= b ? 1.0f : 0.0f;
    case AluOp::Less: return a < b ? 1.0f : 0.0f;
    case AluOp::LessEqual: return a <= b ? 1.0f : 0.0f;
    case AluOp::LogicalAnd: return (a != 0.0f && b != 0.0f) ? 1.0f : 0.0f;
    case AluOp::LogicalOr: return (a != 0.0f || b != 0.0f) ? 1.0f : 0.0f;
    case AluOp::LogicalXor: return ((a != 0.0f) != (b != 0.0f)) ? 1.0f : 0.0f;
    case AluOp::Power: return std::pow(a, b);
    case AluOp::AbsMax: return std::fmax(std::fabs(a), std::fabs(b));
    case AluOp::AbsMin: return std::fmin(std::fabs(a), std::fabs(b));
    case AluOp::Abs: return std::fabs(a);
    case AluOp::Square: return a * a;
    case AluOp::Relu: return a > 0.0f ? a : 0.0f;
    case AluOp::Rsqrt: return 1.0f / std::sqrt(a);
    case AluOp::Reciprocal: return 1.0f / a;
    default: break;
  }
  TESSEL_CHECK(false, "applyAlu: op {} is not an fp32 operator", aluOpName(op));
  return 0.0f;
}

int64_t applyAluInt(AluOp op, int64_t a, int64_t b, DType dtype) {
  const int widthBits = 8 * dtypeSizeBytes(dtype);
  const uint64_t mask = widthBits >= 64 ? ~0ull : (1ull << widthBits) - 1;
  int64_t result = 0;
  switch (op) {
    case AluOp::Invert: result = ~a; break;
    case AluOp::BitwiseAnd: result = a & b; break;
    case AluOp::BitwiseOr: result = a | b; break;
    case AluOp::BitwiseXor: result = a ^ b; break;
    case AluOp::LeftShift:
      result = (b < 0 || b >= widthBits) ? 0 : static_cast<int64_t>(static_cast<uint64_t>(a) << b);
      break;
    case AluOp::LogicalShiftRight:
      result = (b < 0 || b >= widthBits) ? 0 : static_cast<int64_t>((static_cast<uint64_t>(a) & mask) >> b);
      break;
    default: TESSEL_CHECK(false, "applyAluInt: op {} is not bitwise", aluOpName(op));
  }
  return wrapToDType(result, dtype);
}

void applyAluRun(AluOp op, const float *a, const float *bRow, float scalar, float *out, uint64_t count) {
  // Loops for the common ops so they vectorise; the rest go element by element.
  switch (op) {
    case AluOp::Add:
      if (bRow) for (uint64_t i = 0; i < count; ++i) out[i] = a[i] + bRow[i];
      else for (uint64_t i = 0; i < count; ++i) out[i] = a[i] + scalar;
      return;
    case AluOp::Subtract:
      if (bRow) for (uint64_t i = 0; i < count; ++i) out[i] = a[i] - bRow[i];
      else for (uint64_t i = 0; i < count; ++i) out[i] = a[i] - scalar;
      return;
    case AluOp::Multiply:
      if (bRow) for (uint64_t i = 0; i < count; ++i) out[i] = a[i] * bRow[i];
      else for (uint64_t i = 0; i < count; ++i) out[i] = a[i] * scalar;
      return;
    default:
      if (bRow) for (uint64_t i = 0; i < count; ++i) out[i] = applyAlu(op, a[i], bRow[i]);
      else for (uint64_t i = 0; i < count; ++i) out[i] = applyAlu(op, a[i], scalar);
      return;
  }
}

float applyActivation(ActFunc func, float x, float alpha) {
  switch (func) {
    case ActFunc::Copy: return x;
    case ActFunc::Square: return x * x;
    case ActFunc::Sigmoid: return sigmoid(x);
    case ActFunc::Relu: return x > 0.0f ? x : 0.0f;
    case ActFunc::Prelu: return x > 0.0f ? x : alpha * x;
    case ActFunc::Gelu: return 0.5f * x * (1.0f + std::erf(x * kSqrtHalf));
    case ActFunc::GeluDx:  // d/dx x*Phi(x) = Phi(x) + x*phi(x).
      return 0.5f * (1.0f + std::erf(x * kSqrtHalf)) + x * kInvSqrtTwoPi * std::exp(-0.5f * x * x);
    case ActFunc::GeluApprxTanh:
      return 0.5f * x * (1.0f + std::tanh(kSqrtTwoOverPi * (x + kGeluTanhCubic * x * x * x)));
    case ActFunc::GeluApprxSigmoid: return x * sigmoid(kGeluSigmoidScale * x);
    case ActFunc::GeluApprxSigmoidDx: {  // d/dx x*s(kx) = s(kx) + kx*s(kx)*(1-s(kx)).
      float s = sigmoid(kGeluSigmoidScale * x);
      return s + kGeluSigmoidScale * x * s * (1.0f - s);
    }
    case ActFunc::Silu: return x * sigmoid(x);
    case ActFunc::SiluDx: {  // d/dx x*s(x) = s(x) + x*s(x)*(1-s(x)).
      float s = sigmoid(x);
      return s + x * s * (1.0f - s);
    }
    case ActFunc::Tanh: return std::tanh(x);
    case ActFunc::Softplus: return softplus(x);
    case ActFunc::Mish: return x * std::tanh(softplus(x));
    case ActFunc::Erf: return std::erf(x);
    case ActFunc::ErfDx: return kTwoOverSqrtPi * std::exp(-x * x);
    case ActFunc::Exp: return std::exp(x);
    case ActFunc::Sign: return x > 0.0f ? 1.0f : x < 0.0f ? -1.0f : x;  // 0 -> 0 (keeps -0), NaN -> NaN.
    case ActFunc::Abs: return std::fabs(x);
    case ActFunc::Log: return std::log(x);
    case ActFunc::Sin: return std::sin(x);
    case ActFunc::Arctan: return std::atan(x);
    case ActFunc::Sqrt: return std::sqrt(x);
    case ActFunc::Rsqrt: return 1.0f / std::sqrt(x);
    case ActFunc::Reciprocal: return 1.0f / x;
    case ActFunc::None: break;
  }
  TESSEL_CHECK(false, "applyActivation: no function");
  return 0.0f;
}

}  // namespace tessel::nc::functional
