// The library kernel "matmul" (kernel.h): a thin adapter that declares the HBM operands and hands them to the family's
// plan and emit (plan.h, emit.h) with every operand in HBM, row-major, plus the tutorial variants (tutorial.h) and the
// reference.
//
// With every operand in HBM the plan keeps an m-block's a_t stripe resident while b streams in chunks, so a_t is read
// once, b once per m-block and c written once: 0.7 GB for 4096x8192x8192 bf16, well under what the DMA engines move
// while PE does its 5.99 ms of work.
#include "targets/nc/kernels/matmul/kernel.h"

#include <string>
#include <vector>

#include <fmt/format.h>

#include "targets/nc/kernels/matmul/emit.h"
#include "targets/nc/kernels/matmul/plan.h"
#include "targets/nc/kernels/matmul/tutorial.h"
#include "targets/nc/kernels/reference.h"

namespace tessel::nc::kernels {
namespace {

/// The family's own form; the tutorial's forms are tutorial.h.
constexpr const char *kBlockedVariant = "blocked";

/// The epilogue of option act=none|relu|gelu|silu.
Expected<Epilogue> parseActivation(const std::string &text) {
  if (text.empty() || text == "none") return Epilogue{};
  if (text == "relu") return Epilogue{"Relu", {}};
  if (text == "gelu") return Epilogue{"Gelu", {}};
  if (text == "silu") return Epilogue{"Silu", {}};
  return makeError(ErrorCode::InvalidArgument, "kernel 'matmul': option act={} is not one of none, relu, gelu, silu",
                   text);
}

/// A 0/1 option; `fallback` when not given.
Expected<bool> parseFlag(const KernelParams &params, const std::string &name, bool fallback) {
  const std::string text = params.option(name);
  if (text.empty()) return fallback;
  if (text == "0" || text == "1") return text == "1";
  return makeError(ErrorCode::InvalidArgument, "kernel 'matmul': option {}={} is not 0 or 1", name, text);
}

DType outputDtype(DType input) { return input == DType::F32 ? DType::F32 : DType::BF16; }
DType biasDtype(DType input) { return input == DType::F32 ? DType::F32 : DType::BF16; }

Status buildMatmul(tile::KernelBuilder &b, const KernelParams &params) {
  if (!params.variant.empty() && params.variant != kBlockedVariant) return buildMatmulTutorial(b, params);
  MatmulProblem problem;
  problem.M = params.dim("M"), problem.N = params.dim("N"), problem.K = params.dim("K");
  problem.dtype = params.dtype;
  problem.outputDtype = outputDtype(params.dtype);
  TESSEL_ASSIGN_OR_RETURN(problem.columnBias, parseFlag(params, "bias", false));
  TESSEL_ASSIGN_OR_RETURN(problem.allowStripe, parseFlag(params, "stripe", true));
  MatmulOperands operands;
  TESSEL_ASSIGN_OR_RETURN(operands.epilogue, parseActivation(params.option("act")));
  operands.stationary = b.input("a_t", problem.dtype, {problem.K, problem.M});
  operands.moving = b.input("b", problem.dtype, {problem.K, problem.N});
  if (problem.columnBias) operands.columnBias = b.input("bias", biasDtype(problem.dtype), {problem.N});
  operands.output = b.output("c", problem.outputDtype, {problem.M, problem.N});
  emitMatmul(b, planMatmul(b.profile(), problem), operands);
  return Status::success();
}

/// The reference's text IR for activation `act` of `x`, defining %c.
std::string activationIr(const std::string &act, const std::string &x) {
  if (act == "Relu") return fmt::format("  %c = Relu({})\n", x);
  if (act == "Silu") return fmt::format("  %sig = Sigmoid({0})\n  %c = Mul({0}, %sig)\n", x);
  if (act == "Gelu")
    // Gelu (exact): 0.5 * x * (1 + erf(x / sqrt(2))); opset 17 has no Gelu op.
    return fmt::format(
        "  const %inv_sqrt2 = dense<f32[]: 0.70710678118654752>\n"
        "  const %one = dense<f32[]: 1>\n"
        "  const %half = dense<f32[]: 0.5>\n"
        "  %scaled = Mul({0}, %inv_sqrt2)\n"
        "  %erf = Erf(%scaled)\n"
        "  %erf1 = Add(%erf, %one)\n"
        "  %xe = Mul({0}, %erf1)\n"
        "  %c = Mul(%xe, %half)\n",
        x);
  return fmt::format("  %c = Identity({})\n", x);
}

Expected<std::vector<HostTensor>> referenceMatmul(const KernelParams &params, const std::vector<HostTensor> &inputs) {
  TESSEL_ASSIGN_OR_RETURN(bool hasBias, parseFlag(params, "bias", false));
  TESSEL_ASSIGN_OR_RETURN(Epilogue epilogue, parseActivation(params.option("act")));
  std::string body = "  %a = Transpose(%a_t) {perm = [1, 0]}\n  %mm = MatMul(%a, %b)\n";
  std::string x = "%mm";
  if (hasBias) {
    body += "  %biased = Add(%mm, %bias)\n";
    x = "%biased";
  }
  body += activationIr(epilogue.activation, x);
  return runReference(irModel(inputs, body, "%c"), inputs);
}

// Inputs are exact in their dtype and PE accumulates in fp32, so the error is the fp32 summation order plus one
// rounding of the output (bf16 for bf16/fp8 inputs: 2^-9 relative) and the ACT function approximation.
double matmulAbsTolerance(DType dtype) {
  switch (dtype) {
    case DType::F32: return 1e-3;
    case DType::BF16: return 2e-2;
    default: return 5e-2;
  }
}
double matmulRelTolerance(DType dtype) { return matmulAbsTolerance(dtype); }

double matmulFlops(const KernelParams &params) {
  return 2.0 * static_cast<double>(params.dim("M")) * static_cast<double>(params.dim("N")) *
         static_cast<double>(params.dim("K"));
}

std::vector<std::string> matmulVariants() {
  std::vector<std::string> variants = {kBlockedVariant};
  for (const std::string &variant : matmulTutorialVariants()) variants.push_back(variant);
  return variants;
}

}  // namespace

std::vector<KernelDef> matmulKernels() {
  return {KernelDef{"matmul",
                    "c[M, N] = a_t[K, M]^T @ b[K, N] (+ bias[N], "
                    "act=none|relu|gelu|silu); blocked, fp32 PSUM "
                    "accumulation over K",
                    {"M", "N", "K"},
                    {{"M", 512}, {"N", 512}, {"K", 512}},
                    {DType::BF16, DType::F8E4M3, DType::F32},
                    buildMatmul,
                    referenceMatmul,
                    matmulAbsTolerance,
                    matmulRelTolerance,
                    matmulFlops,
                    matmulVariants()}};
}

}  // namespace tessel::nc::kernels
