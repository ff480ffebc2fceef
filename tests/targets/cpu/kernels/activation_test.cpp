// The vectorized math of vector_math.h and the unary ops built on it, for every ISA variant the
// host can run (others are skipped): dense sweeps over each function's interesting range plus
// special values (0, denormals, huge, +-inf, NaN) against double precision, at ragged lengths so
// both the vector body and the scalar tail run. Also applyActivation, which the GEMM and conv
// epilogues call.
//
// Tolerance: relative 1e-6 for exp, log, erf, tanh, sigmoid and the activations on them (the
// functions' stated accuracy; a wrong polynomial term is off by far more); absolute 1e-30 where
// the result underflows.
#include "targets/cpu/kernels/activation.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "targets/cpu/kernels/elementwise.h"

namespace tessel::cpu {
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

double geluRef(double x) { return 0.5 * x * std::erfc(-x / std::sqrt(2.0)); }
double geluTanhRef(double x) {
  double u = std::sqrt(2.0 / M_PI) * (x + 0.044715 * x * x * x);
  return 0.5 * x * (1.0 + std::tanh(u));
}
double softplusRef(double x) { return x > 0 ? x + std::log1p(std::exp(-x)) : std::log1p(std::exp(x)); }

struct UnaryCase {
  UnaryOp op;
  const char *name;
  double (*ref)(double);
  float lo, hi;      // The sweep.
  double tolerance;  // Relative.
  double absolute = 1e-30;
  bool conditionX2 = false;  // Relative bound scaled by (1 + x^2).
};

const UnaryCase kCases[] = {
    {UnaryOp::Exp, "Exp", [](double x) { return std::exp(x); }, -110.0f, 90.0f, 3e-7},
    {UnaryOp::Log, "Log", [](double x) { return std::log(x); }, 1e-30f, 1e6f, 3e-7},
    {UnaryOp::Erf, "Erf", [](double x) { return std::erf(x); }, -6.0f, 6.0f, 1e-6},
    {UnaryOp::Tanh, "Tanh", [](double x) { return std::tanh(x); }, -12.0f, 12.0f, 1e-6},
    {UnaryOp::Sigmoid, "Sigmoid", [](double x) { return 1.0 / (1.0 + std::exp(-x)); }, -90.0f, 30.0f, 1e-6},
    {UnaryOp::Silu, "Silu", [](double x) { return x / (1.0 + std::exp(-x)); }, -80.0f, 30.0f, 1e-6},
    // In the negative tail GELU's condition number grows like x^2 (the input's own rounding is
    // multiplied by it), so the bound there is 1e-6 (1 + x^2); below 1e-15 the double tanh form
    // of the reference underflows to 0.
    {UnaryOp::Gelu, "Gelu", geluRef, -12.0f, 12.0f, 1e-6, 1e-15, true},
    {UnaryOp::GeluTanh, "GeluTanh", geluTanhRef, -12.0f, 12.0f, 1e-6, 1e-15, true},
    {UnaryOp::Softplus, "Softplus", softplusRef, -80.0f, 80.0f, 1e-6},
    {UnaryOp::Sqrt, "Sqrt", [](double x) { return std::sqrt(x); }, 0.0f, 1e4f, 1e-7},
    {UnaryOp::Reciprocal, "Reciprocal", [](double x) { return 1.0 / x; }, 0.01f, 100.0f, 1e-7},
    {UnaryOp::HardSwish, "HardSwish", [](double x) { return x * std::clamp(x / 6.0 + 0.5, 0.0, 1.0); }, -8.0f, 8.0f,
     1e-6, 1e-7},  // x/6 + 1/2 rounds, so near x = -3 only an absolute bound holds.
};

/// A sweep of `count` points over [lo, hi], with dense coverage near 0 for ranges that cross it.
std::vector<float> sweep(float lo, float hi, int64_t count) {
  std::vector<float> x;
  for (int64_t i = 0; i < count; ++i) x.push_back(lo + (hi - lo) * float(i) / float(count - 1));
  if (lo < 0 && hi > 0) {
    for (float v = 1e-6f; v < 2.0f; v *= 1.07f) {
      x.push_back(v);
      x.push_back(-v);
    }
  }
  return x;
}

/// Checks |got - want| <= tolerance |want| + absolute; a want beyond the float range must be inf.
/// Returns whether it passed.
bool expectClose(double want, float got, double tolerance, const std::string &what, double absolute = 1e-30) {
  if (std::isnan(want)) {
    EXPECT_TRUE(std::isnan(got)) << what << ": got " << got;
    return std::isnan(got);
  }
  if (std::isinf(float(want))) {
    EXPECT_EQ(got, float(want)) << what;
    return got == float(want);
  }
  const bool close = std::fabs(double(got) - want) <= tolerance * std::fabs(want) + absolute;
  EXPECT_TRUE(close) << what << ": got " << got << ", want " << want;
  return close;
}

TEST(VectorMath, UnaryOpsMatchDoublePrecision) {
  for (const ElementwiseKernels *kernels : elementwiseKernelVariants()) {
    if (!hasAll(hostIsa(), kernels->isa)) continue;
    for (const UnaryCase &c : kCases) {
      std::vector<float> x = sweep(c.lo, c.hi, 20011);
      std::vector<float> y(x.size());
      kernels->unary(c.op, {}, x.data(), y.data(), int64_t(x.size()));
      int failures = 0;
      for (size_t i = 0; i < x.size() && failures < 5; ++i) {
        const double tolerance = c.conditionX2 ? c.tolerance * (1.0 + double(x[i]) * x[i]) : c.tolerance;
        if (!expectClose(c.ref(double(x[i])), y[i], tolerance,
                         std::string(kernels->name) + " " + c.name + "(" + std::to_string(x[i]) + ")", c.absolute)) {
          ++failures;
        }
      }
    }
  }
}

TEST(VectorMath, SpecialValues) {
  const std::vector<float> special = {0.0f,    -0.0f,   1e-40f, -1e-40f, 1e-20f, -1e-20f, 88.5f, 88.8f, -87.5f,
                                      -103.0f, -104.5f, 1e20f,  -1e20f,  3e38f,  -3e38f,  kInf,  -kInf, kNaN};
  for (const ElementwiseKernels *kernels : elementwiseKernelVariants()) {
    if (!hasAll(hostIsa(), kernels->isa)) continue;
    for (const UnaryCase &c : kCases) {
      std::vector<float> y(special.size());
      kernels->unary(c.op, {}, special.data(), y.data(), int64_t(special.size()));
      for (size_t i = 0; i < special.size(); ++i) {
        const double want = c.ref(double(special[i]));
        // Denormal results are exact only to the denormal spacing.
        const double tolerance = std::fabs(want) < 1.2e-38 ? 1.0 : c.tolerance;
        expectClose(want, y[i], tolerance,
                    std::string(kernels->name) + " " + c.name + "(" + std::to_string(special[i]) + ")", c.absolute);
      }
    }
  }
}

TEST(VectorMath, InPlaceAndRaggedLengths) {
  for (const ElementwiseKernels *kernels : elementwiseKernelVariants()) {
    if (!hasAll(hostIsa(), kernels->isa)) continue;
    for (int64_t n : {0, 1, 7, 15, 16, 17, 31, 33, 100}) {
      std::vector<float> x(size_t(n) + 1, 123.0f);  // The extra element must not be touched.
      for (int64_t i = 0; i < n; ++i) x[size_t(i)] = float(i) * 0.1f - 3.0f;
      kernels->unary(UnaryOp::Tanh, {}, x.data(), x.data(), n);
      for (int64_t i = 0; i < n; ++i) {
        expectClose(std::tanh(double(float(i) * 0.1f - 3.0f)), x[size_t(i)], 1e-6, kernels->name);
      }
      EXPECT_EQ(x[size_t(n)], 123.0f) << kernels->name << " wrote past n = " << n;
    }
  }
}

TEST(VectorMath, ParameterizedOps) {
  // Ties (-2.5, 0.5, 1.5, 2.5) round to even; -0.25 rounds to -0.
  const std::vector<float> x = {-3.0f, -2.5f, -1.0f, -0.25f, 0.0f, 0.3f, 0.5f, 1.0f, 1.5f, 2.5f, 7.0f, -0.0f, 1e9f};
  struct Param {
    UnaryOp op;
    UnaryParams params;
    double (*ref)(double, double, double);
  };
  const Param params[] = {
      {UnaryOp::Clip, {-0.5f, 2.0f}, [](double v, double a, double b) { return std::min(std::max(v, a), b); }},
      {UnaryOp::LeakyRelu, {0.1f, 0}, [](double v, double a, double) { return v < 0 ? a * v : v; }},
      {UnaryOp::HardSigmoid,
       {0.2f, 0.5f},
       [](double v, double a, double b) { return std::clamp(a * v + b, 0.0, 1.0); }},
      {UnaryOp::Relu, {}, [](double v, double, double) { return std::max(v, 0.0); }},
      {UnaryOp::Neg, {}, [](double v, double, double) { return -v; }},
      {UnaryOp::Abs, {}, [](double v, double, double) { return std::fabs(v); }},
      {UnaryOp::Square, {}, [](double v, double, double) { return v * v; }},
      {UnaryOp::Cube, {}, [](double v, double, double) { return v * v * v; }},
      {UnaryOp::Identity, {}, [](double v, double, double) { return v; }},
      {UnaryOp::Round, {}, [](double v, double, double) { return std::nearbyint(v); }},
      {UnaryOp::Floor, {}, [](double v, double, double) { return std::floor(v); }},
      {UnaryOp::Ceil, {}, [](double v, double, double) { return std::ceil(v); }},
  };
  for (const ElementwiseKernels *kernels : elementwiseKernelVariants()) {
    if (!hasAll(hostIsa(), kernels->isa)) continue;
    for (const Param &p : params) {
      std::vector<float> y(x.size());
      kernels->unary(p.op, p.params, x.data(), y.data(), int64_t(x.size()));
      for (size_t i = 0; i < x.size(); ++i) {
        expectClose(p.ref(x[i], p.params.alpha, p.params.beta), y[i], 1e-6,
                    std::string(kernels->name) + " op " + std::to_string(int(p.op)));
      }
    }
  }
}

TEST(Activation, ParseAndApply) {
  const float clipParams[] = {-1.0f, 1.0f};
  auto clip = parseActivation("Clip", std::span<const float>(clipParams, 2));
  ASSERT_TRUE(clip.ok());
  EXPECT_FALSE(parseActivation("Clip", std::span<const float>(clipParams, 1)).ok());
  EXPECT_FALSE(parseActivation("Swish2", {}).ok());

  std::vector<float> x(1001);
  for (size_t i = 0; i < x.size(); ++i) x[i] = float(i) * 0.01f - 5.0f;
  std::vector<float> y = x;
  applyActivation(*clip, y.data(), int64_t(y.size()));
  for (size_t i = 0; i < x.size(); ++i) EXPECT_EQ(y[i], std::min(std::max(x[i], -1.0f), 1.0f));

  auto gelu = parseActivation("Gelu", {});
  ASSERT_TRUE(gelu.ok());
  y = x;
  applyActivation(*gelu, y.data(), int64_t(y.size()));
  for (size_t i = 0; i < x.size(); ++i) expectClose(geluRef(x[i]), y[i], 2e-6, "gelu");

  const float hardSigmoidParams[] = {0.25f, 0.4f};
  auto hardSigmoid = parseActivation("HardSigmoid", std::span<const float>(hardSigmoidParams, 2));
  ASSERT_TRUE(hardSigmoid.ok());
  EXPECT_FALSE(parseActivation("HardSigmoid", std::span<const float>(hardSigmoidParams, 1)).ok());
  y = x;
  applyActivation(*hardSigmoid, y.data(), int64_t(y.size()));
  // Absolute slack where the affine term cancels to about zero in float.
  for (size_t i = 0; i < x.size(); ++i) {
    expectClose(std::clamp(0.25 * x[i] + 0.4, 0.0, 1.0), y[i], 1e-6, "hardsigmoid", /*absolute=*/5e-7);
  }

  auto hardSwish = parseActivation("HardSwish", {});
  ASSERT_TRUE(hardSwish.ok());
  y = x;
  applyActivation(*hardSwish, y.data(), int64_t(y.size()));
  for (size_t i = 0; i < x.size(); ++i) {
    expectClose(x[i] * std::clamp(x[i] / 6.0 + 0.5, 0.0, 1.0), y[i], 1e-6, "hardswish", /*absolute=*/5e-7);
  }

  auto none = parseActivation("", {});
  ASSERT_TRUE(none.ok());
  y = x;
  applyActivation(*none, y.data(), int64_t(y.size()));
  EXPECT_EQ(y, x);
}

}  // namespace
}  // namespace tessel::cpu
