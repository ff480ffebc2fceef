// The cpu lowering table, built from ops/cpu_ops.def.
#include <algorithm>

#include "targets/cpu/kernels/gemm.h"
#include "targets/cpu/step.h"

namespace tessel::cpu {

#define CPU_OP(op, domain, fn) Expected<std::unique_ptr<Step>> fn(LowerContext &ctx);
#include "targets/cpu/ops/cpu_ops.def"
#undef CPU_OP

namespace {

struct LoweringRow {
  std::string_view domain;
  std::string_view opType;
  LowerFn lower;
};

constexpr LoweringRow kLowerings[] = {
#define CPU_OP(op, domain, fn) {domain, #op, &fn},
#include "targets/cpu/ops/cpu_ops.def"
#undef CPU_OP
    {"", "", nullptr},  // Keeps the table non-empty while families are added.
};

}  // namespace

LowerFn findLowering(std::string_view domain, std::string_view opType) {
  if (domain == "ai.onnx") domain = "";
  for (const LoweringRow &row : kLowerings) {
    if (row.lower && row.domain == domain && row.opType == opType) return row.lower;
  }
  return nullptr;
}

namespace {

// Why an op runs on the reference kernel; reference_ops.def gives each such op one of these.
constexpr std::string_view kRefNoKernel =
    "no cpu kernel yet (not on the hot path of the models measured); the reference kernel runs it";
constexpr std::string_view kRefIntegerResult =
    "an integer or bool computation, index-sized in the models measured; the reference kernel runs it";
constexpr std::string_view kRefShapeComputation =
    "a constant or shape computation: folded at compile time when its inputs are constant, else the "
    "reference kernel runs it";
constexpr std::string_view kRefSequence = "sequences and optionals are lists the reference kernels keep";
constexpr std::string_view kRefString = "string tensors run on the reference kernel";
constexpr std::string_view kRefRandom = "a random generator: the reference kernel's stream is the one defined";
constexpr std::string_view kRefTraining = "a training-update op; the reference kernel runs it";
constexpr std::string_view kRefFoldedByPasses =
    "folded into its neighbouring convolution or matmul by the graph passes; one with no such "
    "neighbour runs on the reference kernel";
constexpr std::string_view kRefAcceleratorForm =
    "made only by the accelerator's passes (the cpu runs the op it replaces on its own kernels); an "
    "accelerator's host stage runs the reference kernel";
constexpr std::string_view kRefDataDependentShape =
    "its output shape depends on the data; the reference kernel runs it";

constexpr OpReason kReferenceOps[] = {
#define CPU_REFERENCE(op, domain, reason) {domain, #op, reason},
#include "targets/cpu/ops/reference_ops.def"
#undef CPU_REFERENCE
};

}  // namespace

std::span<const OpReason> referenceOps() { return kReferenceOps; }

std::string_view referenceReason(std::string_view domain, std::string_view opType) {
  return findOpReason(kReferenceOps, domain, opType);
}

std::vector<int64_t> LowerContext::staticSizes(const Value &value) {
  auto sizes = value.type().shape().sizes();
  TESSEL_CHECK(value.type().isTensor() && sizes.has_value(), "value '{}' has no static shape at lowering",
               value.name());
  return *sizes;
}

const GemmKernel &LowerContext::gemmKernel(int64_t rows, const std::function<bool(const GemmKernel &)> &fits) {
  if (products_ != GemmOperands::F32) {
    offeredCast_ = true;
    if (const GemmKernel *cast = selectedGemmKernel(products_);
        cast != nullptr && (!fits || fits(*cast)) && (castEverywhere_ || rows <= cast->mr)) {
      castProducts_ = true;
      return *cast;
    }
  }
  return selectedGemmKernel();
}

}  // namespace tessel::cpu
